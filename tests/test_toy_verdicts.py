"""Verdicts on the paper's claims: intervals and rules worked by hand, one test per regime."""

from __future__ import annotations

import math

import pytest

from tagrpo.toy.verdicts import MARGIN, interval, judge, metric, requirements, verdict


def test_interval_by_hand():
    # values 1, 2, 3: mean 2, sd 1, n 3; t(0.975, 2) = 4.302653 -> half width 4.302653 / sqrt(3) = 2.484138.
    ci = interval([1.0, 2.0, 3.0])
    assert ci["mean"] == 2.0 and ci["n"] == 3
    assert ci["lo"] == pytest.approx(2.0 - 2.484138, abs=1e-6) and ci["hi"] == pytest.approx(2.0 + 2.484138, abs=1e-6)
    one = interval([0.5])
    assert one["mean"] == 0.5 and math.isnan(one["lo"]) and math.isnan(one["hi"])


@pytest.mark.parametrize(
    ("lo", "hi", "kind", "expected"),
    [
        (0.01, 0.05, "greater", "reproduced"),
        (-0.05, -0.01, "greater", "refuted"),
        (-0.01, 0.05, "greater", "inconclusive"),
        (-0.05, -0.01, "less", "reproduced"),
        (0.01, 0.05, "less", "refuted"),
        (-MARGIN + 0.001, 0.05, "matches", "reproduced"),  # within the non-inferiority margin
        (-0.1, -MARGIN - 0.001, "matches", "refuted"),  # worse by more than the margin
        (-0.05, 0.01, "matches", "inconclusive"),
        (math.nan, math.nan, "greater", "inconclusive"),  # one seed never decides
    ],
)
def test_verdict_rules(lo, hi, kind, expected):
    assert verdict(lo, hi, kind) == expected


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
    req = {r["text"].split(":")[0]: r for r in requirements(results)}
    gain = req["GRPO raises held-out pass@1 over the base by >= +0.10"]
    assert gain["mean"] == pytest.approx((0.10 + 0.30 + 0.0) / 3) and gain["status"] == "met"


def test_question_interval_by_hand_is_clipped_to_the_range():
    from tagrpo.toy.report import question_interval

    # 2 samples, correct counts 2, 2, 1 -> pass@1 per question 1, 1, 0.5: mean 0.833333, sd 0.288675,
    # half width 1.96 * 0.288675 / sqrt(3) = 0.326667 -> [0.506667, 1.160000], the upper end clipped to 1.
    ci = question_interval({"counts": [2, 2, 1], "samples": 2}, 1)
    assert ci["mean"] == pytest.approx(0.833333, abs=1e-6) and ci["n"] == 3
    assert ci["lo"] == pytest.approx(0.506667, abs=1e-6) and ci["hi"] == 1.0
