"""The declared design of the second real-model study (``tagrpo/experiments/real_study_v2.py``,
``studies/real_study_v2.py``): seeds, arms, sweep and edge rule, the cells each phase asks for, the contrasts and
the Holm family (on cells worked out by hand). Nothing is trained."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from script_loader import load_script

from tagrpo.data.jsonl import read_jsonl
from tagrpo.evaluation.stats import equivalence
from tagrpo.experiments import real_report, real_study, real_task
from tagrpo.experiments import real_report_v2 as report
from tagrpo.experiments import real_study_v2 as design

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def script():
    return load_script(ROOT / "studies" / "real_study_v2.py")


def _args(tmp_path, **changes) -> argparse.Namespace:
    args = argparse.Namespace(device="cpu", work_dir=str(tmp_path), overrides={}, samples=design.EVAL_SAMPLES,
                              steps=design.STEPS, arms=list(design.ARMS), sweep_lrs=list(design.SWEEP_LRS),
                              edge=True, seeds=list(design.SEEDS), exploratory_seeds=list(design.EXPLORATORY_SEEDS),
                              q0="spelled")
    for key, value in changes.items():
        setattr(args, key, value)
    return args


def test_seeds_sweep_and_settings_are_the_issues():
    assert design.SEEDS == tuple(range(10)) and design.EXPLORATORY_SEEDS == tuple(range(5))
    assert set(design.EXPLORATORY_SEEDS) <= set(design.SEEDS)  # exploratory arms pair with the primary ones
    assert len(design.SWEEP_SEEDS) >= 2 and not set(design.SWEEP_SEEDS) & set(design.SEEDS)
    assert design.SWEEP_STEPS == design.STEPS == 32  # the sweep at the study's full length
    assert design.SWEEP_LRS == (1e-5, 3e-5, 1e-4)
    assert design.STUDY["scheme"] == "pairs" and design.STUDY["gradient_checkpointing"] is False
    assert real_study.STUDY["scheme"] == "ordered"  # the first study keeps its own splits


def test_arms_primary_exploratory_and_the_issue32_placeholder():
    assert design.PRIMARY_ARMS == ("ta_grpo", "equal_sampling", "ta_grpo_control")
    from tagrpo.experiments.arms import RECOMMENDED

    assert design.ISSUE32_VARIANT == RECOMMENDED and design.ISSUE32_VARIANT in design.VARIANTS
    assert set(design.EXPLORATORY_ARMS) == {"pooled_no_anchor", "grpo", "grpo_more_data", design.ISSUE32_VARIANT}
    assert set(design.ARMS) == set(design.PRIMARY_ARMS) | set(design.EXPLORATORY_ARMS)
    assert design.steps_of("grpo_more_data", 32) == 80 and design.steps_of("ta_grpo", 32) == 32


@pytest.mark.parametrize("arm", [*design.ARMS, *design.VARIANTS])
def test_every_arm_builds_its_trainer_config(arm, tmp_path):
    arms = {**design.ARMS, **design.VARIANTS}
    steps = design.steps_of(arm, design.STEPS) if arm in design.ARMS else design.STEPS
    job, config = real_study.trainer_job(design.STUDY, arm, "spelled", "unused-model", str(tmp_path), steps, 1e-5,
                                         seed=0, device="cpu", arms=arms)
    rows = read_jsonl(str(tmp_path / "train.jsonl"))
    assert len(rows) == design.STUDY["questions"] * steps
    assert config.gradient_checkpointing is False and config.max_steps == 2 * steps
    rollouts = design.STUDY["questions"] * config.pool_size  # per generation step
    assert rollouts == {"grpo": 8, "grpo_more_data": 8}.get(arm, 32)
    assert config.beta == (0.001 if arm == "ta_grpo_kl" else 0.0)
    held = set(real_task.split("test")) | set(real_task.split("validation"))
    assert not {(r["a"], r["b"]) for r in rows} & held


def test_edge_rule_adds_the_rate_beyond_the_chosen_edge_only():
    grid = design.SWEEP_LRS
    assert design.at_edge({"a": 1e-5}, "a", grid) == design.LOW_EDGE_LR
    assert design.at_edge({"a": 1e-4}, "a", grid) == design.HIGH_EDGE_LR
    assert design.at_edge({"a": 3e-5}, "a", grid) is None
    assert design.at_edge({"a": 3e-6}, "a", (3e-6, *grid)) is None  # the edge rate itself: no further edge


def test_phases_ask_for_the_declared_cells(script, tmp_path):
    args = _args(tmp_path)
    grid = script.sweep_specs(args)
    assert len(grid) == len(design.ARMS) * 3 * len(design.SWEEP_SEEDS)
    assert {s["split"] for s, _ in grid} == {"validation"} and {s["steps"] for s, _ in grid} == {32, 80}
    rates = {arm: 3e-5 for arm in design.ARMS} | {"ta_grpo": 1e-5, "grpo": 1e-4}
    edged = script.sweep_specs(args, rates)
    extra = {(s["arm"], s["learning_rate"]) for s, _ in edged} - {(s["arm"], s["learning_rate"]) for s, _ in grid}
    assert extra == {("ta_grpo", design.LOW_EDGE_LR), ("grpo", design.HIGH_EDGE_LR)}
    study = script.study_specs(args, rates)
    kinds = [(s["kind"], s.get("arm"), s["seed"]) for s, _ in study]
    assert sum(k == "base" for k, _, _ in kinds) == 10
    for arm in design.PRIMARY_ARMS:
        assert sorted(seed for _, a, seed in kinds if a == arm) == list(design.SEEDS)
    for arm in design.EXPLORATORY_ARMS:
        assert sorted(seed for _, a, seed in kinds if a == arm) == list(design.EXPLORATORY_SEEDS)
    assert all(len({p for _, p in specs}) == len(specs) for specs in (grid, edged, study))  # one cell, one path
    primary, exploratory = script.study_specs(args, rates, "primary"), script.study_specs(args, rates, "exploratory")
    assert primary + exploratory == study  # the two tiers partition the study, primary first
    assert {s.get("arm") for s, _ in primary} == {None, *design.PRIMARY_ARMS}
    assert {s["arm"] for s, _ in exploratory} == set(design.EXPLORATORY_ARMS)
    assert {s["arm"] for s, _ in script.sweep_specs(args, arms=["grpo"])} == {"grpo"}
    spec = next(s for s, _ in study if s.get("arm") == "ta_grpo")
    assert spec["arm_config"] == design.ARMS["ta_grpo"] and spec["setting"]["scheme"] == "pairs"
    assert "workers" not in spec["setting"] and spec["learning_rate"] == 1e-5 and spec["split"] == "test"


def _cell(kind, seed, counts, arm=None):
    spec = {"kind": kind, "seed": seed, "split": "test"}
    if arm:
        spec.update(arm=arm, learning_rate=1e-5)
    return {"spec": spec, "counts": counts, "samples": 8, "pass_at_k": {}}


def _study_cells():
    cells = [_cell("base", s, [1, 0]) for s in design.SEEDS]
    for s in design.SEEDS:
        cells += [_cell("arm", s, [4 + s % 3, 2], "ta_grpo"), _cell("arm", s, [4, 1], "equal_sampling"),
                  _cell("arm", s, [3, 1 + s % 2], "ta_grpo_control")]
    for s in design.EXPLORATORY_SEEDS:
        cells += [_cell("arm", s, [2, 2], arm) for arm in design.EXPLORATORY_ARMS]
    return cells


def test_holm_family_is_the_four_primary_contrasts_on_ten_seeds():
    runs, bases = real_report.index(_study_cells())
    rows = report.verdicts(runs, bases)
    primary = [r for r in rows if r["primary"]]
    assert {(r["arm"], r["ref"], r["k"]) for r in primary} == set(design.primary_contrasts())
    assert {(r["arm"], r["ref"], r["k"]) for r in primary} == {
        ("ta_grpo", "equal_sampling", 1), ("ta_grpo", "equal_sampling", 8),
        ("ta_grpo", "ta_grpo_control", 1), ("ta_grpo", "ta_grpo_control", 8)}
    assert all(r["n"] == 10 and r["p_holm"] >= r["p"] for r in primary)
    es = next(r for r in primary if r["ref"] == "equal_sampling" and r["k"] == 1)
    assert es["values"][:3] == pytest.approx([1 / 16, 2 / 16, 3 / 16])  # (4 + s % 3 + 2) / 16 - 5 / 16
    exploratory = [r for r in rows if not r["primary"]]
    assert all("p_holm" not in r for r in exploratory)
    against = {(r["arm"], r["ref"], r["k"]): r for r in exploratory if r["subset"] == "all"}
    for arm in design.EXPLORATORY_ARMS:
        assert against[("ta_grpo", arm, 1)]["n"] == 5 and against[("ta_grpo", arm, 8)]["n"] == 5
    assert against[(design.ISSUE32_VARIANT, "equal_sampling", 1)]["n"] == 5
    assert against[("ta_grpo", "base", 1)]["n"] == 10 and against[("grpo", "base", 1)]["n"] == 5


def test_the_post_hoc_subsets_split_by_the_same_seeds_base_zeros():
    # _study_cells: the base solves question 0 (1 of 8) and not question 1, so q1 is hard and q0 the rest on every
    # seed. Hard, pass@1: TA-GRPO 2/8 against equal-sampling 1/8 (+1/8 on every seed) and the control (1 + s % 2)/8;
    # pass@8: any correct sample of 8 is 1, so 0 against both. Rest, pass@1: (4 + s % 3)/8 - 4/8 = (s % 3)/8.
    runs, bases = real_report.index(_study_cells())
    rows = report.verdicts(runs, bases)
    post = {(r["ref"], r["subset"], r["k"]): r for r in rows if r["subset"] != "all"}
    assert set(post) == {(ref, sub, k) for _, ref, sub, k in design.subset_contrasts()}
    assert all(not r["primary"] and "p_holm" not in r and r["n"] == 10 for r in post.values())
    assert post[("equal_sampling", "hard", 1)]["values"] == pytest.approx([1 / 8] * 10)
    assert post[("ta_grpo_control", "hard", 1)]["values"] == pytest.approx([(1 - s % 2) / 8 for s in design.SEEDS])
    assert post[("equal_sampling", "hard", 8)]["values"] == pytest.approx([0] * 10)
    assert post[("equal_sampling", "rest", 1)]["values"] == pytest.approx([(s % 3) / 8 for s in design.SEEDS])
    assert len([r for r in rows if r["primary"]]) == 4  # the Holm family is unchanged


@pytest.mark.parametrize("step, verdict", [(1, "no difference"), (3, "inconclusive")])
def test_an_undecided_primary_contrast_inside_the_margin_is_no_difference(step, verdict):
    # TA-GRPO's pass@1 on q0 minus equal-sampling's, and minus the control's, alternates +step/16, -step/16 over the
    # 10 seeds (2 questions x 8 samples): mean 0, standard error step/48. TOST at +-5 pp: t = 0.05 x 48 / step = 2.4
    # (step 1; between t(9)'s 0.975 and 0.99 quantiles 2.262 and 2.821, so 0.01 < p < 0.025) or 0.8 (step 3;
    # p > 0.2). pass@8 is 1 on both questions for every arm: TOST p 0. Holm over the four: the two equal non-zero
    # p-values are doubled (ranks 3 and 4 of 4: 2p, then max(2p, p)).
    cells = [_cell("base", s, [1, 0]) for s in design.SEEDS]
    for s in design.SEEDS:
        up = step * (s % 2) - step * ((s + 1) % 2)
        cells += [_cell("arm", s, [4 + up, 4], "ta_grpo"), _cell("arm", s, [4, 4], "equal_sampling"),
                  _cell("arm", s, [4, 4], "ta_grpo_control")]
    cells += [_cell("arm", s, [4, 4], arm) for s in design.EXPLORATORY_SEEDS for arm in design.EXPLORATORY_ARMS]
    runs, bases = real_report.index(cells)
    judged = report.verdicts(runs, bases)
    rows = {(r["ref"], r["k"]): r for r in judged if r["primary"]}
    raw = equivalence(rows[("equal_sampling", 1)]["values"], design.EQUIVALENCE_MARGIN)["p"]
    assert (0.01 < raw < 0.025) if step == 1 else raw > 0.2
    for ref in design.PRIMARY_REFS:
        assert rows[(ref, 1)]["mean"] == pytest.approx(0) and rows[(ref, 1)]["verdict"] == verdict
        assert rows[(ref, 1)]["p_equivalence_holm"] == pytest.approx(min(1.0, 2 * raw))
        assert rows[(ref, 8)]["verdict"] == "no difference" and rows[(ref, 8)]["p_equivalence_holm"] == 0
    assert all("p_equivalence_holm" not in r for r in judged if not r["primary"])
    assert ("no difference (equivalent" in real_report.summary(judged)) and ("equivalence test's Holm p 0," in
                                                                             real_report.summary(judged))


def test_a_decided_primary_contrast_stays_decided_inside_the_margin():
    # 4 questions x 8 samples: TA-GRPO solves one sample more than equal-sampling on every seed, +1/32 = 3.1 pp
    # with no spread: the t-test decides it (p 0: reproduced) and TOST puts it inside +-5 pp (p 0) as well; the
    # verdict stays reproduced (only an undecided contrast becomes "no difference").
    cells = [_cell("base", s, [1, 0, 0, 0]) for s in design.SEEDS]
    for s in design.SEEDS:
        cells += [_cell("arm", s, [5, 4, 4, 4], "ta_grpo"), _cell("arm", s, [4, 4, 4, 4], "equal_sampling"),
                  _cell("arm", s, [4, 4, 4, 4], "ta_grpo_control")]
    runs, bases = real_report.index(cells)
    row = next(r for r in report.verdicts(runs, bases) if r["primary"] and r["ref"] == "equal_sampling" and
               r["k"] == 1)
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
           "mean": 0.07, "lo": -0.3, "hi": 0.4, "p_holm": 0.5}
    text = real_report.summary([row])
    assert "undecided" in text and "no difference" not in text
    assert "no difference (equivalent" in real_report.summary([{**row, "verdict": "no difference",
                                                                  "p_equivalence_holm": 0.01}])
