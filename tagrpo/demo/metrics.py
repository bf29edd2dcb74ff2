"""One number of one demo run (``tagrpo.demo.config.run_demo``'s per-arm output), by name, for the demo's report
(``tagrpo.demo.report``): pass@k, diversity, the rise of q0's uniform groups over training, the share of
uniform groups the arm normalises over in the second half of training."""

from __future__ import annotations

import math
from statistics import mean

import numpy as np


def hard_mask(base_counts) -> np.ndarray:
    """(Q,) True where the base model got none of its samples right on q0."""
    return np.asarray(base_counts) == 0


def quarter_mean(steps: list[dict], key: str, last: bool) -> float:
    values = [s[key] for s in steps if s.get(key) is not None]
    q = max(1, len(values) // 4)
    part = values[-q:] if last else values[:q]
    return mean(part) if part else math.nan


def metric(run: dict, name: str) -> float:
    """One number of one run: ``pass@k``, ``diversity``, ``uniform_rise`` / ``all_one_rise`` / ``all_zero_rise``
    (q0 groups, last quarter of training minus first), ``zero_advantage_2nd_half`` (share of the groups the arm
    normalises over, pools or prompt groups, whose rewards are all equal, over the second half of training)."""
    if name.startswith("pass@"):
        return run["pass_at_k"].get(name[5:], math.nan)
    if name == "diversity":
        return run["diversity"]
    steps = run.get("steps") or []
    rises = {"uniform_rise": "zero_std", "all_one_rise": "all_one", "all_zero_rise": "all_zero"}
    if name in rises:
        key = f"tagrpo/original/{rises[name]}"
        return quarter_mean(steps, key, True) - quarter_mean(steps, key, False)
    if name == "zero_advantage_2nd_half":
        key = zero_advantage_key(run)
        values = [s[key] for s in steps[len(steps) // 2 :] if key in s]
        return mean(values) if values else math.nan
    raise ValueError(f"unknown metric {name!r}")


def zero_advantage_key(run: dict) -> str:
    """The logged share of uniform groups among those the run normalises over (its pools, or its prompt groups)."""
    return "tagrpo/pool/zero_std" if run.get("advantage_scope", "pool") == "pool" else "tagrpo/variant/zero_std"
