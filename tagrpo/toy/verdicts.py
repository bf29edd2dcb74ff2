"""The paper's claims on the embedded world, each a paired comparison over seeds with a computed verdict.

A result is one seed's ``run_demo`` output; two arms of one seed share the base, the training questions, the
held-out questions and the sampling seed, so a claim is judged on the per-seed differences ``d_s = x_arm - x_ref``:
their mean, and the 95% interval ``mean ± t(0.975, n-1) * sd / sqrt(n)`` (Student's t over n seeds).

- ``greater``: reproduced when the interval lies above 0, refuted when it lies below 0, else inconclusive;
- ``less``: the mirror image;
- ``matches`` (non-inferiority within ``MARGIN``): reproduced when the interval lies above ``-MARGIN``, refuted
  when it lies below ``-MARGIN``, else inconclusive.

One seed gives no interval, so every verdict of a single seed is inconclusive: the demo never claims one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import mean, stdev

from scipy.stats import t as student_t

MARGIN = 0.02  # non-inferiority margin of the "matches" claims, absolute (2 percentage points)
GAIN_TARGET = 0.10  # GRPO's required pass@1 gain over the base model


def pass_key(k: int) -> str:
    return f"pass@{k}"


def _quarter(steps: list[dict], key: str, last: bool) -> float:
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
        return _quarter(steps, key, True) - _quarter(steps, key, False)
    if name == "zero_advantage_2nd_half":
        key = zero_advantage_key(run)
        values = [s[key] for s in steps[len(steps) // 2 :] if key in s]
        return mean(values) if values else math.nan
    raise ValueError(f"unknown metric {name!r}")


def zero_advantage_key(run: dict) -> str:
    """The logged share of uniform groups among those the run normalises over (its pools, or its prompt groups)."""
    return "tagrpo/pool/zero_std" if run.get("advantage_scope", "pool") == "pool" else "tagrpo/variant/zero_std"


def interval(values: list[float]) -> dict:
    """Mean and Student-t 95% interval of ``values`` (NaN bounds for fewer than two)."""
    n = len(values)
    m = mean(values) if values else math.nan
    if n < 2:
        return {"mean": m, "lo": math.nan, "hi": math.nan, "n": n}
    half = student_t.ppf(0.975, n - 1) * stdev(values) / math.sqrt(n)
    return {"mean": m, "lo": m - half, "hi": m + half, "n": n}


def verdict(lo: float, hi: float, kind: str) -> str:
    if math.isnan(lo) or math.isnan(hi):
        return "inconclusive"
    if kind == "greater":
        return "reproduced" if lo > 0 else "refuted" if hi < 0 else "inconclusive"
    if kind == "less":
        return "reproduced" if hi < 0 else "refuted" if lo > 0 else "inconclusive"
    if kind == "matches":
        return "reproduced" if lo > -MARGIN else "refuted" if hi < -MARGIN else "inconclusive"
    raise ValueError(f"kind={kind!r} is not valid; expected one of: 'greater', 'less', 'matches'")


@dataclass(frozen=True)
class Claim:
    number: int
    text: str
    metric: str
    arm: str
    ref: str | None  # None: the arm's own value is tested against 0
    kind: str = "greater"


def claims(k_max: int) -> list[Claim]:
    """The paper's claims as testable comparisons; ``k_max`` is the largest k evaluated (16 by default)."""
    keys = (pass_key(1), pass_key(k_max))
    out = [Claim(1, f"TA-GRPO beats GRPO in {key}", key, "ta_grpo", "grpo") for key in keys]
    out += [Claim(2, f"TA-GRPO beats {label} in {key} (same rollouts)", key, "ta_grpo", arm)
            for arm, label in (("equal_sampling", "equal-sampling GRPO"), ("grpo_long", "GRPO-long")) for key in keys]
    out += [Claim(3, f"{what} gains over {over} in {key}", key, arm, ref)
            for what, over, arm, ref in (("augmentation alone", "GRPO", "augmentation", "grpo"),
                                         ("pooling", "augmentation alone", "pooled_no_anchor", "augmentation"),
                                         ("anchoring on q0", "pooling alone", "ta_grpo", "pooled_no_anchor"))
            for key in keys]
    out += [Claim(4, f"TA-GRPO matches GRPO on 2.5x the questions in {key}", key, "ta_grpo", "grpo_more_data",
                  "matches") for key in keys]
    out += [
        Claim(5, "GRPO's uniform-reward share of q0 groups rises (last quarter minus first)", "uniform_rise", "grpo",
              None),
        Claim(5, "GRPO's all-correct share of q0 groups rises (last quarter minus first)", "all_one_rise", "grpo",
              None),
        Claim(5, "TA-GRPO's pools are less often uniform than GRPO's groups (2nd half)", "zero_advantage_2nd_half",
              "ta_grpo", "grpo", "less"),
        Claim(6, "TA-GRPO's responses are more diverse than GRPO's (distinct character bigrams)", "diversity",
              "ta_grpo", "grpo"),
    ]
    return out


def paired(results: list[dict], name: str, arm: str, ref: str | None) -> list[float]:
    """Per-seed values of ``metric(arm) - metric(ref)`` (or of ``metric(arm)`` alone), NaNs dropped."""
    values = []
    for r in results:
        runs = r["runs"]
        x = metric(runs[arm], name) - (metric(runs[ref], name) if ref else 0.0)
        if not math.isnan(x):
            values.append(x)
    return values


def judge(results: list[dict], k_max: int) -> list[dict]:
    """Every claim whose arms were run: the paired differences, their interval and the verdict."""
    arms = set(results[0]["runs"])
    rows = []
    for c in claims(k_max):
        if c.arm not in arms or (c.ref and c.ref not in arms):
            continue
        values = paired(results, c.metric, c.arm, c.ref)
        ci = interval(values)
        rows.append({**c.__dict__, **ci, "values": values, "verdict": verdict(ci["lo"], ci["hi"], c.kind)})
    return rows


def requirements(results: list[dict]) -> list[dict]:
    """The testbed's own conditions: GRPO's pass@1 gain over the base, and the premise (q0 hard, symbolic easy,
    the renaming control as hard as q0), each with its interval over seeds."""
    out = []
    if "grpo" in results[0]["runs"]:
        ci = interval(paired(results, pass_key(1), "grpo", "base"))
        ok = ci["mean"] >= GAIN_TARGET
        out.append({"text": f"GRPO raises held-out pass@1 over the base by >= {GAIN_TARGET:+.2f}", **ci,
                    "status": "met" if ok else "not met"})
    premises = [r["premise"] for r in results if r.get("premise")]
    if premises:
        gap = interval([p["symbolic"] - p["spelled"] for p in premises])
        out.append({"text": "base pass@1: symbolic rephrasing minus q0's spelled form (premise: large)", **gap,
                    "status": "met" if gap["mean"] >= 0.3 else "not met"})
        ctrl = interval([p["renamed"] - p["spelled"] for p in premises])
        same = not (ctrl["lo"] > MARGIN or ctrl["hi"] < -MARGIN) if ctrl["n"] > 1 else abs(ctrl["mean"]) < 0.05
        out.append({"text": "base pass@1: renamed control minus q0 (premise: about 0)", **ctrl,
                    "status": "met" if same else "not met"})
    return out
