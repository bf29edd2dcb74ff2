"""tagrpo's own training state in every checkpoint, through transformers' public callback and ``train`` API.

A checkpoint also holds ``tagrpo_state.json``: the rollouts spent, the tokens seen and what a subclass adds (the
history mode's record of uniform q0 groups, ``tagrpo.trainer.adaptive``). ``CheckpointState`` writes it when
transformers has saved a checkpoint (``on_save``) and starts the tokens/s clock when training (re)starts
(``on_train_begin``, after transformers restored ``TrainerState``); ``checkpoint_to_resume`` names the folder a
``train(resume_from_checkpoint=...)`` call resumes from, as transformers resolves it, so that the trainer restores
the file before TRL's first step. Hyper-parameter search (one folder per trial) is not supported.
"""

from __future__ import annotations

import json
import os
import time

from transformers import TrainerCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, get_last_checkpoint

STATE_FILE = "tagrpo_state.json"


class CheckpointState(TrainerCallback):
    """Saves ``trainer._tagrpo_state()`` with every checkpoint and marks the start of training for tokens/s."""

    def __init__(self, trainer):
        self.trainer = trainer

    def on_train_begin(self, args, state, control, **kwargs):
        self.trainer._throughput_mark = (time.perf_counter(), state.num_input_tokens_seen)

    def on_save(self, args, state, control, **kwargs):
        if args.should_save:
            folder = os.path.join(args.output_dir, f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}")
            with open(os.path.join(folder, STATE_FILE), "w", encoding="utf-8") as f:
                json.dump(self.trainer._tagrpo_state(), f)


def checkpoint_to_resume(resume_from_checkpoint, output_dir: str) -> str | None:
    """The checkpoint folder ``Trainer.train(resume_from_checkpoint=...)`` resumes from (``True``: the latest in
    ``output_dir``), or None for a fresh start."""
    if isinstance(resume_from_checkpoint, bool):
        return get_last_checkpoint(output_dir) if resume_from_checkpoint and os.path.isdir(output_dir) else None
    return resume_from_checkpoint or None


def read_state(checkpoint: str | None) -> dict | None:
    """The tagrpo state saved in ``checkpoint``, or None when there is none."""
    path = os.path.join(checkpoint, STATE_FILE) if checkpoint else None
    if not path or not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)
