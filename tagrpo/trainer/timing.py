"""Pieces the step-time benchmarks share (``benchmarks/step_overhead.py`` on CPU, ``benchmarks/gpu_step.py`` on a
GPU): a deterministic mixed reward, rows whose forms have equal token counts, and a per-step wall-time callback."""

from __future__ import annotations

import time
import zlib

from transformers import TrainerCallback


def hash_reward(completions, **kwargs):
    """Deterministic, mixed reward: parity of a checksum of the completion text."""
    return [float(zlib.crc32(c.encode()) % 2) for c in completions]


REPHRASINGS = ("add {a} to {b}; give the sum.", "{a} plus {b} is what? Say it.", "tell me {a} + {b}, in digits.")


def make_rows(num_questions: int, num_rephrasings: int) -> list[dict]:
    """Questions whose q0 and rephrasings all have the same number of characters (= tokens)."""
    rows = []
    for i in range(num_questions):
        a, b = 10 + i, 3 * i + 7
        reph = [
            f"Item {i:02d} v{n}: " + REPHRASINGS[(n - 1) % len(REPHRASINGS)].format(a=a, b=b)
            for n in range(1, 1 + num_rephrasings)
        ]
        rows.append(
            {
                "id": f"q{i}",
                "prompt": f"Item {i:02d} v0: what is {a} plus {b}? Say it.",
                "answer": str(a + b),
                "rephrasings": reph,
            }
        )
    return rows


class StepTimer(TrainerCallback):
    """Wall time of each optimizer step (generation, scoring, forward/backward, optimizer) and end to end."""

    def __init__(self):
        self.begin, self.steps, self.cycles, self.cpu, self._last_end = None, [], [], [], None

    def on_step_begin(self, args, state, control, **kwargs):
        self.begin = (time.perf_counter(), time.process_time())

    def on_step_end(self, args, state, control, **kwargs):
        now = time.perf_counter()
        self.steps.append(now - self.begin[0])
        self.cpu.append(time.process_time() - self.begin[1])
        self.cycles.append(None if self._last_end is None else now - self._last_end)
        self._last_end = now
