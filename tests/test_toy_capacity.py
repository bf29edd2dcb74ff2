"""The capacity point's design (``tagrpo.experiments.study_capacity``), its cell plan (``studies/toy_capacity.py``)
and its verdicts on hand-made cells: no training."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from script_loader import load_script

from tagrpo.experiments import study_capacity as design
from tagrpo.experiments import study_v2 as v2
from tagrpo.experiments.capacity_report import build_base, judge

ROOT = Path(__file__).resolve().parents[1]


def _args(**over):
    base = dict(work_dir="w", samples=64, sweep_lrs=list(design.SWEEP_LRS), seeds=list(design.SEEDS),
                overrides={"base": "outputs/b", "base_sha256": "ab"})
    return argparse.Namespace(**{**base, **over})


def test_the_base_has_at_least_four_times_the_parameters():
    from transformers import AutoModelForCausalLM

    from tagrpo.toy.model import build_tiny_model
    from tagrpo.toy.regime_base import SHIPPED

    shipped = sum(p.numel() for p in AutoModelForCausalLM.from_pretrained(SHIPPED).parameters())
    from transformers import AutoTokenizer

    big = build_tiny_model(AutoTokenizer.from_pretrained(SHIPPED), "qwen3", design.BASE["hidden_size"], 4)
    assert sum(p.numel() for p in big.parameters()) >= 4 * shipped


def test_the_cell_plan():
    script = load_script(ROOT / "studies" / "toy_capacity.py")
    args = _args()
    grid = script.sweep_specs(args)
    assert len(grid) == len(design.SWEEP_SEEDS) * (1 + 3 * len(design.SWEPT_ARMS))  # 2 x (1 + 21) = 44
    assert all(s["base"] == "outputs/b" and s["knob"] == design.KNOB for s, _ in grid)
    assert all(s["forms"] for s, _ in grid if s["kind"] == "base")  # the premise on every base cell
    assert all("/b/validation/" in p for _, p in grid)  # under the base's own folder
    rates = {design.KNOB: {**{a: 3e-5 for a in design.SWEPT_ARMS}, "weighted": 1e-4, "weighted_arm": "ta_grpo_w50"}}
    rates[design.KNOB]["ta_grpo"] = 1e-4
    assert len(script.sweep_specs(args, rates)) == len(grid) + 2  # the edge rule, both sweep seeds
    study = script.study_specs(args, rates)
    arms = [s.get("arm") for s, _ in study]
    assert len(study) == 5 * (1 + len(design.ARMS)) and arms.count("ta_grpo_w50") == 5 and "weighted" not in arms


def _cell(arm, seed, counts, knob=design.KNOB, samples=4):
    return {"spec": {"kind": "arm", "arm": arm, "knob": knob, "seed": seed, "learning_rate": 1e-5},
            "counts": counts, "samples": samples}


def test_the_cost_change_and_the_family_by_hand():
    # Questions 0-1 hard (base 0 of 4), 2-3 the rest. On the 4x base TA-GRPO's rest pass@1 is below equal-sampling
    # by 0.125 on seeds 0 and 1 and 0.25 on seed 2 (mean -1/6); on the small base by 0.5 on both seeds (-0.5).
    # Welch: a = [-1/8, -1/8, -1/4] (var 1/192, se^2 1/576), b = [-1/2, -1/2] (se 0): mean +1/3, df 2, se 1/24,
    # t(0.975, 2) = 4.3027: +33.3 [+15.4, +51.3] pp.
    bases = {(design.KNOB, s): {"counts": [0, 0, 2, 2], "samples": 4} for s in range(3)}
    runs = {}
    for s, rest in enumerate(([4, 3], [4, 3], [4, 2])):
        runs[(design.KNOB, s, "equal_sampling")] = _cell("equal_sampling", s, [0, 0, 4, 4])
        runs[(design.KNOB, s, "ta_grpo")] = _cell("ta_grpo", s, [4, 4, *rest])
    small_bases = {(design.KNOB, s): {"counts": [0, 0, 2, 2], "samples": 4} for s in range(2)}
    small = {(design.KNOB, s, a): _cell(a, s, c) for s in range(2)
             for a, c in (("equal_sampling", [0, 0, 4, 4]), ("ta_grpo", [0, 0, 2, 2]))}
    rows = judge(runs, bases, (small, small_bases), 4)
    assert len(rows) == 2 + 2 * len(v2.CANDIDATES) + 1 and all(r["primary"] for r in rows)
    cost = next(r for r in rows if r["ref"] == design.COST)
    assert cost["mean"] == pytest.approx(1 / 3) and cost["n"] == 5
    assert cost["lo"] == pytest.approx(1 / 3 - 4.302653 / 24, abs=1e-6)
    ta_rest = next(r for r in rows if r["arm"] == "ta_grpo" and r["ref"] == "equal_sampling" and r["subset"] == "rest")
    assert ta_rest["mean"] == pytest.approx(-1 / 6) and ta_rest["n"] == 3
    ta_hard = next(r for r in rows if r["arm"] == "ta_grpo" and r["subset"] == "hard")
    assert ta_hard["mean"] == 1.0  # pass@4 1 on both hard questions against 0, every seed
    assert all("p_holm" in r for r in rows)  # one family


def test_render_only_needs_the_base_record(tmp_path):
    args = argparse.Namespace(work_dir=str(tmp_path), render_only=True)
    with pytest.raises(SystemExit, match="no base record"):
        build_base(args)
    (tmp_path / "base.json").write_text('{"sha256": "x"}\n{"sha256": "y"}\n')
    assert build_base(args) == {"sha256": "y"}  # the latest record


def test_the_cost_change_sentence_follows_the_verdict_not_the_sign():
    from tagrpo.experiments.capacity_report import COST_SAYS

    # every verdict a "greater" claim can get has its own sentence; an undecided +0.4 pp must not read "shrinks"
    assert set(COST_SAYS) == {"reproduced", "refuted", "inconclusive"}
    assert "shrinks" not in COST_SAYS["inconclusive"] and "shrinks" in COST_SAYS["reproduced"]
