"""Score only the completion positions on CPU, as TRL already does on CUDA and XPU.

TRL's fused LM head (``trl.trainer.utils.add_fused_lm_head``) gives every position whose label is ``-100`` a
log-prob of 0; on Triton devices it projects only the labelled positions through the vocabulary, elsewhere every
position of the sequence (``compact = _use_triton(device)``: off Triton, a changing number of positions would
recompile an XLA graph). GRPO labels only the completion, so on CPU the vocabulary projections of every prompt
position are computed and thrown away. ``completion_positions_only`` makes that decision True on CPU while TRL
scores: the log-probs are the same, fewer projections are computed (``tests/test_compact.py``, which also pins the
private name); ``benchmarks/results/real_throughput.md`` measures it with the real study's other settings. Other
devices keep TRL's choice.
"""

from __future__ import annotations

from contextlib import contextmanager

import trl.trainer.utils as trl_utils


@contextmanager
def completion_positions_only():
    """Inside the block, TRL's fused LM head projects only the labelled positions when it runs on the CPU."""
    original = trl_utils._use_triton

    def compact(device) -> bool:
        return device.type == "cpu" or original(device)

    trl_utils._use_triton = compact
    try:
        yield
    finally:
        trl_utils._use_triton = original
