"""Which of TRL 1.16's ``GRPOConfig`` options and ``GRPOTrainer`` arguments TA-GRPO trains, and the one-line refusal
of the others, raised before any model loads (``TAGRPOConfig.__post_init__`` and the start of
``TAGRPOTrainer.__init__``). docs/training.md has the table; ``tests/test_trl_options.py`` works each supported
option's loss out by hand on a TA-GRPO run (pools, q0 anchoring) and checks each refusal.

Supported: the loss types whose TRL loss is the clipped surrogate (``tagrpo.core.clipped_surrogate``) over the
anchored log-probs, importance ratios per token or per sequence (GSPO), ``top_entropy_quantile``,
``mask_truncated_completions``, ``scale_rewards`` ``group`` and ``none``. Refused: the other loss types,
``scale_rewards="batch"``, multi-objective aggregation other than ``sum_then_normalize``, tools, environments and
``rollout_func``.
"""

from __future__ import annotations

from tagrpo.common.errors import InputError
from tagrpo.common.modes import check_mode

LOSS_TYPES = ("dapo", "grpo", "bnpo", "dr_grpo")
IMPORTANCE_SAMPLING_LEVELS = ("token", "sequence")
SCALE_REWARDS = ("group", "none")
_UNVERIFIED = "not verified with pools and q0-anchored ratios"
REFUSED_LOSS_TYPES = {
    "cispo": f"its weight is a clipped, detached ratio times the log-probs, not the clipped surrogate; {_UNVERIFIED}",
    "sapo": f"its soft gate replaces the clipped surrogate; {_UNVERIFIED}",
    "luspo": f"a sequence-level loss scaled by each completion's length; {_UNVERIFIED}",
    "vespo": ("it weights sequences by the engine's importance ratio, which tagrpo computes on the generating prompt "
              f"while the loss is on q0; {_UNVERIFIED}"),
}
REFUSED_SCALE_REWARDS = {
    "batch": ("tagrpo normalises within each question's pool (tagrpo.core.pooled_advantages, shared by the variant "
              "scope, gated pools and the adaptive modes) and has no batch-std form"),
}
REFUSED_TRAINER_ARGUMENTS = {
    "tools": ("TAGRPOTrainer samples one turn per row from its prompt variant and conditions the loss on q0; tool "
              "turns would need the same anchoring"),
    "environment_factory": ("an environment supplies the prompt (reset) and its tools, where a pool needs each "
                            "question's rephrasings"),
    "rollout_func": ("it replaces TRL's generation, where TAGRPOTrainer samples G rows from each variant and puts "
                     "q0's tokens in their place"),
}


def check_trl_options(cfg) -> None:
    """Refuse, in one line, a ``GRPOConfig`` option TA-GRPO does not train (``cfg`` a ``TAGRPOConfig``)."""
    _refuse("loss_type", cfg.loss_type, LOSS_TYPES, REFUSED_LOSS_TYPES)
    check_mode("importance_sampling_level", cfg.importance_sampling_level, IMPORTANCE_SAMPLING_LEVELS)
    _refuse("scale_rewards", cfg.scale_rewards, SCALE_REWARDS, REFUSED_SCALE_REWARDS)
    check_mode("multi_objective_aggregation", cfg.multi_objective_aggregation, ("sum_then_normalize",))


def check_trainer_arguments(arguments: dict) -> None:
    """Refuse, in one line and before the model loads, the ``GRPOTrainer`` arguments TA-GRPO does not train."""
    for name, why in REFUSED_TRAINER_ARGUMENTS.items():
        if arguments.get(name):  # TRL's defaults: None (an empty tool list is none)
            raise InputError(f"{name} is refused by TAGRPOTrainer: {why}")


def _refuse(name: str, value, supported: tuple, refused: dict) -> None:
    if value in refused:
        choices = ", ".join(repr(v) for v in supported)
        raise InputError(f"{name}={value!r} is refused by TAGRPOConfig: {refused[value]}; use one of: {choices}")
    check_mode(name, value, supported)
