"""The verdict engine of every study (``tagrpo.experiments.judge``) on hand-made cells, against values worked out by
hand: the subsets, the sweep's objective and choices, how cells are filed, the paired values, the verdicts (Holm,
``matches`` at -margin, TOST, the cost change by Welch) and issue 32's goal. Nothing is trained."""

from __future__ import annotations

import math
import random

import pytest

from tagrpo.demo.report import label
from tagrpo.experiments import judge, tables
from tagrpo.experiments.declarations import capacity, embedded_v2
from tagrpo.experiments.study import Contrast, Fixed, Goal, Study, Sweep

T975_2 = 4.302653  # Student t, 97.5% quantile, 2 degrees of freedom


def _p2(t: float) -> float:
    """Two-sided p of a t statistic with 2 degrees of freedom, in closed form: 1 - t / sqrt(t^2 + 2)."""
    return 1 - abs(t) / math.sqrt(t * t + 2)


def _study(**changes) -> Study:
    """A small study at one setting (0.6) with TA-GRPO and equal-sampling GRPO; ``changes`` replace its fields."""
    fields = dict(name="hand", title="by hand", task="regime", script="s.py", outputs="hand", settings=(0.6,),
                  arms={}, primary_arms=("ta_grpo", "equal_sampling"), exploratory_arms=(), seeds=(0, 1, 2),
                  exploratory_seeds=(), sweep=Sweep(rates=(1e-5, 1e-4), seeds=(100, 101), samples=4), primary=())
    return Study(**{**fields, **changes})


def _cell(arm, setting, seed, counts, samples=1, lr=1e-5, kind="arm", split="test"):
    spec = {"kind": kind, "knob": setting, "seed": seed, "split": split}
    if kind == "arm":
        spec.update(arm=arm, learning_rate=lr)
    return {"spec": spec, "counts": list(counts), "samples": samples}


def _world(pass1: dict[str, list[float]], setting=0.6):
    """``(runs, bases)``: one question drawn 1000 times, so a cell's pass@1 is its count / 1000; ``pass1`` gives
    each arm's per seed. The base solves it half the time: it is never hard."""
    n = len(next(iter(pass1.values())))
    bases = {(setting, s): _cell(None, setting, s, [500], 1000, kind="base") for s in range(n)}
    runs = {(setting, s, arm): _cell(arm, setting, s, [round(1000 * v)], 1000)
            for arm, values in pass1.items() for s, v in enumerate(values)}
    return runs, bases


def test_subset_pass_by_hand():
    # base: question 0 never solved (hard), questions 1 and 2 solved at least once (the rest)
    counts, base = [0, 2, 4], [0, 1, 3]
    assert judge.hard_mask(base).tolist() == [True, False, False]
    assert judge.subset_pass(counts, 4, base, "all", 1) == pytest.approx((0 + 0.5 + 1) / 3)
    assert judge.subset_pass(counts, 4, base, "hard", 1) == 0.0
    assert judge.subset_pass(counts, 4, base, "rest", 1) == pytest.approx(0.75)
    # pass@2 of 2 right in 4: 1 - C(2,2)/C(4,2) = 5/6; of 4 in 4: 1
    assert judge.subset_pass(counts, 4, base, "rest", 2) == pytest.approx((5 / 6 + 1) / 2)
    assert math.isnan(judge.subset_pass(counts, 4, [1, 1, 1], "hard", 1))  # no hard question
    assert math.isnan(judge.subset_pass(counts, 4, [0, 0, 0], "rest", 1))  # no other question


def test_all_is_the_question_weighted_mix_of_hard_and_rest():
    rng = random.Random(0)
    for _ in range(20):
        q = rng.randint(2, 12)
        base = [rng.choice((0, 0, 1, 3)) for _ in range(q)]
        counts = [rng.randint(0, 8) for _ in range(q)]
        hard = sum(b == 0 for b in base)
        for k in (1, 3, 8):
            parts = [(m, judge.subset_pass(counts, 8, base, s, k)) for m, s in ((hard, "hard"), (q - hard, "rest"))]
            mixed = sum(m * v for m, v in parts if m) / q
            assert judge.subset_pass(counts, 8, base, "all", k) == pytest.approx(mixed)


def test_an_unknown_subset_lists_the_valid_ones():
    with pytest.raises(ValueError, match="'all', 'hard', 'rest'"):
        judge.subset_pass([0], 1, [0], "easy", 1)
    with pytest.raises(ValueError, match="'all', 'hard', 'rest'"):
        Contrast("ta_grpo", "equal_sampling", subset="easy")
    with pytest.raises(ValueError, match="'greater', 'less', 'matches'"):
        Contrast("ta_grpo", "equal_sampling", kind="better")


def test_the_objective_is_pass1_plus_pass_at_the_cells_own_samples():
    cell = {"pass_at_k": {"1": 0.1, "4": 0.3, "16": 0.5, "64": 0.9}, "samples": 16}
    assert judge.objective(cell) == pytest.approx(0.6)
    assert judge.objective({**cell, "samples": 64}) == pytest.approx(1.0)


def test_sweep_rows_name_the_base_and_leave_the_premise_out():
    arm = {**_cell("ta_grpo", 0.6, 100, [1], lr=3e-5), "pass_at_k": {"1": 0.25, "4": 0.5}, "samples": 4,
           "cell_wall_s": 7.0}
    base = {**_cell(None, 0.6, 100, [1], kind="base"), "pass_at_k": {"1": 0.1, "4": 0.2}, "samples": 4,
            "cell_wall_s": 2.0}
    premise = {"spec": {"kind": "premise", "seed": 0}, "accuracy": {}, "cell_wall_s": 1.0}
    rows = judge.sweep_rows([arm, base, premise])
    assert rows == [
        {"arm": "ta_grpo", "knob": 0.6, "learning_rate": 3e-5, "seed": 100, "objective": 0.75, "pass1": 0.25,
         "cell_wall_s": 7.0},
        {"arm": "base", "knob": 0.6, "learning_rate": 0.0, "seed": 100, "objective": pytest.approx(0.3), "pass1": 0.1,
         "cell_wall_s": 2.0}]


def _row(arm, knob, lr, seed, objective):
    return {"arm": arm, "knob": knob, "learning_rate": lr, "seed": seed, "objective": objective}


def test_choose_averages_seeds_per_setting_and_breaks_ties_to_the_smaller_rate():
    rows = [
        _row("a", 0.6, 1e-4, 0, 0.3), _row("a", 0.6, 1e-4, 1, 0.5),  # mean 0.40
        _row("a", 0.6, 3e-4, 0, 0.6), _row("a", 0.6, 3e-4, 1, 0.1),  # mean 0.35: the best single seed, not the best
        _row("b", 0.6, 1e-3, 0, 0.2), _row("b", 0.6, 1e-4, 0, 0.2),  # a tie: the smaller rate
        _row("a", 0.9, 3e-4, 0, 0.1), _row("a", 0.9, 1e-4, 0, 0.0),  # another setting, its own choice
        _row("base", 0.6, 0.0, 0, 9.9),  # the base is never chosen
    ]
    assert judge.choose(_study(), rows) == {0.6: {"a": 1e-4, "b": 1e-4}, 0.9: {"a": 3e-4}}
    shuffled = rows[:]
    random.Random(1).shuffle(shuffled)
    assert judge.choose(_study(), shuffled) == judge.choose(_study(), rows)  # the rows' order changes nothing


def test_choose_takes_the_option_with_the_better_objective_at_its_own_best_rate():
    study = embedded_v2.STUDY
    rows = [
        _row("ta_grpo", 0.6, 1e-5, 100, 0.5), _row("ta_grpo", 0.6, 1e-5, 101, 0.7),  # mean 0.6
        _row("ta_grpo", 0.6, 1e-4, 100, 0.9), _row("ta_grpo", 0.6, 1e-4, 101, 0.5),  # mean 0.7: chosen
        _row("ta_grpo", 0.0, 1e-5, 100, 0.8), _row("ta_grpo", 0.0, 3e-5, 100, 0.8),  # a tie: the smaller rate
        _row("ta_grpo_w25", 0.6, 3e-5, 100, 0.65), _row("ta_grpo_w50", 0.6, 1e-5, 100, 0.75),
        _row("ta_grpo_w50", 0.6, 1e-4, 100, 0.2),
        _row("ta_grpo_w25", 0.9, 1e-4, 100, 0.4), _row("ta_grpo_w50", 0.9, 3e-5, 100, 0.4),  # a tie: the later name
    ]
    rates = judge.choose(study, rows)
    assert rates[0.6]["ta_grpo"] == 1e-4 and rates[0.0]["ta_grpo"] == 1e-5
    assert rates[0.6]["weighted_arm"] == "ta_grpo_w50" and rates[0.6]["weighted"] == 1e-5
    assert rates[0.9]["weighted_arm"] == "ta_grpo_w50" and rates[0.9]["weighted"] == 3e-5
    assert "weighted" not in rates[0.0] and "weighted_arm" not in rates[0.0]  # no option swept there


def test_index_files_fixed_rates_as_arm_at_rate_and_the_chosen_option_under_its_choice():
    study = embedded_v2.STUDY
    pilot = study.fixed[0]
    cells = [_cell(pilot.arm, 0.6, 0, [0, right], lr=lr) for lr, right in zip(pilot.rates, (1, 3), strict=True)]
    cells += [_cell("ta_grpo", 0.6, 0, [2, 2]), _cell("ta_grpo_w50", 0.6, 0, [4, 4]),
              _cell("ta_grpo_w25", 0.6, 0, [3, 3]), _cell("ta_grpo_w25", 0.9, 0, [1, 1]),
              _cell(None, 0.6, 0, [1, 1], kind="base"), {"spec": {"kind": "premise", "seed": 0}}]
    rates = {0.6: {"weighted": 1e-5, "weighted_arm": "ta_grpo_w50"}, 0.9: {"weighted": 1e-5,
                                                                           "weighted_arm": "ta_grpo_w25"}}
    runs, bases = judge.index(study, cells, rates)
    assert {key: c["counts"] for key, c in runs.items()} == {
        (0.6, 0, "ta_grpo_variant@3e-05"): [0, 1], (0.6, 0, "ta_grpo_variant@0.0001"): [0, 3],
        (0.6, 0, "ta_grpo"): [2, 2], (0.6, 0, "ta_grpo_w50"): [4, 4], (0.6, 0, "ta_grpo_w25"): [3, 3],
        (0.9, 0, "ta_grpo_w25"): [1, 1], (0.6, 0, "weighted"): [4, 4], (0.9, 0, "weighted"): [1, 1]}
    assert runs[(0.6, 0, "weighted")] is runs[(0.6, 0, "ta_grpo_w50")]  # one cell, filed twice
    assert list(bases) == [(0.6, 0)]
    assert cells[0]["spec"]["arm"] == pilot.arm  # the cells themselves keep their arm
    assert label("ta_grpo_variant@3e-05") == "TA-GRPO, per-variant groups at 3e-05"  # two arms in the report
    assert set(study.all_arms()) >= {pilot.name(r) for r in pilot.rates} == {
        "ta_grpo_variant@3e-05", "ta_grpo_variant@0.0001"}
    runs, _ = judge.index(study, cells)  # no choices yet: nothing under the choice's name
    assert not [a for _, _, a in runs if a == "weighted"]
    other = _study(fixed=(Fixed("ta_grpo", (1e-5,), (0.6,), (0,)),))  # an arm is fixed only where declared so
    assert (0.6, 0, "ta_grpo@1e-05") in judge.index(other, cells)[0]


def test_paired_skips_seeds_missing_a_side_and_subsets_without_questions():
    runs, bases = _world({"ta_grpo": [0.6, 0.7, 0.8, 0.9], "equal_sampling": [0.5, 0.5, 0.5, 0.5]})
    c = Contrast("ta_grpo", "equal_sampling", 1, "all", 0.6)
    assert judge.paired(runs, bases, c, 1) == pytest.approx([0.1, 0.2, 0.3, 0.4])
    del runs[(0.6, 1, "equal_sampling")]  # seed 1 lost its reference
    del bases[(0.6, 2)]  # seed 2 its base (the subsets are the base's)
    assert judge.paired(runs, bases, c, 1) == pytest.approx([0.1, 0.4])
    assert judge.paired(runs, bases, Contrast("ta_grpo", "base", 1, "all", 0.6), 1) == pytest.approx([0.1, 0.2, 0.4])
    assert judge.paired(runs, bases, Contrast("ta_grpo", "equal_sampling", 1, "hard", 0.6), 1) == []  # none hard
    assert judge.paired(runs, bases, Contrast("ta_grpo", "equal_sampling", 1, "all", 0.9), 1) == []


def _v1_cells(diffs: list[int], setting=0.6):
    """Three seeds, ten questions, one sample each: pass@1 is the share of 1s. Question 0 is hard (the base gets it
    wrong); TA-GRPO solves it in every seed, equal-sampling never; on all questions TA-GRPO is ahead of
    equal-sampling by ``diffs[s]`` questions."""
    bases = {(setting, s): _cell(None, setting, s, [0] + [1] * 9, kind="base") for s in range(len(diffs))}
    runs = {}
    for s, d in enumerate(diffs):
        runs[(setting, s, "ta_grpo")] = _cell("ta_grpo", setting, s, [1] + [1] * 5 + [0] * 4)
        runs[(setting, s, "equal_sampling")] = _cell("equal_sampling", setting, s, [0] + [1] * (6 - d) + [0] * (3 + d))
    return runs, bases


def test_verdicts_pair_seeds_and_holm_correct_the_primary_family_only():
    runs, bases = _v1_cells([1, 2, 3])
    study = _study(primary=(Contrast("ta_grpo", "equal_sampling", 1, "all", 0.6),
                            Contrast("ta_grpo", "equal_sampling", 1, "hard", 0.6)),
                   exploratory=(Contrast("ta_grpo", "base", 1, "hard", 0.6),))
    overall, hard, vs_base = judge.verdicts(study, runs, bases, 10)
    # overall: ta 6/10 each seed; es (6-d)/10 with d = 1, 2, 3 -> differences 0.1, 0.2, 0.3
    assert overall["values"] == pytest.approx([0.1, 0.2, 0.3]) and overall["n"] == 3
    assert overall["mean"] == pytest.approx(0.2)
    # t = 0.2 / (0.1 / sqrt 3) = sqrt 12, 2 df: p = 1 - sqrt(12 / 14) = 0.0742; half-width t_.975(2) x 0.1 / sqrt 3
    assert overall["p"] == pytest.approx(_p2(math.sqrt(12))) and overall["p"] == pytest.approx(0.07418, abs=1e-5)
    assert overall["hi"] - overall["mean"] == pytest.approx(T975_2 * 0.1 / math.sqrt(3))
    # hard: 1 - 0 in every seed, no spread: p = 0; Holm over two: 2 x 0 = 0, then max(0, 1 x 0.0742)
    assert hard["values"] == [1.0, 1.0, 1.0] and hard["p"] == 0.0 and hard["p_holm"] == 0.0
    assert overall["p_holm"] == pytest.approx(overall["p"])
    assert overall["verdict"] == "inconclusive" and hard["verdict"] == "reproduced"
    assert (overall["family"], hard["family"], vs_base["family"]) == ("primary", "primary", "exploratory")
    assert "p_holm" not in vs_base and vs_base["values"] == [1.0, 1.0, 1.0] and vs_base["verdict"] == "reproduced"
    assert (overall["k"], overall["knob"], overall["versus"]) == (1, 0.6, None)


def test_kmax_resolves_to_the_studys_largest_k():
    runs, bases = _v1_cells([1, 2, 3])
    study = _study(primary=(Contrast("ta_grpo", "equal_sampling", 0, "all", 0.6),))
    (row,) = judge.verdicts(study, runs, bases, 1)
    assert row["k"] == 1 and row["mean"] == pytest.approx(0.2)
    assert study.primary[0].key(64) == (0.6, "ta_grpo", "equal_sampling", "all", 64, None)


def test_holm_doubles_the_smaller_of_two_p_values():
    runs, bases = _v1_cells([1, 2, 3])
    more, more_bases = _v1_cells([1, 1, 2], setting=0.9)
    runs.update(more)
    bases.update(more_bases)
    study = _study(settings=(0.6, 0.9), primary=tuple(Contrast("ta_grpo", "equal_sampling", 1, "all", h)
                                                      for h in (0.6, 0.9)))
    rows = judge.verdicts(study, runs, bases, 10)
    # 0.9: differences 0.1, 0.1, 0.2: mean 0.1333, sd 0.0577, t = 4: p = 1 - 4 / sqrt(18) = 0.0572
    assert rows[1]["p"] == pytest.approx(_p2(4.0))
    small, large = sorted(rows, key=lambda r: r["p"])
    assert small["p_holm"] == pytest.approx(2 * small["p"])
    assert large["p_holm"] == pytest.approx(max(large["p"], 2 * small["p"]))


def test_a_seed_missing_its_reference_is_left_out_of_the_verdict():
    runs, bases = _v1_cells([1, 2, 3])
    del runs[(0.6, 2, "equal_sampling")]
    study = _study(primary=(Contrast("ta_grpo", "equal_sampling", 1, "all", 0.6),))
    (row,) = judge.verdicts(study, runs, bases, 10)
    assert row["n"] == 2 and row["values"] == pytest.approx([0.1, 0.2])


def test_matches_is_tested_against_minus_the_margin():
    # TA-GRPO minus equal-sampling 0, +0.1, -0.1: mean 0, se 0.1 / sqrt 3. Against 0 ("greater"): t = 0, p = 1.
    # Against -0.5 ("matches", margin 0.5): t = 0.5 / (0.1 / sqrt 3) = sqrt 75, p = 1 - sqrt(75 / 77) = 0.0131.
    # The control -0.8, -0.7, -0.9: against -0.5, t = -0.3 / (0.1 / sqrt 3) = -sqrt 27: p = 0.0351, below the null.
    runs, bases = _world({"ta_grpo": [0.5, 0.6, 0.4], "equal_sampling": [0.5, 0.5, 0.5],
                          "ta_grpo_control": [0.1, 0.2, 0.0], "grpo_long": [0.9, 0.9, 0.9]})
    study = _study(margin=0.5, exploratory=(
        Contrast("ta_grpo", "equal_sampling", 1, "all", 0.6, "greater"),
        Contrast("ta_grpo", "equal_sampling", 1, "all", 0.6, "matches"),
        Contrast("ta_grpo_control", "grpo_long", 1, "all", 0.6, "matches")))
    greater, matches, worse = judge.verdicts(study, runs, bases, 1)
    assert greater["p"] == pytest.approx(1.0) and greater["verdict"] == "inconclusive"
    assert matches["values"] == greater["values"]
    assert matches["p"] == pytest.approx(_p2(math.sqrt(75))) and matches["verdict"] == "reproduced"
    assert worse["mean"] == pytest.approx(-0.8)
    assert worse["p"] == pytest.approx(_p2(math.sqrt(27))) and worse["verdict"] == "refuted"


def test_tost_calls_an_undecided_primary_contrast_no_difference_with_holm_over_the_family():
    # TA-GRPO minus each reference 0, +0.01, -0.01: TOST within 0.02 has p = sf(sqrt 12, 2) = 0.0371 per contrast
    runs, bases = _world({"ta_grpo": [0.5, 0.51, 0.49], "equal_sampling": [0.5] * 3, "ta_grpo_control": [0.5] * 3,
                          "grpo": [0.3, 0.31, 0.28]})
    tost_p = _p2(math.sqrt(12)) / 2
    one = _study(tost=True, margin=0.02, primary=(Contrast("ta_grpo", "equal_sampling", 1, "all", 0.6),),
                 exploratory=(Contrast("ta_grpo", "ta_grpo_control", 1, "all", 0.6),))
    (row, exploratory) = judge.verdicts(one, runs, bases, 1)
    assert row["p"] == pytest.approx(1.0)  # no difference shown by the t-test ...
    assert row["p_equivalence_holm"] == pytest.approx(tost_p) and row["verdict"] == "no difference"  # ... but TOST
    assert "p_equivalence_holm" not in exploratory and exploratory["verdict"] == "inconclusive"  # primary only
    # its own interval, 90%: 0 +- t(0.95, 2) x 0.01 / sqrt 3 = +-2.919986 x 0.0057735 = +-0.016859, inside +-0.02
    assert (row["tost_lo"], row["tost_hi"]) == pytest.approx((-0.016859, 0.016859), abs=1e-6)
    assert "tost_lo" not in exploratory
    assert tables.verdict_table([row], one).splitlines()[2].endswith("| 0.037, [-1.7, 1.7] | **no difference** |")
    two = _study(tost=True, margin=0.02, primary=tuple(Contrast("ta_grpo", ref, 1, "all", 0.6)
                                                       for ref in ("equal_sampling", "ta_grpo_control")))
    rows = judge.verdicts(two, runs, bases, 1)  # two TOST p-values of 0.0371: Holm makes both 0.0742
    assert [r["p_equivalence_holm"] for r in rows] == pytest.approx([2 * tost_p] * 2)
    assert [r["verdict"] for r in rows] == ["inconclusive"] * 2
    no_tost = _study(margin=0.02, primary=one.primary)
    assert judge.verdicts(no_tost, runs, bases, 1)[0]["verdict"] == "inconclusive"
    decided = _study(tost=True, margin=0.02, primary=(Contrast("ta_grpo", "grpo", 1, "all", 0.6),))
    (row,) = judge.verdicts(decided, runs, bases, 1)  # +0.2: a difference, which TOST never overrides
    assert row["verdict"] == "reproduced"


def _capacity_cell(arm, seed, counts):
    return _cell(arm, capacity.KNOB, seed, counts, samples=4)


def _cost_cells():
    # Questions 0-1 hard (base 0 of 4), 2-3 the rest. On the 4x base TA-GRPO's rest pass@1 is below equal-sampling
    # by 0.125 on seeds 0 and 1 and 0.25 on seed 2 (mean -1/6); on the small base by 0.5 on both seeds (-0.5).
    knob = capacity.KNOB
    bases = {(knob, s): _cell(None, knob, s, [0, 0, 2, 2], 4, kind="base") for s in range(3)}
    runs = {}
    for s, rest in enumerate(([4, 3], [4, 3], [4, 2])):
        runs[(knob, s, "equal_sampling")] = _capacity_cell("equal_sampling", s, [0, 0, 4, 4])
        runs[(knob, s, "ta_grpo")] = _capacity_cell("ta_grpo", s, [4, 4, *rest])
    small_bases = {(knob, s): _cell(None, knob, s, [0, 0, 2, 2], 4, kind="base") for s in range(2)}
    small = {(knob, s, a): _capacity_cell(a, s, c) for s in range(2)
             for a, c in (("equal_sampling", [0, 0, 4, 4]), ("ta_grpo", [0, 0, 2, 2]))}
    return runs, bases, (small, small_bases)


def test_the_cost_change_is_welch_on_the_two_studies_per_seed_differences():
    # Welch: a = [-1/8, -1/8, -1/4] (var 1/192, se^2 1/576), b = [-1/2, -1/2] (se 0): mean +1/3, df 2, se 1/24,
    # t = 8: +33.3 [+15.4, +51.3] pp, p = 1 - 8 / sqrt 66 = 0.0153. The family (Holm): TA-GRPO's hard gain p 0, the
    # cost change 0.0153, TA-GRPO's rest cost (t = -4: p 0.0572); the candidates have no cells (NaN, not counted).
    runs, bases, small = _cost_cells()
    rows = judge.verdicts(capacity.STUDY, runs, bases, 4, {"embedded_v2": small})
    assert len(rows) == 2 + 2 * len(embedded_v2.CANDIDATES) + 1 and all(r["primary"] for r in rows)
    cost = next(r for r in rows if r["versus"] == "embedded_v2")
    assert cost["values"] == pytest.approx([-1 / 8, -1 / 8, -1 / 4]) and cost["versus_values"] == [-0.5, -0.5]
    assert cost["mean"] == pytest.approx(1 / 3) and cost["n"] == 5
    assert cost["lo"] == pytest.approx(1 / 3 - T975_2 / 24) and cost["hi"] == pytest.approx(1 / 3 + T975_2 / 24)
    assert cost["p"] == pytest.approx(_p2(8.0)) and cost["p_holm"] == pytest.approx(2 * _p2(8.0))
    assert cost["verdict"] == "reproduced" and cost["versus_interval"]["mean"] == -0.5
    ta_rest = next(r for r in rows if r["arm"] == "ta_grpo" and r["subset"] == "rest" and not r["versus"])
    assert ta_rest["mean"] == pytest.approx(-1 / 6) and ta_rest["n"] == 3 and ta_rest["p"] == pytest.approx(_p2(4))
    assert ta_rest["p_holm"] == pytest.approx(_p2(4)) and ta_rest["verdict"] == "inconclusive"
    ta_hard = next(r for r in rows if r["arm"] == "ta_grpo" and r["subset"] == "hard")
    assert ta_hard["mean"] == 1.0 and ta_hard["k"] == 4  # pass@4 1 on both hard questions against 0, every seed
    assert all("p_holm" in r for r in rows)  # one family
    assert all(math.isnan(r["p_holm"]) for r in rows if r["arm"] in embedded_v2.CANDIDATES)


def test_a_cost_change_without_the_other_studys_cells_decides_nothing():
    runs, bases, _ = _cost_cells()
    cost = next(r for r in judge.verdicts(capacity.STUDY, runs, bases, 4) if r["versus"])
    assert cost["versus_values"] == [] and math.isnan(cost["mean"]) and cost["verdict"] == "inconclusive"


def test_the_cost_changes_sentence_follows_the_verdict_not_the_sign():
    from tagrpo.experiments.render import summary

    row = {"primary": True, "knob": 0.6, "arm": "ta_grpo", "ref": "equal_sampling", "k": 1, "subset": "rest",
           "versus": "embedded_v2", "n": 8, "mean": 0.004, "lo": -0.05, "hi": 0.058, "p_holm": 0.9,
           "verdict": "inconclusive"}
    undecided = summary([row], capacity.STUDY)
    assert "this study minus embedded_v2: undecided (+0.4 [-5.0, 5.8] pp, Holm p 0.9, 8 seeds)" in undecided
    assert "better" not in undecided
    assert "the first is better" in summary([{**row, "verdict": "reproduced", "p_holm": 0.01}], capacity.STUDY)
    assert "the first is worse" in summary([{**row, "verdict": "refuted", "p_holm": 0.01}], capacity.STUDY)


def _goal_cell(arm, seed, counts, knob=0.6):
    return _cell(arm, knob, seed, counts, samples=4)


def test_the_goal_on_hand_made_cells():
    # questions 0-1 hard (base 0 of 4), 2-3 the rest. Per seed: equal-sampling rest 4/4, hard 0; TA-GRPO hard
    # pass@4 1 on both hard questions, rest 2/4; the gated candidate hard 1 on one hard question (gain 0.5 vs
    # TA-GRPO's 1.0: 50% < 80%), rest 4/4 except 3/4 on one question at seed 1.
    study = embedded_v2.STUDY
    bases = {(0.6, s): _cell(None, 0.6, s, [0, 0, 2, 2], 4, kind="base") for s in range(3)}
    runs = {}
    for s in range(3):
        runs[(0.6, s, "equal_sampling")] = _goal_cell("equal_sampling", s, [0, 0, 4, 4])
        runs[(0.6, s, "ta_grpo")] = _goal_cell("ta_grpo", s, [1 + s % 2, 1, 2, 2])
        runs[(0.6, s, "ta_grpo_gated")] = _goal_cell("ta_grpo_gated", s, [2, 0, 4 - (s == 1), 4])
    checks = judge.goal_checks(study, runs, bases, 4)
    assert judge.kept_gain(runs, bases, 0.6, "ta_grpo_gated", 4, 0.8) == pytest.approx([-0.3] * 3)
    assert judge.kept_gain(runs, bases, 0.6, "ta_grpo_gated", 4, 0.5) == pytest.approx([0.0] * 3)
    rows = {(r[1], r[2].split(":")[0]): r for r in tables.goal_rows(checks, 3) if r[0] == "0.6"}
    rest = rows[("TA-GRPO, gated pools", "rest pass@1 minus equal-sampling")]
    # differences 0, -1/8, 0: mean -4.2 pp, sd 7.2, t(2) 4.30 x se 4.2 = 17.9 -> [-22.1, +13.8]: not above -2
    assert rest[3:] == ["-4.2 [-22.1, 13.8]", 3, "not met"]
    keep = rows[("TA-GRPO, gated pools", "hard pass@4")]
    assert keep[3].startswith("-30.0") and keep[5] == "not met"  # per seed: gain 0.5 - 0.8 x 1.0 = -0.3
    partial = {(r[1], r[2].split(":")[0]): r for r in tables.goal_rows(checks, 10) if r[0] == "0.6"}
    assert partial[("TA-GRPO, gated pools", "hard pass@4")][5] == "undecided (3 of 10 seeds)"
    assert not [c for c in checks if c["knob"] == 0.0]  # no reference at 0: nothing to be about equal to
    assert all(c["ci"]["n"] == 0 and not c["met"] for c in checks if c["knob"] == 0.9 or c["arm"] == "weighted")
    # the largest shortfall: the kept gain's bound -30.0 misses 0 by 30.0 pp (the rest's -22.1 misses -2 by 20.1)
    assert tables.closest(checks) == [
        ["TA-GRPO, gated pools", "0 of 2", "30.0", "hard pass@4: gain minus 80% of TA-GRPO's at 0.6"]]


def test_a_candidate_meeting_the_goal_at_a_knob():
    # gated: rest as equal-sampling's to within 1/8 on one seed of three; hard pass@4 as TA-GRPO's on every seed
    study = embedded_v2.STUDY
    bases = {(0.6, s): _cell(None, 0.6, s, [0, 0, 2, 2], 4, kind="base") for s in range(3)}
    runs = {}
    for s in range(3):
        runs[(0.6, s, "equal_sampling")] = _goal_cell("equal_sampling", s, [0, 0, 4, 4 - (s == 1)])
        runs[(0.6, s, "ta_grpo")] = _goal_cell("ta_grpo", s, [1, 1, 2, 2])
        runs[(0.6, s, "ta_grpo_gated")] = _goal_cell("ta_grpo_gated", s, [1, 1, 4, 4 - (s == 0)])
    rest, keep = (c for c in judge.goal_checks(study, runs, bases, 4) if c["knob"] == 0.6
                  and c["arm"] == "ta_grpo_gated")
    # rest differences -1/8, +1/8, 0: [-31.1, +31.1] pp: its lower bound is below -2, not met
    assert rest["ci"]["mean"] == pytest.approx(0) and not rest["met"]
    # kept gain (1 - 0) - 0.8 (1 - 0) = 0.2 every seed: the bound 0.2 > 0, met, no shortfall
    assert keep["ci"]["lo"] == pytest.approx(0.2) and keep["met"] and keep["shortfall"] == pytest.approx(-0.2)


def _knob0(pass1: dict[str, list[float]]) -> tuple[Study, dict, dict]:
    study = _study(settings=(0.0,), goal=Goal(("ta_grpo_gated",)), margin=0.02)
    return (study, *_world(pass1, setting=0.0))


@pytest.mark.parametrize(("gated", "met"), [
    ([0.501, 0.498, 0.5, 0.501, 0.499], True),  # inside +-2 pp, tight
    ([0.53, 0.47, 0.52, 0.48], False),  # centred on equal-sampling, too wide
    ([0.525, 0.526, 0.524], False),  # tight, outside
])
def test_the_goal_without_hard_questions_is_a_tost_at_the_margin(gated, met):
    study, runs, bases = _knob0({"ta_grpo_gated": gated, "equal_sampling": [0.5] * len(gated)})
    (check,) = judge.goal_checks(study, runs, bases, 4)
    assert check["criterion"] == ("pass@1 about equal to", "equal_sampling") and check["met"] is met
    assert check["ci"]["equivalent"] is met and (check["ci"]["p_tost"] < 0.05) is met


def test_the_tost_goal_by_hand():
    # gated minus equal-sampling 0, +0.01, -0.01: TOST p = sf(sqrt 12, 2) = 0.0371 (met); its 95% interval,
    # +-4.30 x 0.01 / sqrt 3 = +-2.48 pp, reaches 0.48 pp past the margin: the shortfall the ranking reads
    study, runs, bases = _knob0({"ta_grpo_gated": [0.5, 0.51, 0.49], "equal_sampling": [0.5] * 3})
    (check,) = judge.goal_checks(study, runs, bases, 4)
    assert check["ci"]["p_tost"] == pytest.approx(_p2(math.sqrt(12)) / 2) and check["met"]
    assert check["shortfall"] == pytest.approx(T975_2 * 0.01 / math.sqrt(3) - 0.02)


def test_the_goal_without_hard_questions_is_against_the_better_reference():
    # equal-sampling GRPO at 0.60, GRPO-long at 0.50: the better is equal-sampling; the candidate, at GRPO-long's
    # pass@1, is 10 pp below it: not about equal to the better reference
    study, runs, bases = _knob0({"ta_grpo_gated": [0.5, 0.501, 0.499], "equal_sampling": [0.6, 0.601, 0.599],
                                 "grpo_long": [0.5, 0.5, 0.5]})
    (check,) = judge.goal_checks(study, runs, bases, 4)
    assert check["criterion"] == ("pass@1 about equal to", "equal_sampling") and not check["met"]
