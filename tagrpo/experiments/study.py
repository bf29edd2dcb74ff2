"""The regime study (``studies/toy_regime.py``): its design, declared before its runs, and its verdicts.

The design is fixed here, in code, before any of the study's runs: the knob settings, the arms, the seeds, the
learning-rate sweep and its objective, and the primary contrasts. Everything not in ``primary_contrasts`` is
exploratory and labelled so.

A *cell* is one arm trained at one knob setting (``hard_share``) with one seed and one learning rate; its result
holds the per-question correct counts of ``samples`` draws on the seed's held-out q0 questions. The seed's *base*
result holds the base model's counts on the same questions; a question is *hard* when the base got 0 of
``samples`` right on it, the *rest* are the others. ``subset_pass`` is the unbiased pass@k averaged over the
questions of one subset. A contrast is judged on the paired per-seed differences (arm minus reference, same knob
and seed): Student-t 95% interval, two-sided t-test; the primary family is Holm-corrected as one family across all
knob settings. Verdicts as in ``tagrpo.evaluation.verdicts``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tagrpo.common.modes import check_mode
from tagrpo.core import pass_at_k
from tagrpo.evaluation.stats import equivalence, interval, t_test
from tagrpo.evaluation.verdicts import ALPHA, holm_and_verdicts

KNOBS = (0.0, 0.6, 0.9)  # hard_share settings: today's regime (the easy end) to the hardest
HARDEST = max(KNOBS)
PRIMARY_ARMS = ("ta_grpo", "equal_sampling", "grpo_long", "ta_grpo_control")
EXPLORATORY_ARMS = ("grpo", "ta_grpo_behavior", "pooled_no_anchor")
ADAPTIVE_ARMS = ("ta_grpo_history", "ta_grpo_adaptive")  # the hardest setting only, at TA-GRPO's learning rate
SEEDS = tuple(range(10))  # primary arms
EXPLORATORY_SEEDS = tuple(range(5))  # exploratory and adaptive arms
SWEEP_SEEDS = (100, 101)  # never reported
SWEEP_LRS = (1e-5, 3e-5, 1e-4, 3e-4, 1e-3)  # half-decades up to half the pretraining rate (2e-3); 1e-5 added
# after the first four left five arms at their lowest value (a grid edge)
SWEEP_KNOB = 0.6  # the sweep runs at one setting; its learning rates serve every setting
SWEEP_SAMPLES = 16  # per validation question
SUBSETS = ("all", "hard", "rest")
EQUIVALENCE_MARGIN = 0.02  # "about equal": both one-sided bounds inside +-2 pp
# RL check (studies/toy_rl_check.py), declared after the study found GRPO flat at the preset's budget: plain
# GRPO at RL_CHECK_STEPS generation steps (8x the preset's), its rate chosen on validation pass@1 at h=0 (every
# question learnable there) over RL_CHECK_LRS on SWEEP_SEEDS, then SEEDS at every knob on the study's test cells.
RL_CHECK_STEPS = 96
RL_CHECK_LRS = (1e-5, 3e-5, 1e-4)
RL_CHECK_SWEEP_KNOB = 0.0


def sweep_objective(pass_at_k: dict) -> float:
    """What the sweep maximises, for every arm alike: validation pass@1 + pass@SWEEP_SAMPLES on q0."""
    return pass_at_k["1"] + pass_at_k[str(SWEEP_SAMPLES)]


def choose_learning_rates(rows: list[dict]) -> dict[str, float]:
    """Per arm, the learning rate with the best sweep objective averaged over the sweep seeds.

    ``rows``: ``{"arm", "learning_rate", "seed", "objective"}``, one per sweep cell."""
    scores: dict[str, dict[float, list[float]]] = {}
    for r in rows:
        scores.setdefault(r["arm"], {}).setdefault(r["learning_rate"], []).append(r["objective"])
    return {arm: max(by_lr, key=lambda lr: (np.mean(by_lr[lr]), -lr)) for arm, by_lr in scores.items()}


def hard_mask(base_counts) -> np.ndarray:
    """(Q,) True where the base model got none of its samples right on q0."""
    return np.asarray(base_counts) == 0


def subset_pass(counts, samples: int, base_counts, subset: str, k: int) -> float:
    """Mean unbiased pass@k over the questions of ``subset`` (all, hard, rest); NaN when it holds none."""
    check_mode("subset", subset, SUBSETS)
    counts = np.asarray(counts)  # (Q,)
    keep = np.ones(len(counts), bool) if subset == "all" else hard_mask(base_counts) == (subset == "hard")  # (Q,)
    if not keep.any():
        return math.nan
    return float(pass_at_k(np.full(int(keep.sum()), samples), counts[keep], k).mean())


@dataclass(frozen=True)
class Contrast:
    knob: float
    arm: str
    ref: str  # "base": against the base model on the same questions
    subset: str
    k: int
    kind: str = "greater"  # greater, less, matches: as in tagrpo.evaluation.verdicts
    primary: bool = False

    @property
    def text(self) -> str:
        return f"h={self.knob:g}: {self.arm} - {self.ref}, pass@{self.k} on {self.subset}"


def primary_contrasts(k_max: int) -> list[Contrast]:
    """TA-GRPO against equal-sampling GRPO, GRPO-long and the renaming-only control, at pass@1 and pass@k_max,
    overall and on the hard subset (not at a knob of 0, where the hard subset is a question or two)."""
    out = []
    for knob in KNOBS:
        for ref in ("equal_sampling", "grpo_long", "ta_grpo_control"):
            for subset in ("all", "hard") if knob > 0 else ("all",):
                out += [Contrast(knob, "ta_grpo", ref, subset, k, primary=True) for k in (1, k_max)]
    return out


def exploratory_contrasts(k_max: int) -> list[Contrast]:
    """Anchoring (q0 against the behavior prompt, against none), TA-GRPO against plain GRPO, and whether training
    raises q0's own accuracy on the hard subset (arm against the base)."""
    out = []
    for knob in KNOBS:
        subsets = ("all", "hard") if knob > 0 else ("all",)
        for ref in ("ta_grpo_behavior", "pooled_no_anchor", "grpo"):
            out += [Contrast(knob, "ta_grpo", ref, s, k) for s in subsets for k in (1, k_max)]
        if knob > 0:
            out += [Contrast(knob, arm, "base", "hard", 1) for arm in ("ta_grpo", "pooled_no_anchor", "equal_sampling")]
    return out


def cell_value(cells: dict, bases: dict, c: Contrast, arm: str, seed: int, k: int) -> float:
    run = bases[(c.knob, seed)] if arm == "base" else cells[(c.knob, seed, arm)]
    base = bases[(c.knob, seed)]
    return subset_pass(run["counts"], run["samples"], base["counts"], c.subset, k)


def paired_values(cells: dict, bases: dict, c: Contrast) -> list[float]:
    """Per-seed ``arm - ref`` on the contrast's subset, for seeds where both cells exist (NaN subsets dropped)."""
    seeds = sorted({s for (h, s, a) in cells if h == c.knob and a == c.arm})
    values = []
    for s in seeds:
        if (c.ref != "base" and (c.knob, s, c.ref) not in cells) or (c.knob, s) not in bases:
            continue
        x = cell_value(cells, bases, c, c.arm, s, c.k) - cell_value(cells, bases, c, c.ref, s, c.k)
        if not math.isnan(x):
            values.append(x)
    return values


def judge(cells: dict, bases: dict, contrasts: list[Contrast]) -> list[dict]:
    """Each contrast with its paired values, interval, p, Holm-adjusted p (primary family) and verdict.

    ``cells``: ``{(knob, seed, arm): result}``; ``bases``: ``{(knob, seed): base result}``."""
    rows = []
    for c in contrasts:
        values = paired_values(cells, bases, c)
        null = -EQUIVALENCE_MARGIN if c.kind == "matches" else 0.0
        rows.append({**c.__dict__, "text": c.text, **interval(values), "values": values, "p": t_test(values, null),
                     "family": "primary" if c.primary else "exploratory"})
    return holm_and_verdicts(rows)


def gain_condition(cells: dict, bases: dict, knob: float, arm: str) -> dict:
    """RL works: ``arm``'s pass@1 gain over the base on the questions it can learn (the rest), met when the 95%
    interval's lower bound is above 0."""
    ci = interval(paired_values(cells, bases, Contrast(knob, arm, "base", "rest", 1)))
    met = not math.isnan(ci["lo"]) and ci["lo"] > 0
    return {"knob": knob, "arm": arm, **ci, "status": "met" if met else "not met"}


def about_equal(values: list[float], margin: float = EQUIVALENCE_MARGIN) -> dict:
    """TOST: "about equal" when both one-sided tests reject at ``ALPHA`` (the 90% interval inside +-margin)."""
    tost = equivalence(values, margin)
    return {**interval(values), "p_tost": tost["p"], "equivalent": bool(tost["p"] < ALPHA)}
