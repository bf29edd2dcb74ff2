"""The paper's claims on the embedded world, each a paired comparison over seeds with a computed verdict.

A result is one seed's ``run_demo`` output; two arms of one seed share the base, the training questions, the
held-out questions and the sampling seed, so a claim is judged on the per-seed differences ``d_s = x_arm - x_ref``:
their mean, the 95% Student-t interval, and the two-sided t-test p-value against the claim's null (0, or
``-MARGIN`` for "matches"), from ``tagrpo.evaluation.stats``.

- Primary claims (declared here: TA-GRPO against equal-sampling GRPO, GRPO-long and the renaming-only control,
  at pass@1 and pass@k_max; written after the first five-seed runs had been seen, so post hoc for those and
  pre-registered for later ones) are one family: their p-values are Holm-adjusted. Every other
  claim is exploratory and judged on its own p-value, and says so.
- Verdicts (``greater``, ``less``, ``matches``) and Holm's correction as in ``tagrpo.evaluation.verdicts``, which
  the regime study and the real-model study share.

The testbed's conditions: a "≥" condition is met when the interval's lower bound reaches it; "about 0" is an
equivalence test (TOST within ``MARGIN``). One seed gives no interval: every verdict of a single seed is
inconclusive, and the demo never claims one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import mean

from tagrpo.evaluation.stats import equivalence, interval, t_test
from tagrpo.evaluation.verdicts import ALPHA, MARGIN, holm_and_verdicts, null_of

GAIN_TARGET = 0.10  # GRPO's required pass@1 gain over the base model


def pass_key(k: int) -> str:
    return f"pass@{k}"


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


@dataclass(frozen=True)
class Claim:
    number: int
    text: str
    metric: str
    arm: str
    ref: str | None  # None: the arm's own value is tested against 0
    kind: str = "greater"
    primary: bool = False  # one of the declared, Holm-corrected family


def claims(k_max: int) -> list[Claim]:
    """The paper's claims as testable comparisons; ``k_max`` is the largest k evaluated (16 by default)."""
    keys = (pass_key(1), pass_key(k_max))
    out = [Claim(1, f"TA-GRPO beats GRPO in {key}", key, "ta_grpo", "grpo") for key in keys]
    out += [Claim(2, f"TA-GRPO beats {label} in {key} (same rollouts)", key, "ta_grpo", arm, primary=True)
            for arm, label in (("equal_sampling", "equal-sampling GRPO"), ("grpo_long", "GRPO-long")) for key in keys]
    out += [Claim(7, f"TA-GRPO beats its renaming-only control in {key} (same rollouts)", key, "ta_grpo",
                  "ta_grpo_control", primary=True) for key in keys]
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
    """Every claim whose arms were run: the paired differences, their interval, p-values (Holm-adjusted within
    the primary family) and the verdict."""
    arms = set(results[0]["runs"])
    rows = []
    for c in claims(k_max):
        if c.arm not in arms or (c.ref and c.ref not in arms):
            continue
        values = paired(results, c.metric, c.arm, c.ref)
        rows.append({**c.__dict__, **interval(values), "values": values, "p": t_test(values, null_of(c.kind)),
                     "family": "primary" if c.primary else "exploratory"})
    return holm_and_verdicts(rows)


def requirements(results: list[dict]) -> list[dict]:
    """The testbed's own conditions, each with its interval over seeds: GRPO's pass@1 gain over the base (met when
    the interval's lower bound reaches ``GAIN_TARGET``), the premise that q0 is hard and the symbolic form easy
    (lower bound >= 0.3), and the renaming control as hard as q0 (equivalence within ``MARGIN``, TOST)."""
    out = []
    if "grpo" in results[0]["runs"]:
        ci = interval(paired(results, pass_key(1), "grpo", "base"))
        out.append({"text": f"GRPO raises held-out pass@1 over the base by >= {GAIN_TARGET:+.2f} (lower bound)", **ci,
                    "status": "met" if ci["lo"] >= GAIN_TARGET else "not met"})
    premises = [r["premise"] for r in results if r.get("premise")]
    if premises:
        gap = interval([p["symbolic"] - p["spelled"] for p in premises])
        out.append({"text": "base pass@1: symbolic rephrasing minus q0's spelled form (premise: >= 0.30, lower bound)",
                    **gap, "status": "met" if gap["lo"] >= 0.3 else "not met"})
        diffs = [p["renamed"] - p["spelled"] for p in premises]
        tost = equivalence(diffs, MARGIN)
        out.append({"text": f"base pass@1: renamed control minus q0 (premise: within ±{MARGIN:.2f}, TOST)",
                    **interval(diffs), "p_tost": tost["p"], "status": "met" if tost["p"] < ALPHA else "not met"})
    return out
