"""Pools stay whole across processes: two CPU processes under ``accelerate launch``.

In accelerate 1.15 ``accelerate launch --cpu --num_processes 2`` starts a single process (its simple launcher
needs mpirun for several CPU processes), so the test uses the torchrun-based launcher (``--multi_gpu``) with
``use_cpu=True`` in the config: two gloo processes, the same code path as several GPUs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tagrpo.common.serving import free_port

HERE = Path(__file__).parent


@pytest.mark.slow
def test_pools_whole_and_anchored_under_accelerate_launch(model_dirs, tmp_path):
    env = {**os.environ, "PYTHONPATH": f"{HERE}:{HERE.parent}", "OMP_NUM_THREADS": "1"}
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--main_process_port",
        str(free_port()),
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        str(HERE / "mp_worker.py"),
        model_dirs["qwen3"],
        str(tmp_path),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "terminate called" not in proc.stderr, proc.stderr[-4000:]
    for k in (0, 1):  # the trainer's exit hook destroyed the process group, object and threads, before finalization
        exit_state = json.loads((tmp_path / f"rank{k}_exit.json").read_text())
        assert exit_state == {"initialized": False, "group_object_alive": False}
    ranks = [json.loads((tmp_path / f"rank{k}.json").read_text()) for k in (0, 1)]
    assert all(r["world"] == 2 for r in ranks)
    for step in range(2):
        # The generation batch, in global order, is rank 0's rows followed by rank 1's.
        rows = ranks[0]["steps"][step]["generated"] + ranks[1]["steps"][step]["generated"]
        assert len(rows) == 24 and ranks[0]["steps"][step]["local_rows"] == 12
        for start in range(0, 24, 8):
            pool = rows[start : start + 8]
            assert len({q for q, _ in pool}) == 1, pool  # one question per pool, split over both ranks
            assert [int(v) for _, v in pool] == [0, 0, 1, 1, 2, 2, 3, 3]
        assert all(r["steps"][step]["advantages_match_core"] for r in ranks)
    for r in ranks:
        assert r["rollouts"] == 48  # counted over both processes
        assert r["loss_prompts"] and all(v == "0" for batch in r["loss_prompts"] for _, v in batch)
