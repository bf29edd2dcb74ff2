"""``benchmarks/toy_regime.py`` end to end at a tiny size: every cell runs once, a rerun reuses them all."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_regime_study_runs_every_cell_once_and_resumes(tmp_path):
    cmd = [sys.executable, str(ROOT / "benchmarks" / "toy_regime.py"), "--work-dir", str(tmp_path / "cells"),
           "--out", str(tmp_path / "out"), "--rl-steps", "1", "--questions", "2", "--samples", "2",
           "--sweep-lrs", "1e-4", "--seeds", "0", "--exploratory-seeds", "0", "--workers", "2"]
    first = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=900).stdout
    # sweep: 7 arms x 1 rate x 2 sweep seeds + 2 base cells; study: 3 settings x (base + 4 primary + 3 exploratory)
    # + 2 adaptive arms at the hardest
    assert "sweep: 16 cells, 0 done before, 16 to run" in first
    assert "study: 26 cells, 0 done before, 26 to run" in first
    again = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=300).stdout
    assert "sweep: 16 cells, 16 done before, 0 to run" in again and "study: 26 cells, 26 done before" in again
    saved = json.loads((tmp_path / "out" / "toy_regime.json").read_text())
    assert len(saved["cells"]) == 26 and set(saved["learning_rates"]) >= {"ta_grpo", "equal_sampling", "grpo_long"}
    primary = [v for v in saved["verdicts"] if v["primary"]]
    assert len(primary) == 30 and all(v["n"] <= 1 for v in primary)  # one seed: no interval, no verdict
    assert all(v["verdict"] == "inconclusive" for v in primary)
    assert any(c[0].startswith("the clip acts") for c in saved["conditions"])
    md = (tmp_path / "out" / "toy_regime.md").read_text()
    for section in ("## The premise at each setting", "## Primary contrasts", "## Learning-rate sweep",
                    "## Adaptive pools", "## Per-form accuracy after training"):
        assert section in md
    assert (tmp_path / "out" / "toy_regime.png").stat().st_size > 10_000


def test_cells_are_filed_by_base_and_keyed_by_its_recipe(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import toy_regime

    from tagrpo.toy.regime_base import recipe_id

    spec = {"kind": "base", "knob": 0.6, "seed": 3, "split": "test", "samples": 2, "forms": False}
    assert toy_regime.cell_path("w", spec) == "w/test/h0.6/seed3/base/result.jsonl"
    probe = {**spec, "base": "outputs/probe19/slip40/"}
    assert toy_regime.cell_path("w", probe) == "w/slip40/test/h0.6/seed3/base/result.jsonl"
    argv = ["toy_regime.py", "--render-only", "--sweep-only", "--work-dir", str(tmp_path)]
    monkeypatch.setattr(sys, "argv", argv)
    seen = []
    monkeypatch.setattr(toy_regime, "finished", lambda specs: seen.extend(specs) or {})
    toy_regime.main()
    assert seen and all(s["base_recipe"] == recipe_id() for s, _ in seen)
    cached = {"spec": {**seen[0][0], "base_recipe": "an-older-base"}}
    (tmp_path / "cell.jsonl").write_text(json.dumps(cached) + "\n")
    assert toy_regime.done(str(tmp_path / "cell.jsonl"), seen[0][0]) is None  # another base's cell is not reused
