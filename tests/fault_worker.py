"""Run under ``accelerate launch --config_file configs/accelerate/<ddp|fsdp>.yaml --num_processes 2``: ``tagrpo
train`` (``run_train``, the command's own path) with a deterministic reward, for tests/test_rank_faults.py.

``python fault_worker.py [--fsdp-on-cpu] [--kill-rank=R --kill-after=K] key=value ...``: with ``--kill-after=K``,
rank R kills itself with SIGKILL at the start of step K+1, once rank 0 has finished checkpoint-K (its
``tagrpo_state.json``, written last, exists): a ``kill -9`` at a known point, with no timing involved.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from fsdp_worker import honour_fsdp_on_cpu
from train_worker import parity_reward
from transformers import TrainerCallback

import tagrpo.trainer.run as run
from tagrpo.trainer.checkpoint import STATE_FILE


class KillAfterCheckpoint(TrainerCallback):
    """SIGKILL this process if it is rank ``rank`` when step ``step + 1`` begins and checkpoint-``step`` is whole."""

    def __init__(self, rank: int, step: int):
        self.rank, self.step = rank, step

    def on_step_begin(self, args, state, control, **kwargs):
        if args.process_index != self.rank or state.global_step != self.step:
            return
        flag = Path(args.output_dir) / f"checkpoint-{self.step}" / STATE_FILE
        deadline = time.monotonic() + 120
        while not flag.exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{flag} did not appear within 120 s")
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGKILL)


def main(argv: list[str]) -> None:
    flags = dict(a.removeprefix("--").partition("=")[::2] for a in argv if a.startswith("--"))
    overrides = [a for a in argv if not a.startswith("--")]
    if "fsdp-on-cpu" in flags:
        honour_fsdp_on_cpu()
    callbacks = []
    if "kill-after" in flags:
        callbacks.append(KillAfterCheckpoint(int(flags["kill-rank"]), int(flags["kill-after"])))
    run.get_reward = lambda name: parity_reward
    run.run_train(*run.split_config(run.load_config(None, overrides)), callbacks=callbacks)


if __name__ == "__main__":
    main(sys.argv[1:])
