"""The declared design of the second real-model study (``tagrpo/experiments/declarations/real_v2.py``) on the sums
task (``tagrpo.experiments.tasks.sums``): seeds, arms, sweep and edge rule, the cells each phase asks for, the
contrasts and the Holm family with its TOST (on cells worked out by hand). Nothing is trained."""

from __future__ import annotations

import pytest

from tagrpo.common import machine
from tagrpo.data import sum_problems
from tagrpo.data.jsonl import read_jsonl
from tagrpo.evaluation.stats import equivalence
from tagrpo.experiments import judge, run
from tagrpo.experiments.declarations import real_v2
from tagrpo.experiments.render import summary
from tagrpo.experiments.tasks import sums
from tagrpo.toy import smollm_sums

STUDY = real_v2.STUDY
K = smollm_sums.EVAL_SAMPLES


def _args(tmp_path, **changes) -> run.StudyArgs:
    args = run.StudyArgs(work_dir=str(tmp_path), out=str(tmp_path), samples=K, steps=32, arms=list(STUDY.all_arms()),
                         sweep_lrs=list(STUDY.sweep.rates), seeds=list(STUDY.seeds),
                         exploratory_seeds=list(STUDY.exploratory_seeds))
    for key, value in changes.items():
        setattr(args, key, value)
    return args


def test_seeds_sweep_and_settings_are_the_issues():
    assert STUDY.seeds == tuple(range(10)) and STUDY.exploratory_seeds == tuple(range(5))
    assert set(STUDY.exploratory_seeds) <= set(STUDY.seeds)  # exploratory arms pair with the primary ones
    assert len(STUDY.sweep.seeds) >= 2 and not set(STUDY.sweep.seeds) & set(STUDY.seeds)
    assert STUDY.task_options["steps"] == 32 and STUDY.sweep.rates == (1e-5, 3e-5, 1e-4)
    assert (STUDY.sweep.low_edge, STUDY.sweep.high_edge) == (3e-6, 3e-4)
    setting = STUDY.task_options["setting"]
    assert setting["scheme"] == "pairs" and setting["gradient_checkpointing"] is False
    assert smollm_sums.FIRST["scheme"] == "ordered"  # the first study keeps its own splits
    assert STUDY.margin == 0.05 and STUDY.tost


def test_arms_primary_exploratory_and_the_issue32_variant():
    assert STUDY.primary_arms == ("ta_grpo", "equal_sampling", "ta_grpo_control")
    from tagrpo.demo.arms import RECOMMENDED

    assert real_v2.VARIANT == RECOMMENDED
    assert set(STUDY.exploratory_arms) == {"pooled_no_anchor", "grpo", "grpo_more_data", real_v2.VARIANT}
    assert set(STUDY.arms) == set(STUDY.primary_arms) | set(STUDY.exploratory_arms)
    assert all(STUDY.arms[a] == smollm_sums.ARMS[a] for a in STUDY.arms)


@pytest.mark.parametrize("arm", list(smollm_sums.ARMS))
def test_every_arm_builds_its_trainer_config(arm, tmp_path):
    setting = STUDY.task_options["setting"]
    in_study = arm in STUDY.arms  # the variants of issue 32 train at the study's length
    steps = sums.cell(STUDY, _args(tmp_path), "arm", "test", None, 0, arm, 1e-5)[0]["steps"] if in_study else 32
    job, config = smollm_sums.trainer_job(setting, arm, "spelled", "unused-model", str(tmp_path), steps, 1e-5, seed=0,
                                   device="cpu")
    rows = read_jsonl(str(tmp_path / "train.jsonl"))
    assert len(rows) == setting["questions"] * steps
    assert steps == (80 if arm == "grpo_more_data" else 32)
    assert config.gradient_checkpointing is False and config.max_steps == 2 * steps
    rollouts = setting["questions"] * config.pool_size  # per generation step
    assert rollouts == {"grpo": 8, "grpo_more_data": 8}.get(arm, 32)
    assert config.beta == (0.001 if arm == "ta_grpo_kl" else 0.0)
    held = set(sum_problems.split("test")) | set(sum_problems.split("validation"))
    assert not {(r["a"], r["b"]) for r in rows} & held


def test_edge_rule_adds_the_rate_beyond_the_chosen_edge_only():
    grid, sweep = STUDY.sweep.rates, STUDY.sweep
    assert sweep.edge(1e-5, grid) == 3e-6 and sweep.edge(1e-4, grid) == 3e-4
    assert sweep.edge(3e-5, grid) is None and sweep.edge(None, grid) is None
    assert sweep.edge(3e-6, (3e-6, *grid)) is None  # the edge rate itself: no further edge


def test_phases_ask_for_the_declared_cells(tmp_path):
    args = _args(tmp_path)
    args.overrides = {}
    all_arms = (*STUDY.primary_arms, *STUDY.exploratory_arms)
    grid = run.sweep_specs(STUDY, args, sums, all_arms, "spelled")
    assert len(grid) == len(STUDY.arms) * 3 * len(STUDY.sweep.seeds)
    assert {s["split"] for s, _ in grid} == {"validation"} and {s["steps"] for s, _ in grid} == {32, 80}
    rates = {None: {arm: 3e-5 for arm in STUDY.arms} | {"ta_grpo": 1e-5, "grpo": 1e-4}}
    edged = run.sweep_specs(STUDY, args, sums, all_arms, "spelled", rates)
    extra = {(s["arm"], s["learning_rate"]) for s, _ in edged} - {(s["arm"], s["learning_rate"]) for s, _ in grid}
    assert extra == {("ta_grpo", 3e-6), ("grpo", 3e-4)}
    primary = run.study_specs(STUDY, args, sums, "primary", rates, "spelled")
    exploratory = run.study_specs(STUDY, args, sums, "exploratory", rates, "spelled")
    kinds = [(s["kind"], s.get("arm"), s["seed"]) for s, _ in primary + exploratory]
    assert sum(k == "base" for k, _, _ in kinds) == 10
    for arm in STUDY.primary_arms:
        assert sorted(seed for _, a, seed in kinds if a == arm) == list(STUDY.seeds)
    for arm in STUDY.exploratory_arms:
        assert sorted(seed for _, a, seed in kinds if a == arm) == list(STUDY.exploratory_seeds)
    assert all(len({p for _, p in specs}) == len(specs) for specs in (grid, edged, primary + exploratory))
    assert {s.get("arm") for s, _ in primary} == {None, *STUDY.primary_arms}
    assert {s["arm"] for s, _ in exploratory} == set(STUDY.exploratory_arms)
    spec = next(s for s, _ in primary if s.get("arm") == "ta_grpo")
    assert spec["arm_config"] == STUDY.arms["ta_grpo"] and spec["setting"]["scheme"] == "pairs"
    assert "workers" not in spec["setting"] and spec["learning_rate"] == 1e-5 and spec["split"] == "test"
    assert spec["study"] == "real_v2" and "precision" not in spec and "knob" not in spec


def test_the_precision_is_the_studys_not_the_machines(tmp_path, monkeypatch, capsys):
    """One study is one precision: a machine without native bf16 computes the bf16 cells with emulated products
    and says so before any cell runs (a render says nothing); a smoke run that asks for fp32 gets cells of its
    own."""
    monkeypatch.setattr(sums, "native_bf16", lambda device: False)
    assert sums.prepare(STUDY, _args(tmp_path, render_only=True)) == ({}, None)
    assert capsys.readouterr().out == ""
    assert sums.prepare(STUDY, _args(tmp_path)) == ({}, None)
    assert "no native bf16" in capsys.readouterr().out
    assert sums.prepare(STUDY, _args(tmp_path, precision="fp32"))[0] == {"precision": "fp32"}
    monkeypatch.setattr(sums, "native_bf16", lambda device: True)
    assert sums.prepare(STUDY, _args(tmp_path)) == ({}, None)
    assert capsys.readouterr().out == ""


def _cell(kind, seed, counts, arm=None):
    spec = {"kind": kind, "seed": seed, "split": "test"}
    if arm:
        spec.update(arm=arm, learning_rate=1e-5)
    return {"spec": spec, "counts": counts, "samples": 8, "pass_at_k": {}}


def _study_cells():
    cells = [_cell("base", s, [1, 0]) for s in STUDY.seeds]
    for s in STUDY.seeds:
        cells += [_cell("arm", s, [4 + s % 3, 2], "ta_grpo"), _cell("arm", s, [4, 1], "equal_sampling"),
                  _cell("arm", s, [3, 1 + s % 2], "ta_grpo_control")]
    for s in STUDY.exploratory_seeds:
        cells += [_cell("arm", s, [2, 2], arm) for arm in STUDY.exploratory_arms]
    return cells


def _verdicts(cells):
    return judge.verdicts(STUDY, *judge.index(STUDY, cells), K)


def test_holm_family_is_the_four_primary_contrasts_on_ten_seeds():
    rows = _verdicts(_study_cells())
    primary = [r for r in rows if r["primary"]]
    assert {(r["arm"], r["ref"], r["k"]) for r in primary} == {
        ("ta_grpo", "equal_sampling", 1), ("ta_grpo", "equal_sampling", 8),
        ("ta_grpo", "ta_grpo_control", 1), ("ta_grpo", "ta_grpo_control", 8)}
    assert all(r["n"] == 10 and r["p_holm"] >= r["p"] for r in primary)
    es = next(r for r in primary if r["ref"] == "equal_sampling" and r["k"] == 1)
    assert es["values"][:3] == pytest.approx([1 / 16, 2 / 16, 3 / 16])  # (4 + s % 3 + 2) / 16 - 5 / 16
    exploratory = [r for r in rows if r["family"] == "exploratory"]
    assert all("p_holm" not in r for r in exploratory)
    against = {(r["arm"], r["ref"], r["k"]): r for r in exploratory}
    for arm in STUDY.exploratory_arms:
        assert against[("ta_grpo", arm, 1)]["n"] == 5 and against[("ta_grpo", arm, 8)]["n"] == 5
    assert against[(real_v2.VARIANT, "equal_sampling", 1)]["n"] == 5
    assert against[("ta_grpo", "base", 1)]["n"] == 10 and against[("grpo", "base", 1)]["n"] == 5


def test_the_post_hoc_subsets_split_by_the_same_seeds_base_zeros():
    # _study_cells: the base solves question 0 (1 of 8) and not question 1, so q1 is hard and q0 the rest on every
    # seed. Hard, pass@1: TA-GRPO 2/8 against equal-sampling 1/8 (+1/8 on every seed) and the control (1 + s % 2)/8;
    # pass@8: any correct sample of 8 is 1, so 0 against both. Rest, pass@1: (4 + s % 3)/8 - 4/8 = (s % 3)/8.
    rows = _verdicts(_study_cells())
    post = {(r["ref"], r["subset"], r["k"]): r for r in rows if r["subset"] != "all"}
    assert set(post) == {(c.ref, c.subset, c.k or K) for c in STUDY.post_hoc}
    assert all(r["family"] == "post hoc" and "p_holm" not in r and r["n"] == 10 for r in post.values())
    assert post[("equal_sampling", "hard", 1)]["values"] == pytest.approx([1 / 8] * 10)
    assert post[("ta_grpo_control", "hard", 1)]["values"] == pytest.approx([(1 - s % 2) / 8 for s in STUDY.seeds])
    assert post[("equal_sampling", "hard", 8)]["values"] == pytest.approx([0] * 10)
    assert post[("equal_sampling", "rest", 1)]["values"] == pytest.approx([(s % 3) / 8 for s in STUDY.seeds])
    assert len([r for r in rows if r["primary"]]) == 4  # the Holm family is unchanged


@pytest.mark.parametrize("step, verdict", [(1, "no difference"), (3, "inconclusive")])
def test_an_undecided_primary_contrast_inside_the_margin_is_no_difference(step, verdict):
    # TA-GRPO's pass@1 on q0 minus equal-sampling's, and minus the control's, alternates +step/16, -step/16 over the
    # 10 seeds (2 questions x 8 samples): mean 0, standard error step/48. TOST at +-5 pp: t = 0.05 x 48 / step = 2.4
    # (step 1; between t(9)'s 0.975 and 0.99 quantiles 2.262 and 2.821, so 0.01 < p < 0.025) or 0.8 (step 3;
    # p > 0.2). pass@8 is 1 on both questions for every arm: TOST p 0. Holm over the four: the two equal non-zero
    # p-values are doubled (ranks 3 and 4 of 4: 2p, then max(2p, p)).
    cells = [_cell("base", s, [1, 0]) for s in STUDY.seeds]
    for s in STUDY.seeds:
        up = step * (s % 2) - step * ((s + 1) % 2)
        cells += [_cell("arm", s, [4 + up, 4], "ta_grpo"), _cell("arm", s, [4, 4], "equal_sampling"),
                  _cell("arm", s, [4, 4], "ta_grpo_control")]
    cells += [_cell("arm", s, [4, 4], arm) for s in STUDY.exploratory_seeds for arm in STUDY.exploratory_arms]
    judged = _verdicts(cells)
    rows = {(r["ref"], r["k"]): r for r in judged if r["primary"]}
    raw = equivalence(rows[("equal_sampling", 1)]["values"], STUDY.margin)["p"]
    assert (0.01 < raw < 0.025) if step == 1 else raw > 0.2
    for ref in real_v2.REFS:
        assert rows[(ref, 1)]["mean"] == pytest.approx(0) and rows[(ref, 1)]["verdict"] == verdict
        assert rows[(ref, 1)]["p_equivalence_holm"] == pytest.approx(min(1.0, 2 * raw))
        assert rows[(ref, 8)]["verdict"] == "no difference" and rows[(ref, 8)]["p_equivalence_holm"] == 0
    assert all("p_equivalence_holm" not in r for r in judged if not r["primary"])
    text = summary(judged, STUDY)
    assert "no difference (equivalent" in text and "equivalence test's Holm p 0," in text


def test_a_decided_primary_contrast_stays_decided_inside_the_margin():
    # 4 questions x 8 samples: TA-GRPO solves one sample more than equal-sampling on every seed, +1/32 = 3.1 pp
    # with no spread: the t-test decides it (p 0: reproduced) and TOST puts it inside +-5 pp (p 0) as well; the
    # verdict stays reproduced (only an undecided contrast becomes "no difference").
    cells = [_cell("base", s, [1, 0, 0, 0]) for s in STUDY.seeds]
    for s in STUDY.seeds:
        cells += [_cell("arm", s, [5, 4, 4, 4], "ta_grpo"), _cell("arm", s, [4, 4, 4, 4], "equal_sampling"),
                  _cell("arm", s, [4, 4, 4, 4], "ta_grpo_control")]
    row = next(r for r in _verdicts(cells) if r["primary"] and r["ref"] == "equal_sampling" and r["k"] == 1)
    assert row["mean"] == pytest.approx(1 / 32) and row["p_equivalence_holm"] == 0
    assert row["verdict"] == "reproduced"


def test_the_side_by_side_table_puts_the_same_contrasts_of_both_worlds_in_one_row():
    from tagrpo.experiments.worlds import side_by_side

    def row(arm, ref, k, mean, n, verdict, **where):
        return {"arm": arm, "ref": ref, "k": k, "mean": mean, "lo": mean - 0.01, "hi": mean + 0.01, "n": n,
                "verdict": verdict, "primary": where.pop("primary", True), **where}

    toy = [row("ta_grpo", "equal_sampling", 1, -0.128, 10, "refuted", knob=0.6, subset="all"),
           row("ta_grpo", "equal_sampling", 1, 0.5, 10, "reproduced", knob=0.6, subset="hard"),  # not "all": ignored
           row("ta_grpo", "equal_sampling", 64, 0.311, 10, "reproduced", knob=0.6, subset="all"),
           row("ta_grpo", "equal_sampling", 1, -0.021, 10, "refuted", knob=0.0, subset="all")]
    real = [row("ta_grpo", "equal_sampling", 1, 0.3, 5, "reproduced", primary=False),  # exploratory: ignored
            row("ta_grpo", "equal_sampling", 1, 0.098, 10, "no difference"),
            row("ta_grpo", "equal_sampling", 8, 0.05, 10, "inconclusive")]
    assert "| pass@64 / pass@8 |" in side_by_side(toy, [], "real", 8)  # the real study's k before it has verdicts
    lines = side_by_side(toy, real, "real", 8).splitlines()
    assert lines[0] == ("| contrast | metric (embedded / real) | embedded, hard_share 0 | embedded, hard_share 0.6 "
                        "| real |")
    assert lines[2] == ("| TA-GRPO - equal-sampling GRPO | pass@1 | -2.1 [-3.1, -1.1] (10 seeds; refuted) | "
                        "-12.8 [-13.8, -11.8] (10 seeds; refuted) | +9.8 [8.8, 10.8] (10 seeds; no difference) |")
    assert lines[3] == ("| TA-GRPO - equal-sampling GRPO | pass@64 / pass@8 | - | +31.1 [30.1, 32.1] (10 seeds; "
                        "reproduced) | +5.0 [4.0, 6.0] (10 seeds; inconclusive) |")
    assert lines[4].endswith("| pass@1 | - | - | - |") and len(lines) == 6  # the control: no verdicts yet


def test_the_difficulty_table_sets_both_worlds_subsets_side_by_side():
    from tagrpo.experiments.worlds import by_difficulty

    def row(ref, subset, k, mean, verdict, primary, **where):
        return {"arm": "ta_grpo", "ref": ref, "subset": subset, "k": k, "mean": mean, "lo": mean - 0.01,
                "hi": mean + 0.01, "n": 10, "verdict": verdict, "primary": primary, **where}

    toy = [row("equal_sampling", "hard", 1, 0.06, "reproduced", True, knob=0.6),
           row("equal_sampling", "rest", 1, -0.367, "refuted", False, knob=0.6),
           row("equal_sampling", "all", 1, 0.5, "reproduced", True, knob=0.6),  # "all": the other table's
           row("equal_sampling", "hard", 64, 0.555, "reproduced", True, knob=0.6)]
    real = [row("equal_sampling", "rest", 1, 0.07, "reproduced", False),
            row("equal_sampling", "all", 1, 0.118, "reproduced", True)]
    lines = by_difficulty(toy, real, "real", 8).splitlines()
    assert lines[0] == "| contrast | subset | metric (embedded / real) | embedded, hard_share 0.6 | real |"
    assert lines[2] == "| TA-GRPO - equal-sampling GRPO | hard | pass@1 | +6.0 [5.0, 7.0] (10 seeds; reproduced) | - |"
    assert lines[3].startswith("| TA-GRPO - equal-sampling GRPO | hard | pass@64 / pass@8 | +55.5 [54.5, 56.5]")
    assert lines[4] == ("| TA-GRPO - equal-sampling GRPO | rest | pass@1 | -36.7 [-37.7, -35.7] (10 seeds; refuted, "
                        "uncorrected) | +7.0 [6.0, 8.0] (10 seeds; reproduced, uncorrected) |")
    assert len(lines) == 2 + 8  # 2 contrasts x 2 subsets x 2 metrics


def test_the_difficulty_plot_needs_a_split_row(tmp_path):
    from tagrpo.experiments.worlds import plot_by_difficulty

    row = {"arm": "ta_grpo", "ref": "equal_sampling", "k": 1, "mean": 0.07, "lo": 0.02, "hi": 0.12, "n": 10,
           "primary": False}
    assert not plot_by_difficulty([], [{**row, "subset": "all"}], "real", 8, str(tmp_path / "none.png"))
    assert not (tmp_path / "none.png").exists()
    assert plot_by_difficulty([{**row, "subset": "rest", "knob": 0.6, "mean": -0.37, "lo": -0.44, "hi": -0.29}],
                              [{**row, "subset": "rest"}], "real", 8, str(tmp_path / "both.png"))
    assert (tmp_path / "both.png").stat().st_size > 0


def test_an_undecided_contrast_is_never_worded_as_no_difference():
    row = {"arm": "ta_grpo", "ref": "equal_sampling", "k": 1, "primary": True, "verdict": "inconclusive", "n": 2,
           "mean": 0.07, "lo": -0.3, "hi": 0.4, "p_holm": 0.5, "knob": None, "subset": "all", "versus": None}
    text = summary([row], STUDY)
    assert "undecided" in text and "no difference" not in text
    assert "no difference (equivalent" in summary([{**row, "verdict": "no difference", "p_equivalence_holm": 0.01}],
                                                  STUDY)
    equivalent = {**row, "verdict": "no difference", "p_equivalence_holm": 0.01, "tost_lo": -0.021, "tost_hi": 0.034}
    assert "equivalence test's Holm p 0.01, its 90% interval [-2.1, +3.4], 2 seeds" in summary([equivalent], STUDY)


def _small_cells():
    ta = {0: [2, 1], 1: [2, 2], 2: [1, 1]}  # pass@1 0.75, 1.0, 0.5 (2 samples per question)
    es = {0: [1, 0], 1: [1, 1], 2: [1, 0]}  # pass@1 0.25, 0.5, 0.25: TA-GRPO - ES = 0.5, 0.5, 0.25
    cells = [{**_cell("base", s, [0, 1]), "samples": 2} for s in range(3)]
    for s in range(3):
        cells += [{**_cell("arm", s, counts, arm), "samples": 2} for arm, counts in
                  (("ta_grpo", ta[s]), ("equal_sampling", es[s]), ("ta_grpo_control", es[s]),
                   ("pooled_no_anchor", ta[s]))]
    return cells


def test_a_paired_interval_and_p_by_hand():
    rows = {(r["ref"], r["arm"], r["k"]): r for r in judge.verdicts(STUDY, *judge.index(STUDY, _small_cells()), 2)
            if r["subset"] == "all"}
    es = rows[("equal_sampling", "ta_grpo", 1)]
    assert es["values"] == pytest.approx([0.5, 0.5, 0.25]) and es["mean"] == pytest.approx(5 / 12)
    se = ((1 / 12) ** 2 * 2 + (1 / 6) ** 2) ** 0.5 / 2 ** 0.5 / 3 ** 0.5  # sd 0.1443 / sqrt(3) = 0.0833
    assert es["hi"] - es["mean"] == pytest.approx(4.3027 * se, rel=1e-3)  # t(0.975, 2 df)
    assert es["p"] == pytest.approx(0.0377, abs=5e-4)  # t = 5.0 on 2 df
    assert es["verdict"] == ("reproduced" if es["p_holm"] < 0.05 else "inconclusive")
    pooled = rows[("pooled_no_anchor", "ta_grpo", 1)]
    assert pooled["family"] == "exploratory" and "p_holm" not in pooled and pooled["values"] == [0.0, 0.0, 0.0]
    assert rows[("base", "ta_grpo", 1)]["values"] == pytest.approx([0.5, 0.75, 0.25])  # against base 0.25
    assert rows[("grpo", "ta_grpo", 1)]["n"] == 0  # not run: no values, no verdict
    assert rows[("grpo", "ta_grpo", 1)]["verdict"] == "inconclusive"


def test_one_seed_reads_as_no_test_and_three_as_a_holm_p():
    from tagrpo.experiments.tables import verdict_table

    one = [c for c in _small_cells() if c["spec"]["seed"] == 0]
    rows = [r for r in judge.verdicts(STUDY, *judge.index(STUDY, one), 2) if r["primary"]]
    text = summary(rows, STUDY)
    assert text.count("on one seed, no interval, no test") == 4 and "nan" not in text
    assert all(line.split(" | ")[5:7] == ["-", "-"] for line in verdict_table(rows, STUDY).splitlines()[2:])
    rows = [r for r in judge.verdicts(STUDY, *judge.index(STUDY, _small_cells()), 2) if r["primary"]]
    es = next(r for r in rows if r["ref"] == "equal_sampling" and r["k"] == 1)
    assert f"Holm p {es['p_holm']:.2g}, 3 seeds" in summary(rows, STUDY)


def test_q0_is_the_hardest_form_inside_the_mixed_band():
    premise = {"accuracy": {"symbolic": 0.8, "words": 0.2, "narrative": 0.3, "spelled": 0.05}}
    assert sums.choose_q0(premise) == "words"  # spelled is below 10%
    premise["accuracy"]["spelled"] = 0.12
    assert sums.choose_q0(premise) == "spelled"


def test_each_arm_gets_its_best_rate_ties_to_the_smaller():
    def sweep(arm, lr, p1, pk):
        return {**_cell("arm", 100, [0], arm), "spec": {"kind": "arm", "seed": 100, "arm": arm, "learning_rate": lr},
                "pass_at_k": {"1": p1, "8": pk}, "cell_wall_s": 1.0}

    cells = [sweep("ta_grpo", 1e-5, 0.1, 0.3), sweep("ta_grpo", 3e-5, 0.2, 0.3), sweep("grpo", 1e-5, 0.1, 0.2),
             sweep("grpo", 3e-5, 0.2, 0.1)]
    assert judge.choose(STUDY, judge.sweep_rows(cells)) == {None: {"ta_grpo": 3e-5, "grpo": 1e-5}}


def test_bf16_only_where_it_is_native(monkeypatch):
    flags = {"avx2": "flags : fpu avx2 fma", "bf16": "flags : fpu avx2 avx512f avx512_bf16", "amx": "flags : amx_bf16"}
    for name, text in flags.items():
        monkeypatch.setattr(machine.Path, "read_text", lambda self, encoding=None, text=text: text)
        assert machine.native_bf16("cpu") is (name != "avx2")
    assert machine.native_bf16("cuda")  # a GPU: no CPU flags read

    def unreadable(self, encoding=None):
        raise OSError("no /proc here")

    monkeypatch.setattr(machine.Path, "read_text", unreadable)
    assert not machine.native_bf16("cpu")


def test_a_contrast_without_cells_reads_as_none_yet():
    from tagrpo.experiments.tables import verdict_table

    none = [c for c in _small_cells() if c["spec"].get("arm") != "ta_grpo"]
    rows = [r for r in judge.verdicts(STUDY, *judge.index(STUDY, none), 2) if r["primary"]]
    assert rows and all(r["n"] == 0 for r in rows)
    text = summary(rows, STUDY)
    assert text.count(": no cells yet.") == len(rows) and "nan" not in text
    assert all(line.endswith("| no cells yet |") for line in verdict_table(rows, STUDY).splitlines()[2:])


def test_a_contrast_of_an_ended_setting_says_why_it_has_no_cells():
    from dataclasses import replace

    from tagrpo.experiments.tables import verdict_table

    none = [c for c in _small_cells() if c["spec"].get("arm") != "ta_grpo"]
    rows = [r for r in judge.verdicts(STUDY, *judge.index(STUDY, none), 2) if r["primary"]]
    ended = replace(STUDY, ended={rows[0]["knob"]: "its premise failed"})
    text = summary(rows, ended)
    assert text.count(f": none: the {STUDY.knob} ended (its premise failed).") == len(rows)
    assert "no cells yet" not in text
    table = verdict_table(rows, ended).splitlines()[2:]
    assert all(line.endswith(f"| none: the {STUDY.knob} ended (its premise failed) |") for line in table)
