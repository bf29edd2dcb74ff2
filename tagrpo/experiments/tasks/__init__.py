"""The tasks a study runs on, one module each: where a cell lives on disk, its spec, how it is computed, and what
the report shows of it. ``regime``: the embedded regime world (``tagrpo.toy``); ``sums``: SmolLM2-135M-Instruct on
sums in four surface forms; ``real_regimes``: SmolLM2-135M-Instruct in regimes (a setting each: where q0 and the
rephrasings come from). A task module has ``prepare``, ``cell``, ``compute`` (module level: the process pool's
workers import it), ``premise_cells``, ``q0_of``, ``FORMS``, ``arm_columns``, ``describe`` and
``premise_section``."""

from __future__ import annotations

import importlib

from tagrpo.common.modes import check_mode

TASKS = ("regime", "sums", "real_regimes")


def task_module(name: str):
    check_mode("task", name, TASKS)
    return importlib.import_module(f"tagrpo.experiments.tasks.{name}")
