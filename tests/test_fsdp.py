"""The shipped accelerate configs on two CPU processes (gloo): TA-GRPO's pools stay whole and anchored on q0 under
DDP and under FSDP2, the final model saves whole, and the processes exit cleanly.

accelerate 1.16 ignores an FSDP config on a CPU (``AcceleratorState`` keeps ``MULTI_CPU`` and the model is wrapped
in DDP, without an error), so the FSDP run makes it keep the plugin (``fsdp_worker.honour_fsdp_on_cpu``) and the
test checks that the model really was sharded: every parameter a DTensor, each rank holding half of its elements.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import weakref
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from safetensors.torch import load_file

from tagrpo.common.serving import free_port
from tagrpo.trainer.shutdown import shutdown_distributed

HERE = Path(__file__).parent
CONFIGS = HERE.parent / "configs" / "accelerate"


def launch(config: str, model_dir: str, out: Path, *flags: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{HERE}:{HERE.parent}", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(CONFIGS / config),
           "--main_process_port", str(free_port()), "--num_processes", "2", "--mixed_precision", "no",
           str(HERE / "fsdp_worker.py"), model_dir, str(out), *flags]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("config", ["ddp.yaml", "fsdp.yaml"])
def test_shipped_config_keeps_pools_whole_and_anchored(model_dirs, tmp_path, config):
    sharded = config == "fsdp.yaml"
    proc = launch(config, model_dirs["qwen3"], tmp_path, *(["--fsdp-on-cpu"] if sharded else []))
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "terminate called" not in proc.stderr, proc.stderr[-4000:]

    ranks = [json.loads((tmp_path / f"rank{k}.json").read_text()) for k in (0, 1)]
    models = [json.loads((tmp_path / f"rank{k}_model.json").read_text()) for k in (0, 1)]
    for model in models:
        if sharded:  # FSDP2: every parameter a DTensor, each of the two ranks holding half of the elements
            assert model["distributed_type"] == "FSDP" and model["fully_sharded"]
            assert model["sharded_parameters"] == model["parameters"] > 0
            assert 2 * model["local_elements"] == model["full_elements"] > 0
        else:
            assert model["distributed_type"] == "MULTI_CPU" and not model["fully_sharded"]
    assert_two_rank_run(ranks, model_dirs["qwen3"], tmp_path)

    for k in (0, 1):  # the exit hook destroyed the group; FSDP2's DTensor caches keep its object (shutdown.py)
        exit_state = json.loads((tmp_path / f"rank{k}_exit.json").read_text())
        assert exit_state == {"initialized": False, "group_object_alive": sharded}


def test_the_exit_warning_is_only_for_gloo(tmp_path, caplog, monkeypatch):
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    group = weakref.ref(dist.group.WORLD)
    outside = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))  # keeps the group past the hook
    monkeypatch.setattr(dist, "get_backend", lambda *args: "nccl")  # as on GPUs, where gloo's threads play no part
    with caplog.at_level(logging.WARNING, logger="tagrpo.trainer.shutdown"):
        assert shutdown_distributed() is False
    assert caplog.text == "" and group() is not None
    del outside


def assert_two_rank_run(ranks: list[dict], base_dir, out) -> None:
    """Two ranks' two TA-GRPO steps (``mp_worker``'s reports): pools whole though they straddle the ranks, advantages
    over the pool, the loss on q0, 48 rollouts, and the final model in ``out`` gathered whole and trained."""
    assert all(r["world"] == 2 for r in ranks)
    for step in range(2):
        rows = ranks[0]["steps"][step]["generated"] + ranks[1]["steps"][step]["generated"]  # global order
        assert len(rows) == 24 and ranks[0]["steps"][step]["local_rows"] == 12
        for start in range(0, 24, 8):
            pool = rows[start : start + 8]
            assert len({q for q, _ in pool}) == 1, pool  # one question per pool, the middle one split over both ranks
            assert [int(v) for _, v in pool] == [0, 0, 1, 1, 2, 2, 3, 3]
        assert all(r["steps"][step]["advantages_match_core"] for r in ranks)
    for r in ranks:
        assert r["rollouts"] == 48
        assert r["loss_prompts"] and all(v == "0" for batch in r["loss_prompts"] for _, v in batch)
    base = load_file(str(Path(base_dir) / "model.safetensors"))
    final = load_file(str(Path(out) / "final" / "model.safetensors"))  # gathered whole, not one rank's shards
    assert all(final[k].shape == v.shape for k, v in base.items())
    assert any(not torch.equal(final[k], v) for k, v in base.items())  # the trained weights
