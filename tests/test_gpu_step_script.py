"""``benchmarks/gpu_step.py`` runs on a CPU with its tiny configuration and writes what it promises."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_gpu_step_script_on_cpu(tmp_path):
    cmd = [sys.executable, str(ROOT / "benchmarks" / "gpu_step.py"), "--config", "tiny", "--steps", "2",
           "--questions", "1", "--length", "8", "--out", str(tmp_path)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    result = json.loads((tmp_path / "gpu_step.json").read_text())
    assert [r["method"] for r in result["runs"]] == ["tagrpo", "grpo"]
    for run in result["runs"]:  # 1 question x 32 completions x 8 forced tokens per step
        assert run["completion_tokens"] == [256.0, 256.0] and len(run["step_s"]) == 2
    assert result["ratio_step_s"] > 0 and "| TA-GRPO (N=3, G=8) |" in (tmp_path / "gpu_step.md").read_text()
    assert not (tmp_path / "gpu_step.partial.json").exists()  # removed once the whole result is written
