"""``studies/real_study.py`` end to end on SmolLM2-135M-Instruct at a smoke size: every phase once, resumable."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(1200)  # 453 s idle on a 2-core AVX2 CPU (fp32, no native bf16); the two runs' own limits first
def test_real_study_runs_every_phase_and_a_rerun_reuses_the_cells(smollm2, tmp_path):
    cmd = [sys.executable, str(ROOT / "studies" / "real_study.py"), "--work-dir", str(tmp_path / "cells"),
           "--out", str(tmp_path / "out"), "--steps", "1", "--questions", "4", "--seeds", "0", "--sweep-lrs", "1e-5",
           "--arms", "ta_grpo,equal_sampling", "--workers", "2"]
    first = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=900).stdout
    assert "premise: 1 cells, 0 done before" in first
    assert "sweep: 2 cells, 0 done before, 2 to run" in first and "study: 3 cells, 0 done before, 3 to run" in first
    again = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=300).stdout
    assert "sweep: 2 cells, 2 done before, 0 to run" in again and "study: 3 cells, 3 done before, 0 to run" in again
    saved = json.loads((tmp_path / "out" / "real_study.json").read_text())
    assert saved["q0"] in ("symbolic", "words", "narrative", "spelled")
    assert set(saved["learning_rates"]) == {"ta_grpo", "equal_sampling"}
    arms = [c for c in saved["cells"] if c["spec"]["kind"] == "arm"]
    assert {c["spec"]["arm"] for c in arms} == {"ta_grpo", "equal_sampling"}
    for cell in arms:
        assert cell["rollouts"] == 32 and cell["optimizer_updates"] == 2  # 4 questions x 8; two halves of one batch
        assert len(cell["counts"]) == 4 and set(cell["forms"]) == {"symbolic", "words", "narrative", "spelled"}
    primary = [v for v in saved["verdicts"] if v["primary"]]
    assert len(primary) == 4 and all(v["verdict"] == "inconclusive" for v in primary)  # one seed: no verdict
    md = (tmp_path / "out" / "real_study.md").read_text()
    for section in ("## Premise", "## Verdicts", "## Every arm", "## Per-form accuracy", "## Learning-rate sweep"):
        assert section in md
