"""What reward functions and TRL's completions table see of a pool's rows.

Reward functions are called by TRL as for ``GRPOTrainer``: ``prompts`` holds each row's original question q0 (also
for the rows a rephrasing generated: the answer checked is q0's, and a reward model scores ``q0 + completion``),
``completions`` the completions, and every column of the train row (``id``, ``answer``, ``rephrasings``, ...) as a
keyword of per-row lists. ``TAGRPOTrainer`` adds two keywords (``REWARD_COLUMNS``): ``variant``, the variant that
generated each row (0 for q0, n for the n-th rephrasing), and ``generating_prompt``, the prompt it was sampled from.

The completions table (``log_completions``: the console sample, ``output_dir/completions/*.parquet``, wandb and
trackio) has, per row, ``prompt`` = the prompt that generated it (TRL's column would say q0 for every row), a
``variant`` column (``q0``, ``q1`` .. ``qN``), TRL's rewards and the advantages the loss uses. Deduplicating by
prompt (TRL's ``log_unique_prompts``) thus keeps one row per variant of a pool, not one per pool.
"""

from __future__ import annotations

from collections.abc import MutableSequence, Sequence

import torch

from tagrpo.common.errors import InputError

REWARD_COLUMNS = ("variant", "generating_prompt")


def reward_rows(inputs: Sequence[dict], variant_index: torch.Tensor, generating: Sequence) -> list[dict]:
    """Copies of TRL's R rows with the keywords ``REWARD_COLUMNS`` that reward functions receive.

    ``variant_index`` (R,) is each row's variant, ``generating`` its generating prompt."""
    clash = [name for name in REWARD_COLUMNS if name in inputs[0]]
    if clash:
        raise InputError(
            f"the train rows have the column {clash[0]!r}, which TAGRPOTrainer passes to reward functions (the "
            "variant that generated each row); rename that column"
        )
    return [{**row, "variant": n, "generating_prompt": prompt}
            for row, n, prompt in zip(inputs, variant_index.tolist(), generating, strict=True)]


def variant_labels(variant_index: torch.Tensor) -> list[str]:
    """The completions table's ``variant`` column: ``q0`` .. ``qN`` for the (R,) ``variant_index``."""
    return [f"q{n}" for n in variant_index.tolist()]


def replace_tail(buffer: MutableSequence, values: Sequence) -> None:
    """Replace the last ``len(values)`` entries of a TRL log buffer (a bounded deque) by ``values``."""
    for _ in range(min(len(values), len(buffer))):
        buffer.pop()
    buffer.extend(values)
