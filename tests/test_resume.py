"""Training resumes from the command line with the same trajectory, after a real ``kill -9``: full-parameter and
with a LoRA adapter."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from conftest import pool_rows
from safetensors.torch import load_file

from tagrpo.trainer.checkpoint import STATE_FILE
from tagrpo.trainer.run import resolve_resume

WORKER = str(Path(__file__).parent / "train_worker.py")
LORA = ("use_peft=true", "lora_r=4", "lora_alpha=8", "lora_dropout=0.1", "beta=0.01")  # dropout: RNG state resumes


def _args(model, data, out, *extra):
    return [f"model={model}", f"data={data}", f"output_dir={out}", "template=plain", "num_generations=2",
            "max_steps=6", "save_strategy=steps", "save_steps=2", "max_completion_length=6", "learning_rate=1e-2",
            "logging_steps=1", "report_to=[]", "disable_tqdm=true", "seed=0", *extra]


def _steps(out) -> list[dict]:
    lines = (Path(out) / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if "tagrpo/rollouts" in r]


def _logged_step(out) -> int:
    """The last step in ``metrics.jsonl`` as another process writes it (a line being written may be torn)."""
    steps = [0]
    for line in (Path(out) / "metrics.jsonl").read_text().splitlines():
        try:
            steps.append(json.loads(line)["step"])
        except json.JSONDecodeError:
            pass
    return max(steps)


def _run(args, **kw):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    return subprocess.run([sys.executable, WORKER, *args], env=env, capture_output=True, text=True, **kw)


@pytest.mark.slow
@pytest.mark.parametrize("extra", [(), LORA], ids=["full", "lora"])
def test_kill_9_then_resume_gives_the_uninterrupted_trajectory(model_dirs, tmp_path, extra):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in pool_rows(num_questions=6)))
    model = model_dirs["qwen3"]
    straight = _run(_args(model, data, tmp_path / "a", *extra))
    assert straight.returncode == 0, straight.stderr[-2000:]

    out = tmp_path / "b"
    kill_at = 3 if extra else 4  # after the first checkpoint (step 2); at 4, most often while checkpoint-4 is saved
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    proc = subprocess.Popen([sys.executable, WORKER, *_args(model, data, out, *extra)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600  # seconds on an idle machine; far more loaded
    while not ((out / "metrics.jsonl").exists() and _logged_step(out) >= kill_at):
        assert proc.poll() is None, f"the run ended (status {proc.returncode}) before step {kill_at}"
        assert time.monotonic() < deadline, f"step {kill_at} not logged in 600 s"
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL and (out / "checkpoint-2").is_dir() and not (out / "final").exists()
    (out / "checkpoint-6").mkdir(exist_ok=True)  # as if killed while saving step 6: a folder without all its files
    (out / "checkpoint-6" / "config.json").write_text("{}")
    resumed = _run(_args(model, data, out, *extra, "resume_from_checkpoint=auto"))
    assert resumed.returncode == 0, resumed.stderr[-2000:]

    a, b = _steps(tmp_path / "a"), _steps(out)
    assert [s["step"] for s in b] == [1, 2, 3, 4, 5, 6]  # each step once: the lines past the checkpoint went
    assert [s["tagrpo/rollouts"] for s in b] == [8.0 * k for k in range(1, 7)]  # counted on from the checkpoint
    assert [s["loss"] for s in b] == [s["loss"] for s in a] and [s["reward"] for s in b] == [s["reward"] for s in a]
    weights = "adapter_model.safetensors" if extra else "model.safetensors"
    wa = load_file(str(tmp_path / "a" / "final" / weights))
    wb = load_file(str(out / "final" / weights))
    assert wa and wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
    if extra:  # the adapter alone is saved, and it trained
        assert not (out / "final" / "model.safetensors").exists() and all(".lora_" in k for k in wa)
        assert any(wa[k].abs().sum() > 0 for k in wa if "lora_B" in k)


def test_resume_values(tmp_path):
    assert resolve_resume(None, str(tmp_path)) is None and resolve_resume("auto", str(tmp_path)) is None
    (tmp_path / "checkpoint-3").mkdir()  # incomplete: no tagrpo_state.json
    assert resolve_resume("auto", str(tmp_path)) is None
    with pytest.raises(ValueError, match="no complete checkpoint-\\* directory"):
        resolve_resume(True, str(tmp_path))
    for step in (2, 10):
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}" / STATE_FILE).write_text("{}")
    (tmp_path / "checkpoint-12").mkdir()  # killed while saving: skipped, though the latest
    (tmp_path / "checkpoint-9.bak").mkdir()
    assert resolve_resume("auto", str(tmp_path)) == str(tmp_path / "checkpoint-10")
    assert resolve_resume("true", str(tmp_path)) == str(tmp_path / "checkpoint-10")
    with pytest.raises(ValueError, match="no such checkpoint directory"):
        resolve_resume(str(tmp_path / "checkpoint-7"), str(tmp_path))


def test_the_sampler_draws_an_epochs_order_from_the_epoch_alone():
    from trl.trainer.utils import RepeatSampler

    from tagrpo.trainer.checkpoint import EpochRepeatSampler, epoch_sampler

    def fresh():
        return epoch_sampler(RepeatSampler(list(range(7)), mini_repeat_count=1, shuffle=True, seed=3))

    straight = fresh()
    orders = []
    for epoch in range(3):
        straight.set_epoch(epoch)
        orders.append(list(straight))
    assert isinstance(straight, EpochRepeatSampler) and orders[0] != orders[1] != orders[2]
    resumed = fresh()  # a run resumed in the third epoch: a new sampler, told its epoch
    resumed.set_epoch(2)
    assert list(resumed) == orders[2]
    plain = RepeatSampler(list(range(7)), mini_repeat_count=1, shuffle=True, seed=3)
    assert [list(plain) for _ in range(3)] == orders  # what an uninterrupted TRL sampler draws
    unshuffled = epoch_sampler(RepeatSampler(list(range(7)), mini_repeat_count=1, shuffle=False))
    unshuffled.set_epoch(1)
    assert list(unshuffled) == list(range(7))


@pytest.mark.slow
def test_a_resume_past_the_first_epoch_keeps_the_uninterrupted_trajectory(model_dirs, tmp_path):
    """6 questions, one a step: checkpoint-6 ends epoch 1; resumed from it, steps 7-9 see epoch 2's questions."""
    import shutil

    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in pool_rows(num_questions=6)))
    model, extra = model_dirs["qwen3"], ("max_steps=9", "save_steps=3")
    straight = _run(_args(model, data, tmp_path / "a", *extra))
    assert straight.returncode == 0, straight.stderr[-2000:]
    shutil.copytree(tmp_path / "a" / "checkpoint-6", tmp_path / "b" / "checkpoint-6")
    resumed = _run(_args(model, data, tmp_path / "b", *extra, "resume_from_checkpoint=auto"))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    a, b = _steps(tmp_path / "a"), _steps(tmp_path / "b")
    assert [s["step"] for s in b] == [7, 8, 9]
    assert [(s["loss"], s["reward"]) for s in b] == [(s["loss"], s["reward"]) for s in a[6:]]
    wa, wb = (load_file(str(tmp_path / d / "final" / "model.safetensors")) for d in "ab")
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
