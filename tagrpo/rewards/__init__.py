"""Verifiable rewards shared by training and evaluation.

``math_reward`` / ``is_correct``: the last boxed answer against the reference under math-verify (gold first);
``MathReward`` / ``verify_many`` / ``VerifierPool``: the same in worker processes with a per-answer wall-clock
timeout (verl's threaded reward uses ``verify_many``); they live in ``tagrpo.rewards.parallel``, imported on first
use of one of these names, as only that reward and the throughput benchmark need the process pool;
``choice_reward`` / ``is_choice_correct``: a boxed option letter (GPQA-Diamond);
``boxed_or_last_number``: the math reward when a box is given, else the last number written (for small models).
``get_reward(name)`` looks one up in ``REWARDS``.
"""

from tagrpo.rewards.choice import choice_reward, extract_choice, is_choice_correct, parse_choice
from tagrpo.rewards.math import (
    answers_match,
    boxed_or_last_number,
    boxed_or_last_number_correct,
    completion_text,
    extract_boxed,
    is_correct,
    math_reward,
    normalize_answer,
    strip_units,
)

_PARALLEL = ("MathReward", "VerifierPool", "verify_many")  # names of tagrpo.rewards.parallel, loaded on first use

REWARDS = {"math": math_reward, "choice": choice_reward, "boxed_or_last_number": boxed_or_last_number}
CHECKS = {  # per-response checks behind the reward functions
    "math": is_correct, "choice": is_choice_correct, "boxed_or_last_number": boxed_or_last_number_correct
}


def get_reward(name: str):
    """The reward function registered as ``name`` in ``REWARDS``; a ValueError lists the valid names."""
    from tagrpo.common.modes import check_mode

    return REWARDS[check_mode("reward", name, tuple(REWARDS))]


def get_reward_check(name: str):
    """``check(response, gold) -> bool``, the function behind ``get_reward(name)``, as evaluation uses it."""
    from tagrpo.common.modes import check_mode

    return CHECKS[check_mode("reward", name, tuple(CHECKS))]


def __getattr__(name: str):
    if name in _PARALLEL:
        from tagrpo.rewards import parallel

        return getattr(parallel, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CHECKS",
    "REWARDS",
    "MathReward",
    "VerifierPool",
    "answers_match",
    "boxed_or_last_number",
    "boxed_or_last_number_correct",
    "choice_reward",
    "completion_text",
    "extract_boxed",
    "extract_choice",
    "get_reward",
    "get_reward_check",
    "is_choice_correct",
    "is_correct",
    "math_reward",
    "normalize_answer",
    "parse_choice",
    "strip_units",
    "verify_many",
]
