"""Per-step records of what the TA-GRPO trainer did inside verl's loop (``tagrpo.record_dir``; off by default).

With ``tagrpo.record_dir=DIR`` every training step writes ``DIR/step_{k:05d}.jsonl``, one line per part:

- ``"part": "generated"``: the rows as verl's rollout returned them, before anchoring: ``uid``, ``prompt`` (the
  generating prompt's token ids), ``response`` token ids and, with ``rollout.calculate_log_probs``,
  ``rollout_log_prob`` (the engine's per-row mean log-prob over the response);
- ``"part": "updated"``: the rows as the actor update receives them, after verl's ``_balance_batch`` reordered them:
  ``uid``, ``prompt`` (q0's ids where anchored), ``response``, ``reward`` (a row's outcome), ``advantage`` (one
  value per row: outcome advantages are constant over the response), ``old_log_prob`` and ``ref_log_prob``
  (per-row means over the response), ``response_tokens``; with ``dp``, the data-parallel size: verl gives rank r
  the r-th of ``dp`` equal contiguous chunks of this order.

Meant for audits of small runs (the end-to-end test asserts from these files); a record holds every token id of
the step, so leave it off for long runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from tagrpo.data.jsonl import write_jsonl


def _prompt_ids(batch) -> list[list[int]]:
    prompts = batch.batch["prompts"]  # (R, P) left-padded
    mask = batch.batch["attention_mask"][:, : prompts.size(1)].bool()  # (R, P)
    return [row[m].tolist() for row, m in zip(prompts, mask, strict=True)]


def _response_ids(batch) -> list[list[int]]:
    responses = batch.batch["responses"]  # (R, T)
    mask = batch.batch["response_mask"].bool()  # (R, T)
    return [row[m].tolist() for row, m in zip(responses, mask, strict=True)]


def _row_mean(values: torch.Tensor, mask: torch.Tensor) -> list[float]:
    """(R, T) values, (R, T) mask -> R means over the masked tokens."""
    mask = mask.float()
    return ((values.float() * mask).sum(-1) / mask.sum(-1).clamp(min=1)).tolist()


def generated_part(batch) -> dict[str, Any]:
    """The generated rows: uid, generating prompt and response token ids (and the engine's log-probs if any)."""
    part = {
        "part": "generated",
        "uid": [str(u) for u in batch.non_tensor_batch["uid"]],
        "prompt": _prompt_ids(batch),
        "response": _response_ids(batch),
    }
    if "rollout_log_probs" in batch.batch.keys():
        part["rollout_log_prob"] = _row_mean(batch.batch["rollout_log_probs"], batch.batch["response_mask"])
    return part


def updated_part(batch, dp: int) -> dict[str, Any]:
    """The rows the actor update receives, in verl's order after balancing."""
    tensors = batch.batch
    mask = tensors["response_mask"]  # (R, T)
    first = mask.float().argmax(-1)  # (R,) index of each row's first response token
    rows = torch.arange(mask.size(0))
    part = {
        "part": "updated",
        "dp": int(dp),
        "uid": [str(u) for u in batch.non_tensor_batch["uid"]],
        "prompt": _prompt_ids(batch),
        "response": _response_ids(batch),
        "reward": tensors["token_level_rewards"].sum(-1).tolist(),
        "advantage": tensors["advantages"][rows, first].tolist(),
        "response_tokens": mask.sum(-1).tolist(),
        "old_log_prob": _row_mean(tensors["old_log_probs"], mask),
    }
    if "ref_log_prob" in tensors.keys():
        part["ref_log_prob"] = _row_mean(tensors["ref_log_prob"], mask)
    return part


def write_record(record_dir: str | os.PathLike, step: int, parts: list[dict[str, Any]]) -> Path:
    """Write one step's parts, atomically (a crash leaves the earlier steps' files whole)."""
    return Path(write_jsonl(str(Path(record_dir) / f"step_{int(step):05d}.jsonl"), parts))
