"""``tagrpo.trainer.compact``: on the CPU TRL's fused LM head scores only the labelled positions, same log-probs."""

from __future__ import annotations

import inspect

import pytest
import torch
import trl.trainer.utils as trl_utils
from trainer_utils import projected_rows
from transformers import AutoModelForCausalLM

from tagrpo.trainer.compact import completion_positions_only


def test_trl_still_decides_compact_scoring_by_its_private_use_triton():
    assert hasattr(trl_utils, "_use_triton"), "TRL's trainer/utils.py no longer has _use_triton: compact.py patches it"
    source = inspect.getsource(trl_utils)
    assert "compact = _use_triton(hidden_states.device)" in source, (
        "TRL's fused LM head no longer decides compact scoring by `compact = _use_triton(hidden_states.device)`: "
        "tagrpo.trainer.compact patches nothing; read trl/trainer/utils.py's fused forward again"
    )


def _fused_logps(model, ids, labels, compact: bool):
    if compact:
        with completion_positions_only():
            return model(input_ids=ids, labels=labels, fused_lm_head=True).log_probs
    return model(input_ids=ids, labels=labels, fused_lm_head=True).log_probs


def test_cpu_scores_only_the_completion_and_gets_the_same_log_probs(model_dirs):
    model = AutoModelForCausalLM.from_pretrained(model_dirs["llama"])
    trl_utils.add_fused_lm_head(model)
    ids = torch.randint(3, model.config.vocab_size, (3, 10))  # (B, L)
    labels = ids.masked_fill(torch.arange(10) < 7, -100)  # (B, L) the last 3 tokens are the completion
    with projected_rows() as full_rows:
        full = _fused_logps(model, ids, labels, False)  # (B, L-1)
    with projected_rows() as compact_rows:
        compact = _fused_logps(model, ids, labels, True)  # (B, L-1)
    assert full_rows == [3 * 9] and compact_rows == [3 * 3]  # every shifted position vs the 3 labelled ones
    torch.testing.assert_close(compact, full)
    assert (compact[:, :6] == 0).all() and (compact[:, 6:] < 0).all()
    assert trl_utils._use_triton(torch.device("cpu")) is False  # restored after the block


def test_the_patch_is_undone_when_the_block_raises():
    original = trl_utils._use_triton
    with pytest.raises(RuntimeError), completion_positions_only():
        assert trl_utils._use_triton(torch.device("cpu")) is True
        raise RuntimeError("boom")
    assert trl_utils._use_triton is original
