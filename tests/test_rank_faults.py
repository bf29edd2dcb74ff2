"""One of two ranks dies with SIGKILL in a DDP and in an FSDP2 run (two gloo processes under ``accelerate
launch``, as tests/test_fsdp.py launches them); the launcher exits nonzero within a bound, the last complete
checkpoint is whole, and ``resume_from_checkpoint=auto`` continues to the uninterrupted run's weights and metrics.

The kill is at a known point, not a timed one: ``fault_worker.KillAfterCheckpoint`` makes rank R SIGKILL itself when
step 3 begins, once rank 0 has finished checkpoint-2. DDP loses rank 1 (the survivor is rank 0, which writes the
checkpoints), FSDP2 loses rank 0. The survivor does not hang: its next collective fails with gloo's "Connection
closed by peer" or torchrun's agent, which watches its workers, terminates it (SIGTERM) first; either way the
launcher exits 1 (docs/gpu.md, "When one rank dies"). The bound below turns a hang into a failure, not a stuck CI.

The 4 steps stay in the first epoch (12 questions, 3 pools a step); a resume past an epoch boundary is
tests/test_resume.py's.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import pool_rows
from safetensors.torch import load_file

from tagrpo.common.serving import free_port

HERE = Path(__file__).parent
CONFIGS = HERE.parent / "configs" / "accelerate"
BOUND_S = 180  # one launch; the runs take 20-35 s on two loaded cores
MODES = {"ddp": ("ddp.yaml", [], 1), "fsdp": ("fsdp.yaml", ["--fsdp-on-cpu"], 0)}  # config, flags, rank killed


def launch(config: str, flags: list[str], *args: str) -> subprocess.CompletedProcess:
    """``accelerate launch`` of tests/fault_worker.py on two CPU processes; fails the test if it outlives BOUND_S
    (after killing the launcher's whole process group: the launcher and both ranks)."""
    env = {**os.environ, "PYTHONPATH": f"{HERE}:{HERE.parent}", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(CONFIGS / config),
           "--main_process_port", str(free_port()), "--num_processes", "2", "--mixed_precision", "no",
           str(HERE / "fault_worker.py"), *flags, *args]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=BOUND_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"accelerate launch {config} {' '.join(flags)} did not exit within {BOUND_S} s (a rank hung)")
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)


def _args(model, data, out, *extra):
    return [f"model={model}", f"data={data}", f"output_dir={out}", "template=plain", "num_generations=2",
            "per_device_train_batch_size=4", "gradient_accumulation_steps=3", "max_steps=4", "save_strategy=steps",
            "save_steps=2", "max_completion_length=6", "learning_rate=1e-2", "logging_steps=1", "report_to=[]",
            "disable_tqdm=true", "seed=0", *extra]


def _steps(out) -> list[dict]:
    return [r for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines()) if "tagrpo/rollouts" in r]


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(MODES))
def test_kill_9_of_one_rank_then_resume_gives_the_uninterrupted_run(model_dirs, tmp_path, mode):
    config, flags, victim = MODES[mode]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in pool_rows(num_questions=12)))
    model = model_dirs["qwen3"]
    straight = launch(config, flags, *_args(model, data, tmp_path / "a"))
    assert straight.returncode == 0, straight.stderr[-4000:]

    out = tmp_path / "b"
    killed = launch(config, [*flags, f"--kill-rank={victim}", "--kill-after=2"], *_args(model, data, out))
    assert killed.returncode == 1, killed.stderr[-4000:]
    # torchrun's summary of its failed workers: the victim, killed by SIGKILL (and the survivor, stopped)
    assert re.search(rf"rank\s*: {victim} \(local_rank: {victim}\)\s*exitcode\s*: -9 .*\(SIGKILL\)", killed.stderr), \
        killed.stderr[-4000:]
    assert [s["step"] for s in _steps(out)] == [1, 2]  # step 3 needs both ranks: it never completed
    assert (out / "checkpoint-2" / "tagrpo_state.json").is_file()
    assert not (out / "checkpoint-4").exists() and not (out / "final").exists()

    resumed = launch(config, flags, *_args(model, data, out, "resume_from_checkpoint=auto"))
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    a, b = _steps(tmp_path / "a"), _steps(out)
    assert [s["step"] for s in b] == [1, 2, 3, 4]  # each step once
    assert [s["tagrpo/rollouts"] for s in b] == [24.0 * k for k in range(1, 5)]  # counted over both ranks, resumed
    assert [s["loss"] for s in b] == [s["loss"] for s in a] and [s["reward"] for s in b] == [s["reward"] for s in a]
    assert len({s["loss"] for s in a}) == 4  # the steps differ: a resume replaying steps 1-2 would not match
    wa, wb = (load_file(str(run / "final" / "model.safetensors")) for run in (tmp_path / "a", out))
    assert wa and wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
