"""verl custom reward function: the project's math reward (last ``\\boxed{}``, math-verify, gold first).

Configure it with ``reward.custom_reward_function.path=pkg://tagrpo.integrations.verl.reward`` and
``reward.custom_reward_function.name=compute_score`` (the example configurations do). verl's reward loop calls
``compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=..., **extra)`` for every
response. ``data_source`` ``tagrpo/choice`` scores a boxed option letter (GPQA-style); anything else is math.

verl calls it from a thread pool, where math-verify's signal-based timeouts cannot work: ``is_correct`` then runs
without them (see ``tagrpo.rewards.math``). The reward returns a dict, so verl logs ``acc`` as it does for its own.
"""

from __future__ import annotations

from typing import Any

from tagrpo.rewards import is_choice_correct, is_correct

CHOICE_SOURCES = ("tagrpo/choice",)


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None, **_: Any) -> dict:
    """``{"score": 1.0 or 0.0, "acc": same}`` for one response against its reference answer."""
    check = is_choice_correct if data_source in CHOICE_SOURCES else is_correct
    try:
        correct = bool(check(solution_str, ground_truth))
    except Exception:  # a verifier failure is a wrong answer, never a crashed step
        correct = False
    score = 1.0 if correct else 0.0
    return {"score": score, "acc": score}
