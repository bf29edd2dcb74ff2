"""Verdicts on the paper's claims: intervals and rules worked by hand, one test per regime."""

from __future__ import annotations

import math

import pytest

from tagrpo.evaluation.verdicts import ALPHA, MARGIN, verdict
from tagrpo.experiments.verdicts import judge, metric, requirements


@pytest.mark.parametrize(
    ("mean", "p", "kind", "expected"),
    [
        (0.03, 0.01, "greater", "reproduced"),
        (-0.03, 0.01, "greater", "refuted"),
        (0.03, 0.20, "greater", "inconclusive"),
        (0.03, ALPHA, "greater", "inconclusive"),  # p must be below alpha
        (-0.03, 0.01, "less", "reproduced"),
        (0.03, 0.01, "less", "refuted"),
        (-MARGIN + 0.001, 0.01, "matches", "reproduced"),  # p tested against -MARGIN: within the margin
        (-MARGIN - 0.001, 0.01, "matches", "refuted"),  # worse by more than the margin
        (0.0, 0.30, "matches", "inconclusive"),
        (0.1, math.nan, "greater", "inconclusive"),  # one seed never decides
    ],
)
def test_verdict_rules(mean, p, kind, expected):
    assert verdict(mean, p, kind) == expected


def test_verdict_rejects_an_unknown_kind():
    with pytest.raises(ValueError, match="'greater', 'less', 'matches'"):
        verdict(0.0, 1.0, "better")


def _run(p1, p16, steps=(), scope="pool", diversity=0.2):
    return {"pass_at_k": {"1": p1, "16": p16}, "diversity": diversity, "steps": list(steps), "advantage_scope": scope}


def _steps(key, values):
    return [{f"tagrpo/{key}": v} for v in values]


def test_metric_rises_and_second_half():
    steps = [{"tagrpo/original/zero_std": v, "tagrpo/original/all_one": v / 2, "tagrpo/pool/zero_std": 1 - v,
              "tagrpo/variant/zero_std": 0.5} for v in (0.2, 0.2, 0.4, 0.4, 0.6, 0.6, 0.8, 0.8)]
    run = _run(0.1, 0.5, steps)
    # quarters of 8 steps are 2 steps: first (0.2, 0.2), last (0.8, 0.8) -> rise 0.6; all_one rises half that.
    assert metric(run, "uniform_rise") == pytest.approx(0.6) and metric(run, "all_one_rise") == pytest.approx(0.3)
    # pool scope: pool/zero_std over the 2nd half = mean(0.4, 0.4, 0.2, 0.2) = 0.3; variant scope reads its groups.
    assert metric(run, "zero_advantage_2nd_half") == pytest.approx(0.3)
    assert metric({**run, "advantage_scope": "variant"}, "zero_advantage_2nd_half") == 0.5
    assert metric(run, "pass@16") == 0.5 and math.isnan(metric(run, "pass@32"))


def test_judge_pairs_by_seed():
    # TA-GRPO - GRPO pass@1 per seed: +0.10, +0.12, +0.08 -> mean 0.10, sd 0.02, half 4.302653*0.02/sqrt(3).
    # pass@16: -0.05, -0.06, -0.07 -> mean -0.06, half 4.302653*0.01/sqrt(3) = 0.0248: below 0, refuted.
    results = []
    for s, (g, t) in enumerate([(0.30, 0.40), (0.50, 0.62), (0.20, 0.28)]):
        runs = {"base": _run(0.2, 0.8), "grpo": _run(g, 0.7), "ta_grpo": _run(t, 0.65 - 0.01 * s)}
        results.append({"runs": runs, "premise": {"symbolic": 0.8, "spelled": 0.4, "renamed": 0.41}})
    rows = {(r["metric"], r["ref"]): r for r in judge(results, 16) if r["number"] == 1}
    p1 = rows[("pass@1", "grpo")]
    assert p1["mean"] == pytest.approx(0.10) and p1["hi"] - p1["mean"] == pytest.approx(4.302653 * 0.02 / 3**0.5)
    assert p1["verdict"] == "reproduced" and rows[("pass@16", "grpo")]["verdict"] == "refuted"
    assert all(r["arm"] in ("grpo", "ta_grpo") for r in judge(results, 16))  # claims on absent arms are skipped
    # t = 0.10 / (0.02 / sqrt(3)) = sqrt(75); df 2: p = 1 - t / sqrt(t^2 + 2) (exploratory: not adjusted)
    assert p1["family"] == "exploratory" and p1["p"] == pytest.approx(1 - (75 / 77) ** 0.5)
    req = {r["text"].split(" (")[0]: r for r in requirements(results)}
    gain = req["GRPO raises held-out pass@1 over the base by >= +0.10"]
    # gains 0.10, 0.30, 0.00: mean 0.1333 >= 0.10, but the lower bound (sd 0.15275) is -0.2461: not met
    assert gain["mean"] == pytest.approx((0.10 + 0.30 + 0.0) / 3) and gain["status"] == "not met"
    assert gain["lo"] == pytest.approx(0.13333 - 4.302653 * 0.152753 / 3**0.5, abs=1e-4)


def test_primary_family_is_holm_corrected():
    # TA-GRPO minus: equal-sampling +0.10, +0.12, +0.08 (p 0.0131), GRPO-long +0.05, +0.15, +0.10 (p 0.0742),
    # the control 0.00, +0.02, -0.02 (p 1), at pass@1 and pass@16 alike: six primary p-values.
    # Holm: 6 x 0.0131 = 0.078, then 0.078, 4 x 0.0742 = 0.297, 0.297, 1, 1: no primary claim survives.
    results = []
    for s, (d_eq, d_long, d_ctrl) in enumerate([(0.10, 0.05, 0.0), (0.12, 0.15, 0.02), (0.08, 0.10, -0.02)]):
        t = 0.5 + 0.01 * s
        runs = {"ta_grpo": _run(t, t), "equal_sampling": _run(t - d_eq, t - d_eq),
                "grpo_long": _run(t - d_long, t - d_long), "ta_grpo_control": _run(t - d_ctrl, t - d_ctrl)}
        results.append({"runs": runs})
    rows = {(r["metric"], r["ref"]): r for r in judge(results, 16)}
    eq = rows[("pass@1", "equal_sampling")]
    assert eq["family"] == "primary" and eq["p"] == pytest.approx(1 - (75 / 77) ** 0.5)
    assert eq["p_holm"] == pytest.approx(6 * (1 - (75 / 77) ** 0.5)) and eq["verdict"] == "inconclusive"
    long = rows[("pass@16", "grpo_long")]
    assert long["p_holm"] == pytest.approx(4 * (1 - (12 / 14) ** 0.5)) and long["verdict"] == "inconclusive"
    assert rows[("pass@1", "ta_grpo_control")]["p_holm"] == 1.0
    assert {r["family"] for r in rows.values()} == {"primary"}


def test_control_equivalence_by_tost():
    # renamed - spelled: 0.00, +0.01, -0.01: TOST within 0.02 has p = sf(sqrt(12), 2) = 0.037: met
    results = [{"runs": {"base": _run(0.4, 0.8)}, "premise": {"symbolic": 0.9, "spelled": 0.4, "renamed": 0.4 + d}}
               for d in (0.0, 0.01, -0.01)]
    control = [r for r in requirements(results) if r["text"].startswith("base pass@1: renamed")][0]
    assert control["p_tost"] == pytest.approx((1 - (12 / 14) ** 0.5) / 2) and control["status"] == "met"
    gap = [r for r in requirements(results) if r["text"].startswith("base pass@1: symbolic")][0]
    assert gap["status"] == "met" and gap["lo"] == pytest.approx(0.5)  # no spread: the interval is the mean


def test_question_interval_by_hand_is_clipped_to_the_range():
    from tagrpo.experiments.report import question_interval

    # 2 samples, correct counts 2, 2, 1 -> pass@1 per question 1, 1, 0.5: mean 0.833333, sd 0.288675,
    # half width 1.96 * 0.288675 / sqrt(3) = 0.326667 -> [0.506667, 1.160000], the upper end clipped to 1.
    ci = question_interval({"counts": [2, 2, 1], "samples": 2}, 1)
    assert ci["mean"] == pytest.approx(0.833333, abs=1e-6) and ci["n"] == 3
    assert ci["lo"] == pytest.approx(0.506667, abs=1e-6) and ci["hi"] == 1.0
