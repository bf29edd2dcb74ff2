"""The second regime study's design (``tagrpo.experiments.study_v2``) and its cell plan (``studies/toy_regime_v2.py``),
on hand-made sweep rows: no training."""

from __future__ import annotations

import argparse
from pathlib import Path

from script_loader import load_script

from tagrpo.experiments import study_v2 as design
from tagrpo.experiments.regime_v2_report import closest, goal, goal_checks, with_weighted

ROOT = Path(__file__).resolve().parents[1]


def _row(arm, knob, lr, seed, objective):
    return {"arm": arm, "knob": knob, "learning_rate": lr, "seed": seed, "objective": objective}


def test_choose_takes_each_arms_best_rate_per_knob_and_the_better_lambda():
    rows = [
        _row("ta_grpo", 0.6, 1e-5, 100, 0.5), _row("ta_grpo", 0.6, 1e-5, 101, 0.7),  # mean 0.6
        _row("ta_grpo", 0.6, 1e-4, 100, 0.9), _row("ta_grpo", 0.6, 1e-4, 101, 0.5),  # mean 0.7: chosen
        _row("ta_grpo", 0.0, 1e-5, 100, 0.8), _row("ta_grpo", 0.0, 3e-5, 100, 0.8),  # a tie: the smaller rate
        _row("ta_grpo_w25", 0.6, 3e-5, 100, 0.65), _row("ta_grpo_w50", 0.6, 1e-5, 100, 0.75),
        _row("ta_grpo_w50", 0.6, 1e-4, 100, 0.2),
    ]
    rates = design.choose(rows)
    assert rates[0.6]["ta_grpo"] == 1e-4 and rates[0.0]["ta_grpo"] == 1e-5
    assert rates[0.6]["weighted_arm"] == "ta_grpo_w50" and rates[0.6]["weighted"] == 1e-5
    assert "weighted" not in rates[0.0]  # no lambda arm swept there


def test_the_edge_rule_fires_only_at_the_top_of_the_grid():
    rates = {0.6: {"ta_grpo": 1e-4, "equal_sampling": 3e-5}}
    assert design.at_edge(rates, "ta_grpo", 0.6) and not design.at_edge(rates, "equal_sampling", 0.6)
    assert not design.at_edge(rates, "ta_grpo", 0.9)  # not swept there yet
    assert not design.at_edge({0.6: {"ta_grpo": 3e-4}}, "ta_grpo", 0.6, (1e-4, 3e-4))  # the edge is the grid's top


def test_the_families_are_declared():
    primary = design.v2_primary_contrasts(64)
    # v1's 3 refs x (2 metrics overall at h=0, 4 at h=0.6 and 0.9) = 30, and each candidate 1 + 2 + 2 = 5
    assert len(primary) == 30 + 5 * len(design.CANDIDATES)
    non_inferiority = [c for c in primary if c.kind == "matches"]
    assert {(c.arm, c.ref, c.subset, c.k) for c in non_inferiority} == {
        (a, "equal_sampling", "rest", 1) for a in design.CANDIDATES}
    explore = design.v2_exploratory_contrasts(64)
    rest = design.rest_contrasts(64)  # added after the runs for issue 33's side-by-side: uncorrected
    assert set(rest) <= set(explore) and not any(c.primary for c in rest)
    assert {(c.arm, c.subset, c.k) for c in rest} == {("ta_grpo", "rest", 1), ("ta_grpo", "rest", 64)}
    assert not any(c.ref == "base" for c in explore)  # no arm-vs-base hard-subset contrast (regression to the mean)
    assert {c.knob for c in explore if c.arm in design.PILOT_ARMS} == set(design.PILOT["knobs"])


def _args(**over):
    base = dict(work_dir="w", samples=64, sweep_lrs=list(design.SWEEP_LRS), seeds=list(design.SEEDS),
                exploratory_seeds=list(design.EXPLORATORY_SEEDS), overrides={}, edge=True)
    return argparse.Namespace(**{**base, **over})


def test_the_cell_plan_matches_the_declared_budget():
    script = load_script(ROOT / "studies" / "toy_regime_v2.py")
    args = _args()
    grid = script.sweep_specs(args)
    assert len(grid) == len(design.KNOBS) * len(design.SWEEP_SEEDS) * (1 + 3 * len(design.SWEPT_ARMS))  # 168
    rates = {h: {**{a: 3e-5 for a in design.SWEPT_ARMS}, "weighted": 1e-5, "weighted_arm": "ta_grpo_w25"}
             for h in design.KNOBS}
    rates[0.9]["ta_grpo"] = 1e-4  # at the edge: one more rate for TA-GRPO at 0.9, on both sweep seeds
    assert len(script.sweep_specs(args, rates)) == len(grid) + 2
    study = script.study_specs(args, rates)
    arms = [s["arm"] for s, _ in study if s["kind"] == "arm"]
    assert arms.count("ta_grpo_w25") == 30 and "weighted" not in arms  # the chosen lambda arm under its own name
    assert arms.count("ta_grpo_kl") == 15 and arms.count(design.PILOT["arm"]) == 20
    assert len(study) == 30 * (1 + len(design.PRIMARY_ARMS)) + 15 * len(design.EXPLORATORY_ARMS) + 20


def _cell(arm, knob, seed, counts, samples=4):
    spec = {"kind": "arm", "arm": arm, "knob": knob, "seed": seed, "learning_rate": 1e-5}
    return {"spec": spec, "counts": counts, "samples": samples}


def test_the_goal_on_hand_made_cells():
    # questions 0-1 hard (base 0 of 4), 2-3 the rest. Per seed: equal-sampling rest 4/4, hard 0; TA-GRPO hard
    # pass@4 1 on both hard questions, rest 2/4; the gated candidate hard 1 on one hard question (gain 0.5 vs
    # TA-GRPO's 1.0: 50% < 80%), rest 4/4 except 3/4 on one question at seed 1.
    bases = {(0.6, s): {"counts": [0, 0, 2, 2], "samples": 4} for s in range(3)}
    runs = {}
    for s in range(3):
        runs[(0.6, s, "equal_sampling")] = _cell("equal_sampling", 0.6, s, [0, 0, 4, 4])
        runs[(0.6, s, "ta_grpo")] = _cell("ta_grpo", 0.6, s, [1 + s % 2, 1, 2, 2])
        runs[(0.6, s, "ta_grpo_gated")] = _cell("ta_grpo_gated", 0.6, s, [2, 0, 4 - (s == 1), 4])
    rows = {(r[1], r[2].split(":")[0]): r for r in goal(goal_checks(runs, bases, 4), declared=3) if r[0] == "0.6"}
    rest = rows[("TA-GRPO, gated pools", "rest pass@1 minus equal-sampling")]
    # differences 0, -1/8, 0: mean -4.2 pp, sd 7.2, t(2) 4.30 x se 4.2 = 17.9 -> [-22.1, +13.8]: not above -2
    assert rest[3] == "-4.2 [-22.1, 13.8]" and rest[5] == "not met"
    keep = rows[("TA-GRPO, gated pools", "hard pass@4")]
    # per seed: gated gain 0.5, TA-GRPO's 1.0 -> 0.5 - 0.8 = -0.3
    assert keep[3].startswith("-30.0") and keep[5] == "not met"
    partial = {(r[1], r[2].split(":")[0]): r for r in goal(goal_checks(runs, bases, 4)) if r[0] == "0.6"}  # 3 of 10
    assert partial[("TA-GRPO, gated pools", "hard pass@4")][5] == "undecided (3 of 10 seeds)"
    # the largest shortfall: the kept gain's bound -30.0 misses 0 by 30.0 pp (the rest's -22.1 misses -2 by 20.1)
    assert closest(goal_checks(runs, bases, 4)) == [
        ["TA-GRPO, gated pools", "0 of 2", "30.0", "hard pass@4: gain minus 80% of TA-GRPO's at 0.6"]]


def test_weighted_files_the_chosen_lambda_arm_twice():
    runs = {(0.6, 0, "ta_grpo_w50"): "w50", (0.6, 0, "ta_grpo_w25"): "w25", (0.9, 0, "ta_grpo_w25"): "w25"}
    rates = {0.6: {"weighted_arm": "ta_grpo_w50"}, 0.9: {"weighted_arm": "ta_grpo_w25"}}
    out = with_weighted(runs, rates)
    assert out[(0.6, 0, "weighted")] == "w50" and out[(0.9, 0, "weighted")] == "w25"


def test_arm_points_and_the_map_on_hand_made_cells(tmp_path):
    from tagrpo.experiments.regime_v2_report import arm_points, plot_map

    # questions 0-1 hard (base 0 of 4), 2-3 the rest; equal-sampling rest 4/4 and 2/4 on both seeds (pass@1 0.75),
    # hard 0; TA-GRPO rest 2/4 (0.5), hard pass@4 on question 0 only (1 of 2 hard questions: 0.5)
    bases = {(0.6, s): {"counts": [0, 0, 2, 2], "samples": 4} for s in range(2)}
    runs = {}
    for s in range(2):
        runs[(0.6, s, "equal_sampling")] = _cell("equal_sampling", 0.6, s, [0, 0, 4, 2])
        runs[(0.6, s, "ta_grpo")] = _cell("ta_grpo", 0.6, s, [1, 0, 2, 2])
    points = arm_points(runs, bases, 0.6, 4)
    assert list(points) == ["ta_grpo", "equal_sampling"]  # the declared order
    (rest, hard) = points["equal_sampling"]
    assert rest["mean"] == 0.75 and rest["n"] == 2 and hard["mean"] == 0.0
    (rest, hard) = points["ta_grpo"]
    assert rest["mean"] == 0.5 and hard["mean"] == 0.5
    plot_map(runs, bases, 4, str(tmp_path / "map.png"), "a title")
    assert (tmp_path / "map.png").stat().st_size > 10_000


def test_the_map_draws_every_declared_arm_in_its_own_colour(tmp_path, monkeypatch):
    import matplotlib.axes

    from tagrpo.experiments.regime_v2_report import ARM_ORDER, plot_map

    bases = {(0.6, s): {"counts": [0, 0, 2, 2], "samples": 4} for s in range(2)}
    runs = {(0.6, s, arm): _cell(arm, 0.6, s, [1, 0, 2, 2]) for s in range(2) for arm in ARM_ORDER}
    colours = []
    drawn = matplotlib.axes.Axes.errorbar
    monkeypatch.setattr(matplotlib.axes.Axes, "errorbar",
                        lambda self, *a, **kw: colours.append(kw["color"]) or drawn(self, *a, **kw))
    plot_map(runs, bases, 4, str(tmp_path / "map.png"), "every arm")
    assert len(colours) == len(ARM_ORDER) - 1  # "weighted" is the chosen lambda arm, drawn under its own name
    assert len(set(colours)) == len(colours)


def test_the_pilots_two_rates_stay_two_arms_in_the_report():
    from tagrpo.experiments.regime_report import index
    from tagrpo.experiments.regime_v2_report import pilot_by_rate
    from tagrpo.experiments.report import label

    pilot = design.PILOT["arm"]
    cells = []
    for lr, right in zip(design.PILOT["rates"], (1, 3), strict=True):  # the same knob and seed, one cell per rate
        cell = _cell(pilot, 0.6, 0, [0, right])
        cell["spec"]["learning_rate"] = lr
        cells.append(cell)
    cells.append(_cell("ta_grpo", 0.6, 0, [2, 2]))
    runs, _ = index(pilot_by_rate(cells))
    assert {a: c["counts"] for (_, _, a), c in runs.items()} == {
        f"{pilot}@3e-05": [0, 1], f"{pilot}@0.0001": [0, 3], "ta_grpo": [2, 2]}
    assert cells[0]["spec"]["arm"] == pilot  # the cells themselves (saved in the JSON) keep their arm
    assert label(f"{pilot}@3e-05") == "TA-GRPO, per-variant groups at 3e-05"
    assert set(design.PILOT_ARMS) == {f"{pilot}@3e-05", f"{pilot}@0.0001"}
