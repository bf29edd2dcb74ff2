"""The verdict rule of every study (``tagrpo.evaluation.verdicts``), one test per regime, and the demo report's
numbers (``tagrpo.demo.metrics``, ``report``), worked by hand."""

from __future__ import annotations

import math

import pytest

from tagrpo.demo.metrics import metric
from tagrpo.evaluation.verdicts import ALPHA, MARGIN, verdict


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


def test_a_matches_verdict_is_against_the_studys_own_margin():
    # -3 pp: worse than the default margin (2 pp) allows, within a study's 5 pp (the real model's)
    assert verdict(-0.03, 0.01, "matches") == "refuted"
    assert verdict(-0.03, 0.01, "matches", margin=0.05) == "reproduced"
    assert verdict(-0.03, 0.01, "greater", margin=0.05) == "refuted"  # the margin moves only the matches null


def test_verdict_rejects_an_unknown_kind():
    with pytest.raises(ValueError, match="'greater', 'less', 'matches'"):
        verdict(0.0, 1.0, "better")


def _run(p1, p16, steps=(), scope="pool", diversity=0.2):
    return {"pass_at_k": {"1": p1, "16": p16}, "diversity": diversity, "steps": list(steps), "advantage_scope": scope}


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
    assert metric(run, "diversity") == 0.2 and math.isnan(metric(_run(0.1, 0.5), "zero_advantage_2nd_half"))
    with pytest.raises(ValueError, match="unknown metric 'passk'"):
        metric(run, "passk")


def test_question_interval_by_hand_is_clipped_to_the_range():
    from tagrpo.demo.report import question_interval

    # 2 samples, correct counts 2, 2, 1 -> pass@1 per question 1, 1, 0.5: mean 0.833333, sd 0.288675,
    # half width 1.96 * 0.288675 / sqrt(3) = 0.326667 -> [0.506667, 1.160000], the upper end clipped to 1.
    ci = question_interval({"counts": [2, 2, 1], "samples": 2}, 1)
    assert ci["mean"] == pytest.approx(0.833333, abs=1e-6) and ci["n"] == 3
    assert ci["lo"] == pytest.approx(0.506667, abs=1e-6) and ci["hi"] == 1.0
