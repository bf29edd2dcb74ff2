"""tagrpo's own training state in every checkpoint, through transformers' public callback and ``train`` API.

A checkpoint also holds ``tagrpo_state.json``: the rollouts spent, the tokens seen and what a subclass adds (the
history mode's record of uniform q0 groups, ``tagrpo.trainer.adaptive``). ``CheckpointState`` writes it when
transformers has saved a checkpoint (``on_save``) and starts the tokens/s clock when training (re)starts
(``on_train_begin``, after transformers restored ``TrainerState``); ``checkpoint_to_resume`` names the folder a
``train(resume_from_checkpoint=...)`` call resumes from, so that the trainer restores the file before TRL's first
step. Hyper-parameter search (one folder per trial) is not supported.

A process killed while saving leaves a ``checkpoint-N`` folder without all its files (transformers writes the
folder in place, not by rename). ``tagrpo_state.json`` is written last, atomically, after transformers' own files,
so a folder without it is incomplete: ``last_checkpoint`` skips it (transformers' ``get_last_checkpoint`` would
pick it and the resume would fail with "Can't find a valid checkpoint").

TRL's ``RepeatSampler`` seeds its shuffle once and draws one order per pass, and transformers 5 does not replay
the epochs a resumed run skips: resumed in epoch 2 or later, a run drew epoch 1's order again. ``epoch_sampler``
gives the sampler a ``set_epoch`` (which transformers and accelerate call before every epoch) that reseeds and
skips the earlier epochs' orders, so the order depends on the epoch alone, as in an uninterrupted run.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time

import torch
from transformers import TrainerCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from trl.trainer.utils import RepeatSampler

log = logging.getLogger(__name__)

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
            path = os.path.join(folder, STATE_FILE)
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                json.dump(self.trainer._tagrpo_state(), f)
            os.replace(path + ".tmp", path)


class EpochRepeatSampler(RepeatSampler):
    """TRL's ``RepeatSampler`` whose order in epoch ``e`` is the ``e``-th the seed draws, whatever came before."""

    def set_epoch(self, epoch: int) -> None:
        if self.shuffle and self.seed is not None:
            self.generator.manual_seed(self.seed)
            for _ in range(epoch):
                torch.randperm(self.num_samples, generator=self.generator)


def epoch_sampler(sampler):
    """``sampler`` (TRL's ``_get_train_sampler``'s) with ``set_epoch`` when it is TRL's ``RepeatSampler``."""
    if type(sampler) is RepeatSampler:
        sampler.__class__ = EpochRepeatSampler
    return sampler


def last_checkpoint(output_dir: str) -> str | None:
    """The complete ``checkpoint-N`` folder in ``output_dir`` with the largest N (one holding ``STATE_FILE``), or
    None; incomplete ones, left by a process killed while saving, are skipped with a warning."""
    if not os.path.isdir(output_dir):
        return None
    steps = sorted(((int(m.group(1)), name) for name in os.listdir(output_dir)
                    if (m := re.fullmatch(rf"{PREFIX_CHECKPOINT_DIR}-(\d+)", name))
                    and os.path.isdir(os.path.join(output_dir, name))), reverse=True)
    for _, name in steps:
        folder = os.path.join(output_dir, name)
        if os.path.exists(os.path.join(folder, STATE_FILE)):
            return folder
        log.warning("%s is incomplete (no %s: the run stopped while saving it); not resumed from", folder, STATE_FILE)
    return None


def checkpoint_to_resume(resume_from_checkpoint, output_dir: str) -> str | None:
    """The checkpoint folder ``Trainer.train(resume_from_checkpoint=...)`` resumes from (``True``: the latest in
    ``output_dir``), or None for a fresh start."""
    if isinstance(resume_from_checkpoint, bool):
        return last_checkpoint(output_dir) if resume_from_checkpoint else None
    return resume_from_checkpoint or None


def read_state(checkpoint: str | None) -> dict | None:
    """The tagrpo state saved in ``checkpoint``, or None when there is none."""
    path = os.path.join(checkpoint, STATE_FILE) if checkpoint else None
    if not path or not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)
