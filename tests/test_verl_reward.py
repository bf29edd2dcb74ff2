"""verl's reward off the main thread (as verl's reward loop calls it): bounded by verify_many's worker deadline."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import tagrpo.integrations.verl.reward as reward
from tagrpo.integrations.verl.reward import compute_score

CASES = [  # (data_source, response, gold, score)
    ("tagrpo/math", "so \\boxed{\\frac{1}{2}}", "\\frac12", 1.0),
    ("tagrpo/math", "so \\boxed{0.5}", "\\frac{1}{2}", 1.0),
    ("tagrpo/math", "so \\boxed{\\frac{1}{3}}", "\\frac{1}{2}", 0.0),
    ("tagrpo/math", "I think 3", "3", 0.0),
    ("tagrpo/math", "\\boxed{025}", "25", 1.0),
    ("tagrpo/choice", "\\boxed{B}", "B", 1.0),
    ("tagrpo/choice", "\\boxed{C}", "B", 0.0),
]


def test_thread_pool_scores_equal_the_main_thread_scores():
    with ThreadPoolExecutor(4) as pool:
        scores = list(pool.map(lambda case: compute_score(*case[:3])["score"], CASES * 3))
    assert scores == [case[3] for case in CASES] * 3
    assert [compute_score(*case[:3]) for case in CASES] == [{"score": s, "acc": s} for *_, s in CASES]


def test_a_runaway_answer_off_the_main_thread_scores_zero_within_the_deadline(monkeypatch):
    """sympy would evaluate 9^9^9^9^9 for ever, in C, where math-verify's timeouts could not stop it anyway."""
    monkeypatch.setattr(reward, "TIMEOUT_S", 1.0)
    out = []
    tower = "\\boxed{9^{9^{9^{9^{9}}}}}"
    thread = threading.Thread(target=lambda: out.append(compute_score("tagrpo/math", tower, "5")), daemon=True)
    start = time.monotonic()
    thread.start()
    thread.join(30)
    assert out == [{"score": 0.0, "acc": 0.0}]
    assert time.monotonic() - start < 1.0 + 1.0 + 10.0  # deadline, grace, a worker's start
