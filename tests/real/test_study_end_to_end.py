"""The study framework end to end on the real model: ``studies/real_study_v2.py`` (declaration ``real_v2``, task
``sums``) on SmolLM2-135M-Instruct at a smoke size: every phase once, resumable, each invocation's cell time logged,
no trained model left in the cells. The real tier's one end-to-end study test (the embedded world's runs in
``tests/``); on a CPU without native bf16 the smoke cells are fp32 (``--precision fp32``): this test checks the
phases, and fp32 there is faster than emulated bf16 (``tagrpo.common.bf16``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tagrpo.common.machine import native_bf16

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(1500)
def test_real_study_v2_runs_every_phase_and_a_rerun_reuses_the_cells(smollm2, tmp_path):
    cells = tmp_path / "cells"
    cmd = [sys.executable, str(ROOT / "studies" / "real_study_v2.py"), "--work-dir", str(cells), "--out",
           str(tmp_path / "out"), "--steps", "1", "--questions", "4", "--seeds", "0", "--exploratory-seeds", "0",
           "--sweep-lrs", "1e-5", "--no-edge", "--arms", "ta_grpo,grpo_more_data", "--workers", "2"]
    if not native_bf16("cpu"):
        cmd += ["--precision", "fp32"]
    first = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=1200).stdout
    for tier, arm_cells in (("primary", 2), ("exploratory", 1)):  # 1 rate x 2 sweep seeds each; the primary tier's
        assert f"sweep, {tier} arms: 2 cells, 0 done before, 2 to run" in first  # study also has the base cell
        assert f"study, {tier} arms: {arm_cells} cells, 0 done before, {arm_cells} to run" in first
    assert first.index("study, primary arms") < first.index("sweep, exploratory arms")  # primary verdicts first
    again = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=300).stdout
    assert re.findall(r"(\d+) to run on", again) == ["0"] * 7  # premise; sweep, edge rule and study per tier
    saved = json.loads((tmp_path / "out" / "real_study_v2.json").read_text())
    arms = {c["spec"]["arm"]: c for c in saved["results"] if c["spec"]["kind"] == "arm"}
    assert arms["ta_grpo"]["rollouts"] == 32 and arms["ta_grpo"]["optimizer_updates"] == 2
    assert arms["grpo_more_data"]["rollouts"] == 24  # ceil(2.5) = 3 generation steps of 4 questions x G=2
    assert set(arms["ta_grpo"]["forms"]) == set(saved["premise"]["accuracy"])
    invocations = [json.loads(line) for line in (cells / "invocations.jsonl").read_text().splitlines()]
    assert invocations[0]["cells_run"] == 8 and invocations[0]["cell_s"] > 0  # premise, 4 sweep, 3 study
    assert invocations[1]["cells_run"] == 0
    assert not list(cells.rglob("model.safetensors"))  # trained models are evaluated in memory, then removed
    md = (tmp_path / "out" / "real_study_v2.md").read_text()
    for section in ("## Premise", "## Primary contrasts", "## Exploratory contrasts", "## Every arm",
                    "## Per-form pass@1", "## Learning-rate sweep", "## Invocations"):
        assert section in md
