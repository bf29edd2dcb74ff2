"""The trainer's two CPU speed settings: generation under the training autocast, completion-only scoring."""

from __future__ import annotations

import pytest
import torch
from conftest import pool_rows
from trainer_utils import make_trainer, projected_rows


@pytest.mark.parametrize("on", [True, False])
def test_generation_runs_under_the_trainers_bf16_autocast_when_asked(model_dirs, tmp_path, on):
    trainer = make_trainer(model_dirs["llama"], pool_rows(), tmp_path, bf16=True, max_steps=1,
                           generation_autocast=on)
    seen = []
    generate = trainer.model.generate

    def recording(*args, **kwargs):
        seen.append((torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")))
        return generate(*args, **kwargs)

    trainer.model.generate = recording
    trainer.train()
    assert seen and all(s == ((True, torch.bfloat16) if on else (False, torch.bfloat16)) for s in seen)


@pytest.mark.parametrize("on", [True, False])
def test_cpu_scoring_projects_only_the_completion_positions_when_asked(model_dirs, tmp_path, on):
    trainer = make_trainer(model_dirs["llama"], pool_rows(), tmp_path, max_steps=1, cpu_completion_scoring=on)
    with projected_rows() as rows:
        trainer.train()
    assert rows
    completion = trainer.args.max_completion_length * trainer.args.per_device_train_batch_size  # at most
    if on:
        assert all(n <= completion for n in rows)  # only labelled positions reach the vocabulary projection
    else:
        assert all(n > completion for n in rows)  # every position of prompt and completion
