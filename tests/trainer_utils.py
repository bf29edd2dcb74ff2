"""Helpers for the trainer tests: a deterministic reward, a config factory and spies on the trainer's step."""

from __future__ import annotations

import zlib
from contextlib import contextmanager

from datasets import Dataset

from tagrpo.trainer import TAGRPOConfig
from tagrpo.trainer.run import trainer_class


def hash_reward(completions, **kwargs):
    """A deterministic, mixed reward: the parity of a checksum of the completion text."""
    return [float(zlib.crc32(c.encode()) % 2) for c in completions]


def make_config(out, **overrides):
    base = dict(
        output_dir=str(out),
        num_rephrasings=3,
        num_generations=2,
        per_device_train_batch_size=8,
        gradient_accumulation_steps=2,
        max_completion_length=6,
        max_steps=2,
        learning_rate=1e-2,
        logging_steps=1,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        seed=0,
        disable_tqdm=True,
    )
    base.update(overrides)
    return TAGRPOConfig(**base)


def make_trainer(model_dir, rows, out, reward=hash_reward, **overrides):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    args = make_config(out, **overrides)
    return trainer_class(args)(
        model=model_dir,
        reward_funcs=[reward],
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tok,
    )


def spy(trainer, method, record):
    """Wrap ``trainer.<method>`` so that every call's arguments and result are appended to ``record``."""
    original = getattr(trainer, method)

    def wrapped(*args, **kwargs):
        result = original(*args, **kwargs)
        record.append((args, kwargs, result))
        return result

    setattr(trainer, method, wrapped)


def trl_trainer(model_dir, out, reward=hash_reward, **overrides):
    """TRL's own GRPOTrainer on the same tiny model and pool rows (8 questions), for comparisons."""
    from conftest import pool_rows
    from trl import GRPOConfig, GRPOTrainer

    base = dict(
        output_dir=str(out),
        per_device_train_batch_size=8,
        gradient_accumulation_steps=2,
        max_steps=1,
        max_completion_length=6,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
    )
    base.update(overrides)
    rows = pool_rows(num_questions=8)
    return GRPOTrainer(model_dir, [reward], args=GRPOConfig(**base), train_dataset=Dataset.from_list(rows))


@contextmanager
def projected_rows():
    """Inside the block, the row count of every call to TRL's chunked vocabulary projection (the positions scored)."""
    import trl.trainer.utils as trl_utils

    rows: list[int] = []
    apply = trl_utils._ChunkedLogProbFunction.apply

    def counting(hidden, *args):
        rows.append(hidden.shape[0])
        return apply(hidden, *args)

    trl_utils._ChunkedLogProbFunction.apply = counting
    try:
        yield rows
    finally:
        trl_utils._ChunkedLogProbFunction.apply = apply
