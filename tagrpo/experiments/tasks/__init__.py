"""The tasks a study runs on, one module each: where a cell lives on disk, its spec, how it is computed, and what
the report shows of it. ``regime``: the embedded regime world (``tagrpo.toy``); ``sums``: SmolLM2-135M-Instruct on
sums in four surface forms. A task module has ``prepare``, ``cell``, ``compute`` (module level: the process pool's
workers import it), ``premise_cell``, ``choose_q0``, ``FORMS`` and ``arm_columns``."""

from __future__ import annotations

import importlib

from tagrpo.common.modes import check_mode

TASKS = ("regime", "sums")


def task_module(name: str):
    check_mode("task", name, TASKS)
    return importlib.import_module(f"tagrpo.experiments.tasks.{name}")
