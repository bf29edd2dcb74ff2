"""The regime study's design and verdict logic (``tagrpo.experiments.study``), against values worked out by hand."""

from __future__ import annotations

import math

import pytest
import torch

from tagrpo.core import group_diagnostics
from tagrpo.experiments import study
from tagrpo.experiments.study import Contrast


def test_subset_pass_by_hand():
    # base: question 0 never solved (hard), questions 1 and 2 solved at least once (the rest)
    counts, base = [0, 2, 4], [0, 1, 3]
    assert study.subset_pass(counts, 4, base, "all", 1) == pytest.approx((0 + 0.5 + 1) / 3)
    assert study.subset_pass(counts, 4, base, "hard", 1) == 0.0
    assert study.subset_pass(counts, 4, base, "rest", 1) == pytest.approx(0.75)
    # pass@2 of 2 right in 4: 1 - C(2,2)/C(4,2) = 5/6; of 4 in 4: 1
    assert study.subset_pass(counts, 4, base, "rest", 2) == pytest.approx((5 / 6 + 1) / 2)
    assert math.isnan(study.subset_pass(counts, 4, [1, 1, 1], "hard", 1))  # no hard question


def test_unknown_subset_lists_the_valid_ones():
    with pytest.raises(ValueError, match="'all', 'hard', 'rest'"):
        study.subset_pass([0], 1, [0], "easy", 1)


def test_learning_rate_choice_averages_seeds_and_breaks_ties_low():
    rows = [
        {"arm": "a", "learning_rate": 1e-4, "seed": 0, "objective": 0.3},
        {"arm": "a", "learning_rate": 1e-4, "seed": 1, "objective": 0.5},  # mean 0.40
        {"arm": "a", "learning_rate": 3e-4, "seed": 0, "objective": 0.6},
        {"arm": "a", "learning_rate": 3e-4, "seed": 1, "objective": 0.1},  # mean 0.35: best single seed, not best
        {"arm": "b", "learning_rate": 1e-4, "seed": 0, "objective": 0.2},
        {"arm": "b", "learning_rate": 1e-3, "seed": 0, "objective": 0.2},  # a tie: the smaller rate
    ]
    assert study.choose_learning_rates(rows) == {"a": 1e-4, "b": 1e-4}


def test_sweep_objective_is_pass1_plus_pass16():
    assert study.sweep_objective({"1": 0.1, "16": 0.5, "64": 0.9}) == pytest.approx(0.6)


def test_primary_family_is_declared_per_setting():
    family = study.primary_contrasts(64)
    # h=0: three references x pass@1, pass@64 overall; h=0.6, 0.9: the same overall and on the hard subset
    assert len(family) == 3 * 2 + 2 * 3 * 2 * 2
    assert all(c.primary and c.arm == "ta_grpo" and c.k in (1, 64) for c in family)
    assert {c.ref for c in family} == {"equal_sampling", "grpo_long", "ta_grpo_control"}
    assert not [c for c in family if c.knob == 0.0 and c.subset == "hard"]
    assert not any(c.primary for c in study.exploratory_contrasts(64))


def _cell(counts):
    return {"counts": counts, "samples": 1}


def _cells(diffs_all: list[int]):
    """Three seeds at h=0.6, ten questions, one sample each: pass@1 = the share of 1s. Question 0 is hard (the base
    gets it wrong); TA-GRPO solves it in every seed, equal-sampling never; on the rest TA-GRPO is ahead of
    equal-sampling by ``diffs_all[s] - 1`` questions."""
    base = {(0.6, s): _cell([0] + [1] * 9) for s in range(3)}
    cells = {}
    for s, d in enumerate(diffs_all):
        cells[(0.6, s, "ta_grpo")] = _cell([1] + [1] * 5 + [0] * 4)
        cells[(0.6, s, "equal_sampling")] = _cell([0] + [1] * (6 - d) + [0] * (3 + d))
    return cells, base


def test_judge_pairs_seeds_and_holm_corrects_the_primary_family():
    cells, bases = _cells([1, 2, 3])
    contrasts = [Contrast(0.6, "ta_grpo", "equal_sampling", "all", 1, primary=True),
                 Contrast(0.6, "ta_grpo", "equal_sampling", "hard", 1, primary=True),
                 Contrast(0.6, "ta_grpo", "base", "hard", 1)]
    overall, hard, vs_base = study.judge(cells, bases, contrasts)
    # overall: ta 6/10 each seed; es (6-d)/10 with d = 1, 2, 3 -> differences 0.1, 0.2, 0.3
    assert overall["values"] == pytest.approx([0.1, 0.2, 0.3])
    assert overall["mean"] == pytest.approx(0.2)
    # t = 0.2 / (0.1 / sqrt 3) = 3.4641, two-sided with 2 df: p = 0.07418; half-width t_.975(2) = 4.3027 x 0.0577
    assert overall["p"] == pytest.approx(0.07418, abs=1e-4)
    assert overall["hi"] - overall["mean"] == pytest.approx(4.3027 * 0.1 / math.sqrt(3), abs=1e-3)
    # hard: 1 - 0 in every seed, no spread: p = 0; Holm over two: the smaller p x2, the larger x1 (capped at the max)
    assert hard["values"] == [1.0, 1.0, 1.0] and hard["p"] == 0.0 and hard["p_holm"] == 0.0
    assert overall["p_holm"] == pytest.approx(0.07418, abs=1e-4)
    assert overall["verdict"] == "inconclusive" and hard["verdict"] == "reproduced"
    assert "p_holm" not in vs_base and vs_base["family"] == "exploratory" and vs_base["values"] == [1.0, 1.0, 1.0]


def test_holm_doubles_the_smaller_of_two_p_values():
    cells, bases = _cells([1, 2, 3])
    cells2, _ = _cells([1, 1, 2])
    cells.update({(0.9, s, a): c for (h, s, a), c in cells2.items()})
    bases.update({(0.9, s): b for (h, s), b in bases.items()})
    rows = study.judge(cells, bases, [Contrast(h, "ta_grpo", "equal_sampling", "all", 1, primary=True)
                                      for h in (0.6, 0.9)])
    small, large = sorted(rows, key=lambda r: r["p"])
    assert small["p_holm"] == pytest.approx(2 * small["p"])
    assert large["p_holm"] == pytest.approx(max(large["p"], 2 * small["p"]))


def test_a_seed_missing_its_reference_is_left_out():
    cells, bases = _cells([1, 2, 3])
    del cells[(0.6, 2, "equal_sampling")]
    (row,) = study.judge(cells, bases, [Contrast(0.6, "ta_grpo", "equal_sampling", "all", 1)])
    assert row["n"] == 2 and row["values"] == pytest.approx([0.1, 0.2])


def test_gain_condition_is_judged_on_the_lower_bound():
    bases = {(0.6, s): _cell([0, 1, 1, 0, 1]) for s in range(3)}  # rest: questions 1, 2, 4 (pass@1 = 1 at base)
    down = {(0.6, s, "grpo"): _cell([0, 1, 0, 0, 1]) for s in range(3)}  # rest pass@1 2/3: a loss of 1/3
    assert study.gain_condition(down, bases, 0.6, "grpo")["status"] == "not met"
    bases = {(0.6, s): _cell([0, 1, 1, 1, 1]) for s in range(3)}
    up = {(0.6, s, "grpo"): _cell([1, 1, 1, 1, 1]) for s in range(3)}  # rest unchanged: gain exactly 0
    gain = study.gain_condition(up, bases, 0.6, "grpo")
    assert gain["mean"] == 0.0 and gain["status"] == "not met"


def test_about_equal_needs_both_one_sided_bounds_inside_the_margin():
    assert study.about_equal([0.001, -0.002, 0.0, 0.001, -0.001])["equivalent"]
    assert not study.about_equal([0.03, -0.03, 0.02, -0.02])["equivalent"]  # centred on 0, too wide
    assert not study.about_equal([0.025, 0.026, 0.024])["equivalent"]  # tight, outside


def test_reference_rescue_split_by_hand():
    # equal-sampling's first K=4 samples of q0 as the "group", all 8 as the "pool": the rescue split by sample size
    rewards = torch.tensor([[0, 0, 0, 0, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1, 1, 1],
                            [0, 1, 0, 0, 0, 0, 0, 0]], dtype=torch.float)  # (B, G)
    diag = group_diagnostics(rewards.view(4, 2, 4))  # (B, G/K, K)
    assert diag["rescued/from_zero"] == 0.25 and diag["rescued/from_one"] == 0.25 and diag["rescued"] == 0.5


def test_reference_group_size_is_checked():
    from tagrpo.trainer.config import TAGRPOConfig

    with pytest.raises(ValueError, match="reference_group_size"):
        TAGRPOConfig(output_dir="/tmp/x", num_rephrasings=0, num_generations=6, reference_group_size=4,
                     per_device_train_batch_size=6, use_cpu=True, report_to=[])
    with pytest.raises(ValueError, match="num_rephrasings=0"):
        TAGRPOConfig(output_dir="/tmp/x", num_rephrasings=3, num_generations=4, reference_group_size=4,
                     per_device_train_batch_size=16, use_cpu=True, report_to=[])


def test_make_demo_runs_the_study_hardest_setting_at_its_swept_rates():
    """``tagrpo demo --preset regime`` is the study's setting at h = 0.9 with the learning rates study v2's sweep
    chose there (studies/results/toy_regime_v2.json; the first study's, swept at 0.6, for the arms v2 did not sweep)
    and shows issue 32's recommended variant, the first of v2's committed "closest" ranking: a rerun of either
    that changes them fails here."""
    import json
    from pathlib import Path

    from tagrpo.experiments.arms import ARMS, RECOMMENDED
    from tagrpo.experiments.demo import DemoConfig
    from tagrpo.experiments.report import label

    results = Path(__file__).resolve().parents[1] / "studies/results"
    v1 = json.loads((results / "toy_regime.json").read_text())
    v2 = json.loads((results / "toy_regime_v2.json").read_text())
    at = {k: v for k, v in v2["learning_rates"]["0.9"].items() if k in ARMS}
    cfg = DemoConfig(preset="regime")
    assert cfg.world == "regime" and cfg.hard_share == study.HARDEST and cfg.num_iterations == 2
    assert {arm: cfg.learning_rate_of(arm) for arm in at} == at
    assert {arm: cfg.learning_rate_of(arm) for arm in v1["learning_rates"] if arm not in at} == {
        arm: rate for arm, rate in v1["learning_rates"].items() if arm not in at}
    first = v2["closest"][0][0]
    chosen = {v2["learning_rates"][h]["weighted_arm"] for h in ("0.6", "0.9")}
    assert first == label(RECOMMENDED) or (first == label("weighted") and chosen == {RECOMMENDED})
    assert cfg.arm_list[-1] == RECOMMENDED and "ta_grpo" in cfg.arm_list
    cell = next(c for c in v1["cells"] if c["spec"].get("arm") == "ta_grpo")
    assert (cell["max_steps"], cell["train_questions"], cell["samples"]) == (cfg.rl_steps, cfg.train_questions,
                                                                          cfg.eval_samples)
