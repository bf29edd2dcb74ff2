"""``benchmarks/gpu_step.py`` runs on a CPU with its tiny configuration and writes what it promises."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from script_loader import load_script

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_step.py"


@pytest.mark.slow
def test_gpu_step_script_on_cpu(tmp_path):
    cmd = [sys.executable, str(SCRIPT), "--config", "tiny", "--steps", "2",
           "--questions", "1", "--length", "8", "--out", str(tmp_path)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    result = json.loads((tmp_path / "gpu_step.json").read_text())
    assert [r["method"] for r in result["runs"]] == ["tagrpo", "grpo"]
    for run in result["runs"]:  # 1 question x 32 completions x 8 forced tokens per step
        assert run["completion_tokens"] == [256.0, 256.0] and len(run["step_s"]) == 2
    assert result["ratio_step_s"] > 0 and "| TA-GRPO (N=3, G=8) |" in (tmp_path / "gpu_step.md").read_text()
    assert result["checks"] == {}  # --runs defaults to the timing alone
    assert not (tmp_path / "gpu_step.partial.json").exists()  # removed once the whole result is written


@pytest.mark.slow
def test_server_and_zero3_runs_on_cpu(tmp_path):
    """ZeRO-3 launched for real (one CPU process, DeepSpeed's CPU accelerator); the server run skipped, with why."""
    cmd = [sys.executable, str(SCRIPT), "--config", "tiny", "--runs", "server,zero3", "--steps", "2",
           "--questions", "1", "--length", "8", "--out", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads((tmp_path / "gpu_step.json").read_text())
    assert "runs" not in result and list(result["checks"]) == ["server", "zero3"]
    server = result["checks"]["server"]["status"]
    if importlib.util.find_spec("vllm") is None:
        assert server == "skipped: vllm not installed"
    else:
        assert server.startswith("skipped: needs 2 GPUs, found 0")
    zero3 = result["checks"]["zero3"]
    if importlib.util.find_spec("deepspeed") is None:
        assert zero3["status"] == "skipped: deepspeed not installed"
    else:
        assert zero3["status"] == "passed" and zero3["processes"] == 1 and len(zero3["step_s"]) == 2
        assert zero3["checks"] == {"one_generation_per_step": True, "whole_pools": True, "loss_on_q0": True,
                                   "deepspeed_zero3": True, "parameters_partitioned": True}
    assert f"| server | {server} |" in (tmp_path / "gpu_step.md").read_text()
    assert not (tmp_path / "gpu_step.partial.json").exists()


@pytest.fixture
def gpu_step():
    return load_script(SCRIPT)


def hide(monkeypatch, *packages, present=()):
    """``importlib.util.find_spec`` as if ``packages`` were not installed and ``present`` were."""
    real = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        if name in packages:
            return None
        return object() if name in present else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_a_missing_package_skips_its_run(gpu_step, monkeypatch):
    hide(monkeypatch, "deepspeed", "vllm")
    assert gpu_step.zero3_run("unused", None, False) == {"run": "zero3", "status": "skipped: deepspeed not installed"}
    assert gpu_step.server_run("unused", None, False) == {"run": "server", "status": "skipped: vllm not installed"}
    hide(monkeypatch, "requests", present=("vllm",))
    assert gpu_step.server_run("unused", None, False)["status"] == "skipped: requests not installed"


def test_server_run_needs_two_gpus(gpu_step, monkeypatch):
    hide(monkeypatch, present=("vllm", "requests"))
    monkeypatch.setattr(gpu_step.torch.cuda, "device_count", lambda: 1)
    status = gpu_step.server_run("unused", None, True)["status"]
    assert status.startswith("skipped: needs 2 GPUs, found 1") and "NCCL" in status


def test_a_failed_check_fails_the_script(gpu_step, monkeypatch, tmp_path):
    monkeypatch.setitem(gpu_step.CHECKS, "zero3", lambda *a: {"run": "zero3", "status": "failed: whole_pools"})
    assert gpu_step.main(["--config", "tiny", "--runs", "zero3", "--out", str(tmp_path)]) == 1
    assert json.loads((tmp_path / "gpu_step.json").read_text())["checks"]["zero3"]["status"] == "failed: whole_pools"
    with pytest.raises(SystemExit):
        gpu_step.main(["--config", "tiny", "--runs", "zero3,fsdp", "--out", str(tmp_path)])


def test_whole_pools_reads_the_layout(gpu_step):
    layout = [(7, v) for v in range(4) for _ in range(8)]
    assert gpu_step.whole_pools(layout) and gpu_step.whole_pools(layout + [(8, q) for _, q in layout])
    assert not gpu_step.whole_pools(layout[:-1])  # a split pool
    assert not gpu_step.whole_pools(layout[8:] + layout[:8])  # q0's block not first
    assert not gpu_step.whole_pools(layout[:16] + [(8, v) for _, v in layout[16:]])  # two questions in one pool
