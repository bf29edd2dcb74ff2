"""The shipped DeepSpeed configs (configs/accelerate/zero2.yaml, zero3.yaml) on two CPU processes (gloo):
TA-GRPO's pools stay whole and anchored on q0 under ZeRO-2 and ZeRO-3, ZeRO really partitions what its stage
says, the final model saves whole, and the two stages train the same weights.

accelerate 1.16 runs DeepSpeed only when the Trainer does not ask for the CPU (``use_cpu=True`` makes
``AcceleratorState`` drop the plugin) and, on a machine without an accelerator, finds no distributed backend of its
own (``PartialState`` then counts one process while DeepSpeed's engine sees two); ``tests/deepspeed_worker.py``
passes ``use_cpu=False, ddp_backend="gloo", bf16=False`` and the launch sets ``DS_ACCELERATOR=cpu``. DeepSpeed's
CPU accelerator compiles a shared-memory op (``deepspeed_shm_comm``) on its first use on a machine, about a
minute on two cores, cached under ``~/.cache/torch_extensions``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from test_fsdp import assert_two_rank_run

from tagrpo.common.serving import free_port

HERE = Path(__file__).parent
CONFIGS = HERE.parent / "configs" / "accelerate"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("deepspeed") is None,
                       reason="deepspeed is not installed (pip install -e '.[deepspeed]')"),
]


@pytest.fixture(scope="module")
def zero_runs(model_dirs, tmp_path_factory):
    """Each config launched once, on first use: ``{config: (completed process, output folder)}``."""
    runs = {}

    def run(config: str):
        if config not in runs:
            out = tmp_path_factory.mktemp(config.removesuffix(".yaml"))
            env = {**os.environ, "PYTHONPATH": f"{HERE}:{HERE.parent}", "OMP_NUM_THREADS": "1",
                   "DS_ACCELERATOR": "cpu"}
            cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(CONFIGS / config),
                   "--main_process_port", str(free_port()), "--num_processes", "2", "--mixed_precision", "no",
                   str(HERE / "deepspeed_worker.py"), model_dirs["qwen3"], str(out)]
            runs[config] = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=400), out
        return runs[config]

    return run


@pytest.mark.parametrize("config, stage", [("zero2.yaml", 2), ("zero3.yaml", 3)])
def test_shipped_zero_config_keeps_pools_whole_and_anchored(model_dirs, zero_runs, config, stage):
    proc, out = zero_runs(config)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "terminate called" not in proc.stderr, proc.stderr[-4000:]

    ranks = [json.loads((out / f"rank{k}.json").read_text()) for k in (0, 1)]
    models = [json.loads((out / f"rank{k}_model.json").read_text()) for k in (0, 1)]
    for model in models:
        assert model["distributed_type"] == "DEEPSPEED" and model["engine"] == "DeepSpeedEngine"
        assert model["zero_stage"] == stage and model["elements"] > 0
        assert 2 * model["local_optimizer_elements"] == model["elements"]  # fp32 copy and Adam: half on each rank
        if stage == 3:  # every parameter partitioned, half of its elements here
            assert model["partitioned_parameters"] == model["parameters"] > 0
            assert 2 * model["local_parameter_elements"] == model["elements"]
        else:  # ZeRO-2 keeps a whole copy of the weights on each rank
            assert model["partitioned_parameters"] == 0
    assert_two_rank_run(ranks, model_dirs["qwen3"], out)
    for k in (0, 1):  # the exit hook destroyed the group; DeepSpeed's ZeRO-3 state keeps its object
        exit_state = json.loads((out / f"rank{k}_exit.json").read_text())
        assert exit_state == {"initialized": False, "group_object_alive": stage == 3}


def test_zero2_and_zero3_train_the_same_model(model_dirs, zero_runs):
    (p2, out2), (p3, out3) = zero_runs("zero2.yaml"), zero_runs("zero3.yaml")
    assert p2.returncode == 0 and p3.returncode == 0, (p2.stderr[-2000:], p3.stderr[-2000:])
    steps = [[json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()] for out in (out2, out3)]
    losses = [[r["loss"] for r in run if "loss" in r] for run in steps]
    assert len(losses[0]) == 2 and losses[0] == pytest.approx(losses[1], abs=1e-6)
    base = load_file(str(Path(model_dirs["qwen3"]) / "model.safetensors"))
    w2, w3 = (load_file(str(out / "final" / "model.safetensors")) for out in (out2, out3))
    assert all(torch.allclose(w2[k], w3[k], atol=1e-4) for k in base)  # fp32 both: rounding in the reductions only
