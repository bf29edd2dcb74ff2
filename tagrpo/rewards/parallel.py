"""Math answers verified in worker processes, each answer under a wall-clock deadline.

math-verify interrupts slow work with ``signal.alarm``, which only works in a process's main thread, and not at
all inside one long C call (a huge integer power). Here each answer is checked in a worker process of a
``ProcessPoolExecutor`` (``forkserver`` start method, ``spawn`` where there is none), where it is the main thread:

* the worker bounds the whole answer with its own ``signal.setitimer`` (math-verify's internal timeouts are off
  there, so they cannot cancel it) and scores 0.0 when it fires;
* the parent reads which item each worker is on, and since when, from shared memory; an item still running
  ``timeout + grace`` seconds after it started (the worker is stuck where a signal cannot reach it) scores 0.0,
  the workers are killed, the pool is replaced and the unfinished items are resubmitted;
* when a worker dies (killed, out of memory, a crash in C), its items in flight are retried once; an item that
  breaks a worker twice is unscorable: NaN, which the trainer turns into advantage 0 and counts
  (``tagrpo/unscorable``). ``VerifierPool.unscorable`` counts them too.

Results come back in input order. Items travel in chunks, so the per-item deadline costs no extra round trips.
Calls from several threads are scored in rounds: those that arrive while a round runs are scored together in the
next one, so threads that ask for one answer each (verl's reward loop) still share chunks and workers.
``verify_many`` keeps one pool per (workers, timeout) for the life of the process: it is the bounded math check of
verl's threaded reward (``tagrpo.integrations.verl.reward``) and of ``benchmarks/reward_throughput.py``. As with
any ``spawn``/``forkserver`` pool, workers import the ``__main__`` script: guard its entry point with
``if __name__ == "__main__":``.
"""

from __future__ import annotations

import atexit
import logging
import math
import multiprocessing as mp
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from tagrpo.rewards.math import completion_text, is_correct, warm_up

_FIELDS = 3  # per worker slot: pid, index of the item it is on (-1: idle), time.monotonic() when it started
_worker: dict = {}


class _ItemTimeout(BaseException):
    """Raised by the worker's timer; a BaseException, so that math-verify's ``except Exception`` lets it through."""


def _on_alarm(signum, frame):
    raise _ItemTimeout


def _init_worker(slots, counter) -> None:
    with counter.get_lock():
        slot = counter.value
        counter.value += 1
    _worker.update(slots=slots, base=slot * _FIELDS)
    with slots.get_lock():
        slots[slot * _FIELDS : slot * _FIELDS + _FIELDS] = [os.getpid(), -1.0, 0.0]
    signal.signal(signal.SIGALRM, _on_alarm)
    logging.getLogger("math_verify").setLevel(logging.ERROR)  # its "timeout is disabled" warning is expected here
    warm_up()  # math-verify's one-time setup, before any item's deadline runs


def _set_slot(index: int) -> None:
    slots, base = _worker["slots"], _worker["base"]
    with slots.get_lock():
        slots[base + 1], slots[base + 2] = float(index), time.monotonic()


def check_math(response: str, gold) -> bool:
    """The default check: ``is_correct`` with math-verify's own (signal) timeouts off; the worker times it."""
    return is_correct(response, gold, timeout=None)


def _check_chunk(indices: list[int], pairs: list, timeout: float, check: Callable) -> list[float]:
    """Score ``pairs`` (items ``indices``) one by one, each under a ``timeout`` s timer; errors score 0.0."""
    scores = []
    for index, (response, gold) in zip(indices, pairs, strict=True):
        _set_slot(index)
        try:
            try:
                signal.setitimer(signal.ITIMER_REAL, timeout)
                score = float(check(response, gold))
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except (_ItemTimeout, Exception):
            score = 0.0
        scores.append(score)
    _set_slot(-1)
    return scores


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _context():
    method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    ctx = mp.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(["tagrpo.rewards.parallel"])
    return ctx


class VerifierPool:
    """Worker processes that score (response, gold) pairs with ``check``, each pair under a deadline.

    Args:
        workers: number of processes (default: the CPUs this process may use).
        timeout: seconds an item may take; a slower one scores 0.0.
        grace: extra seconds the parent waits, past ``timeout``, for a worker to return before it replaces the
            pool (the worker's own timer normally answers first).
        check: ``check(response, gold) -> bool``, a module-level function (workers import it by name). It must
            not use ``SIGALRM`` itself.
    """

    def __init__(self, workers: int | None = None, timeout: float = 5.0, grace: float = 1.0, check=check_math):
        self.workers = max(1, workers or _cpus())
        self.timeout, self.grace, self.check = float(timeout), float(grace), check
        self.restarts = self.unscorable = 0
        self._executor = self._slots = None
        self._lock = threading.Lock()  # held by the call that is scoring a round
        self._waiting: list[tuple[list, list, Future]] = []  # calls not yet in a round
        self._waiting_lock = threading.Lock()

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            ctx = _context()
            self._slots = ctx.Array("d", [-1.0] * (self.workers * _FIELDS))
            counter = ctx.Value("i", 0)
            self._executor = ProcessPoolExecutor(
                self.workers, mp_context=ctx, initializer=_init_worker, initargs=(self._slots, counter)
            )
        return self._executor

    def _running(self) -> list[tuple[int, int, float]]:
        """(pid, item index, start time) of every worker that is on an item."""
        with self._slots.get_lock():
            values = list(self._slots)
        rows = [values[i : i + _FIELDS] for i in range(0, len(values), _FIELDS)]
        return [(int(pid), int(index), started) for pid, index, started in rows if pid > 0 and index >= 0]

    def _kill(self) -> None:
        """Kill every worker and drop the pool; the next call starts a fresh one."""
        if self._executor is None:
            return
        with self._slots.get_lock():
            pids = {int(pid) for pid in self._slots[::_FIELDS] if pid > 0}
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._executor.shutdown(wait=True, cancel_futures=True)
        self._executor = self._slots = None
        self.restarts += 1

    def close(self) -> None:
        """Stop the workers (a later call starts new ones)."""
        with self._lock:
            if self._executor is not None:
                self._executor.shutdown(wait=True, cancel_futures=True)
                self._executor = self._slots = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getstate__(self):
        return {**self.__dict__, "_executor": None, "_slots": None, "_lock": None, "_waiting": [],
                "_waiting_lock": None}

    def __setstate__(self, state):
        self.__dict__.update(state, _lock=threading.Lock(), _waiting_lock=threading.Lock())

    def map(self, responses: Sequence[str], golds: Sequence) -> list[float]:
        """Scores (1.0 / 0.0, NaN when unscorable) of ``responses`` against ``golds``, in input order.

        Calls from several threads share the workers in rounds: the calls that arrive while a round runs wait, and
        the first of them to get the pool scores all their pairs together in the next round, in chunks.
        """
        if len(responses) != len(golds):
            raise ValueError(f"{len(responses)} responses but {len(golds)} golds")
        call: Future = Future()
        with self._waiting_lock:
            self._waiting.append((list(responses), list(golds), call))
        with self._lock:
            if not call.done():  # else a round of another thread's has scored this call
                with self._waiting_lock:
                    calls, self._waiting = self._waiting, []
                self._round(calls)
        return call.result()

    def _round(self, calls: list[tuple[list, list, Future]]) -> None:
        """Score the pairs of ``calls`` at once and hand each call its scores (or the error that stopped them)."""
        responses = [response for batch, _, _ in calls for response in batch]
        golds = [gold for _, batch, _ in calls for gold in batch]
        scores: list[float | None] = [None] * len(responses)
        retried: set[int] = set()
        try:
            while pending := [i for i, s in enumerate(scores) if s is None]:
                self._run(pending, responses, golds, scores, retried)
        except BaseException as error:  # every waiting call raises it, the one that ran the round included
            for _, _, call in calls:
                call.set_exception(error)
            return
        start = 0
        for batch, _, call in calls:
            call.set_result(scores[start : start + len(batch)])
            start += len(batch)

    def _run(self, pending: list[int], responses, golds, scores: list, retried: set[int]) -> None:
        """Submit ``pending`` items in chunks and fill ``scores`` until all are done, one hangs or a worker dies.

        A hung item (running past ``timeout + grace``) scores 0.0. The items in flight when a worker dies are left
        for a retry, once; the second time they are NaN. Either way the pool is replaced and the caller
        resubmits what is left.
        """
        pool = self._pool()
        size = max(1, min(32, len(pending) // (4 * self.workers)))
        futures = {}
        for k in range(0, len(pending), size):
            part = pending[k : k + size]
            pairs = [(responses[i], golds[i]) for i in part]
            futures[pool.submit(_check_chunk, part, pairs, self.timeout, self.check)] = part
        while futures:
            done, _ = wait(futures, timeout=min(0.1, self.timeout / 4), return_when=FIRST_COMPLETED)
            broken = False
            for future in done:
                part = futures.pop(future)
                try:
                    for index, score in zip(part, future.result(), strict=True):
                        scores[index] = score
                except BrokenProcessPool:
                    broken = True
            now = time.monotonic()
            running = self._running()
            stuck = [index for _, index, started in running if now - started > self.timeout + self.grace]
            if broken or stuck:
                lost = stuck or [index for _, index, _ in running]
                self._kill()
                if not lost:
                    raise BrokenProcessPool("a verifier worker died outside any item (failed to start?)")
                for index in lost:
                    if stuck:
                        scores[index] = 0.0
                    elif index in retried:
                        scores[index] = math.nan
                        self.unscorable += 1
                    else:
                        retried.add(index)
                return


_POOLS: dict[tuple[int | None, float], VerifierPool] = {}
_POOLS_LOCK = threading.Lock()


def verify_many(responses: Sequence[str], golds: Sequence, workers: int | None = None, timeout: float = 5.0):
    """``is_correct`` over many (response, gold) pairs in worker processes: 1.0 / 0.0 each (NaN: unscorable), in
    input order.

    An item that takes more than ``timeout`` seconds scores 0.0. Pools are kept per (workers, timeout) and reused
    by later calls, from any thread; they stop at interpreter exit.
    """
    key = (workers, float(timeout))
    with _POOLS_LOCK:
        if key not in _POOLS:
            if not _POOLS:
                atexit.register(_close_pools)  # before interpreter teardown, which prints a traceback per live pool
            _POOLS[key] = VerifierPool(workers, timeout)
        pool = _POOLS[key]
    return pool.map(list(responses), list(golds))


def _close_pools() -> None:
    for pool in _POOLS.values():
        pool.close()


class MathReward:
    """TRL reward function like ``math_reward``, scoring a batch in ``workers`` processes with a per-item timeout.

    ``MathReward(workers=4)(completions, answer)`` returns one float per completion; ``__name__`` (the name TRL
    logs) is ``"math_reward"`` unless ``name`` is given.
    """

    def __init__(self, workers: int | None = None, timeout: float = 5.0, name: str = "math_reward"):
        self.pool = VerifierPool(workers, timeout)
        self.__name__ = name

    def __call__(self, completions, answer, **kwargs) -> list[float]:
        texts = [completion_text(c) for c in completions]
        answers = list(answer)
        if len(texts) != len(answers):
            raise ValueError(f"{len(texts)} completions but {len(answers)} answers")
        return self.pool.map(texts, answers)

    def close(self) -> None:
        self.pool.close()

