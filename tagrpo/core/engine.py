"""The inference engine's importance-sampling correction, and on which conditional it may be computed.

An engine (vLLM) samples a response ``o`` for the generating prompt ``q_n`` and reports its sampling log-probs
``log pi_engine(o_t | q_n, o_<t)``. The trainer's own old log-probs on the *same* prompt give the valid correction
``pi_old(o_t | q_n, o_<t) / pi_engine(o_t | q_n, o_<t)``: engine mismatch only. Comparing the engine's log-probs
with old log-probs on ``q0`` (what TRL does when the loss is anchored to ``q0``) mixes the rephrasing shift into
the ratio (issue 18's measurement on SmolLM2: |delta log-prob| per token 0.0016 on the same prompt, 0.138 across
prompts) and truncates or masks most neighbour responses. Which correction runs, per ``anchor`` and
``engine_correction``:

============  ==========================  ==================================================================
anchor        engine_correction="auto"    engine_correction="generating"
============  ==========================  ==================================================================
none          TRL's own (old on q_n)      the same
behavior      on q_n, from the behaviour  the same
              log-probs (no extra pass)
original      off (the loss is on q0)     on q_n: one extra forward pass on [q_n | o] for the old log-probs
                                          (and TRL's old log-probs on q0, which it computes whenever a
                                          correction is on)
============  ==========================  ==================================================================

``engine_correction="off"`` switches it off for every anchor; so does TRL's
``vllm_importance_sampling_correction=False``.
"""

from __future__ import annotations

import math

import torch

from tagrpo.common.modes import check_mode
from tagrpo.core.anchoring import ANCHORS, engine_correction_allowed

ENGINE_CORRECTIONS = ("auto", "generating", "off")
IS_MODES = ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask")


def engine_correction_plan(anchor: str, engine_correction: str) -> str:
    """Who computes the engine correction: ``"trl"`` (TRL's own, valid as is), ``"generating"`` (computed here
    from old log-probs on the generating prompt) or ``"off"``."""
    check_mode("engine_correction", engine_correction, ENGINE_CORRECTIONS)
    if engine_correction == "off":
        return "off"
    if engine_correction_allowed(anchor):
        return "trl"
    if anchor == "original" and engine_correction == "auto":
        return "off"
    return "generating"


def engine_importance_ratio(
    old_logps: torch.Tensor,
    sampling_logps: torch.Tensor,
    mask: torch.Tensor,
    mode: str = "sequence_mask",
    clip_min: float | None = None,
    clip_max: float | None = 3.0,
) -> torch.Tensor:
    """TRL's truncated or masked importance ratio ``pi_old / pi_engine``, both on the same (generating) prompt.

    Args:
        old_logps: (R, T) the trainer's log-probs of the sampled tokens before the update.
        sampling_logps: (R, T) the engine's log-probs of the same tokens; NaN where the engine gave none.
        mask: (R, T) 1 on completion tokens.
        mode: ``token_*`` gives one ratio per token, ``sequence_*`` one per row (the product over its tokens);
            ``*_truncate`` clamps to [clip_min, clip_max], ``*_mask`` sets ratios outside it to 0.
        clip_min, clip_max: the bounds (None: unbounded on that side).

    Returns:
        (R, T) for token modes, (R, 1) for sequence modes.
    """
    check_mode("vllm_importance_sampling_mode", mode, IS_MODES)
    diff = torch.nan_to_num((old_logps - sampling_logps) * mask, nan=0.0)  # (R, T); no engine log-prob: ratio 1
    if mode.startswith("sequence"):
        diff = diff.sum(dim=-1, keepdim=True)  # (R, 1)
    ratio = torch.exp(diff)  # (R, T) or (R, 1)
    if mode.endswith("truncate"):
        return ratio if clip_min is None and clip_max is None else torch.clamp(ratio, min=clip_min, max=clip_max)
    low = -math.inf if clip_min is None else clip_min
    high = math.inf if clip_max is None else clip_max
    return ratio.masked_fill((ratio < low) | (ratio > high), 0.0)


def off_policy_mask_conditionals(anchor: str, use_engine: bool) -> bool:
    """Whether TRL's ``off_policy_mask_threshold`` compares log-probs on one conditional.

    It compares the sampling log-probs (the engine's, on ``q_n``; without an engine the old ones) with the current
    ones (on ``q0`` unless ``anchor="none"``). Same conditional: ``anchor="none"``, or ``"original"`` without an
    engine (old and current both on ``q0``).
    """
    check_mode("anchor", anchor, ANCHORS)
    return anchor == "none" or (anchor == "original" and not use_engine)


def engine_ratio_metrics(
    old_logps: torch.Tensor, sampling_logps: torch.Tensor, mask: torch.Tensor, ratio: torch.Tensor
) -> dict[str, tuple[torch.Tensor, str]]:
    """This process's values of TRL's ``sampling/*`` metrics for a correction, with how to reduce them over
    processes (``"mean"``, ``"min"``, ``"max"``), as TRL logs them.

    Args:
        old_logps, sampling_logps: (R, T) the two log-probs the ratio compares.
        mask: (R, T) 1 on completion tokens.
        ratio: (R, T) or (R, 1), from :func:`engine_importance_ratio`.
    """
    tokens = mask.bool()  # (R, T)
    delta = torch.abs(old_logps - sampling_logps)[tokens]  # (tokens,)
    delta = delta[~torch.isnan(delta)]  # (scored tokens,)
    flat = ratio.flatten() if ratio.size(1) == 1 else ratio[tokens]  # (rows,) or (tokens,)
    zero = old_logps.new_zeros(())

    def stat(values: torch.Tensor, name: str) -> torch.Tensor:
        return getattr(values, name)() if values.numel() else zero

    return {
        "sampling/sampling_logp_difference/mean": (stat(delta, "mean"), "mean"),
        "sampling/sampling_logp_difference/max": (stat(delta, "max"), "max"),
        "sampling/importance_sampling_ratio/min": (stat(flat, "min"), "min"),
        "sampling/importance_sampling_ratio/mean": (stat(flat, "mean"), "mean"),
        "sampling/importance_sampling_ratio/max": (stat(flat, "max"), "max"),
    }
