"""verl custom reward function: the project's math reward (last ``\\boxed{}``, math-verify, gold first).

Configure it with ``reward.custom_reward_function.path=pkg://tagrpo.integrations.verl.reward`` and
``reward.custom_reward_function.name=compute_score`` (the example configurations do). verl's reward loop calls
``compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=..., **extra)`` for every
response. ``data_source`` ``tagrpo/choice`` scores a boxed option letter (GPQA-style); anything else is math.

verl calls it from a thread pool, one response per call (its reward loop has no batch entry point), where
math-verify's signal-based timeouts cannot work. Off the main thread a math answer is therefore checked by
``tagrpo.rewards.parallel.verify_many``: in a worker process (one per process that scores, shared by its threads:
the answers that wait while it is busy are sent together in its next round) under a wall-clock deadline of
``TIMEOUT_S`` seconds. An answer that runs past it, or that kills its worker twice, is wrong. In the main thread
``is_correct`` runs with math-verify's own timeouts. The reward returns a dict, so verl logs ``acc`` as it does for
its own.
"""

from __future__ import annotations

import threading
from typing import Any

from tagrpo.rewards import is_choice_correct, is_correct
from tagrpo.rewards.parallel import verify_many

CHOICE_SOURCES = ("tagrpo/choice",)
TIMEOUT_S = 5.0


def _checked(check, response: str, gold: Any) -> bool:
    try:
        return bool(check(response, gold))
    except Exception:  # a verifier failure is a wrong answer, never a crashed step
        return False


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None, **_: Any) -> dict:
    """``{"score": 1.0 or 0.0, "acc": same}`` for one response against its reference answer."""
    if data_source in CHOICE_SOURCES:
        correct = _checked(is_choice_correct, solution_str, ground_truth)
    elif threading.current_thread() is threading.main_thread():
        correct = _checked(is_correct, solution_str, ground_truth)
    else:  # the worker scores a failing check 0; a pool that cannot start raises rather than score everything 0
        correct = verify_many([solution_str], [ground_truth], workers=1, timeout=TIMEOUT_S)[0] == 1.0
    score = 1.0 if correct else 0.0
    return {"score": score, "acc": score}
