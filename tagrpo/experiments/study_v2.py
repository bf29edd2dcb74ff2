"""The regime study, second version (issue 32; ``studies/toy_regime_v2.py``): declared here before any of its runs.

Why a second version: the first (``study.py``, ``studies/results/toy_regime.md``) found TA-GRPO rescuing hidden
questions but losing pass@1 on the rest, with every arm's learning rate chosen at one knob (0.6) and reused at the
others. This version asks whether that cost is the method's or the testbed's, and whether a variant keeps the
rescue without the cost. What changes against v1:

- Every arm's rate is swept **at every knob** (validation problems, ``SWEEP_SEEDS``, the same objective for every
  arm: v1's ``sweep_objective``). Rates ``SWEEP_LRS``; v1 found 3e-4 and 1e-3 collapsing every arm at 0.6, so
  they are dropped, except that an arm whose best at a knob is the grid's top (1e-4) is also swept at ``EDGE_LR``
  there (the edge rule).
- New arms that separate and trade the two candidate causes of the cost (pooled normalisation; anchored terms
  from the rephrased rows): gated pools (``ta_grpo_gated``: a question's rephrased rows carry signal only when
  its q0 group is all wrong), a weight lambda < 1 on the anchored rephrased rows (``ta_grpo_w25``, ``ta_grpo_w50``:
  lambda is chosen with the rate on validation at each knob, and the chosen one is the arm ``weighted``), the
  paper's k3 KL (``ta_grpo_kl``, beta 0.001) and in-step adaptive pools at every knob (``ta_grpo_adaptive``).
- The pilot of the issue (per-variant normalisation with q0 anchoring, ``ta_grpo_variant``) is reproduced at its
  own fixed rates, seeds and knobs (``PILOT``), not swept.

The primary family (Holm across every knob) is v1's (TA-GRPO against equal-sampling GRPO, GRPO-long and the
renaming-only control, pass@1 and pass@k_max, overall and on the hard subset) plus each candidate (gated,
weighted) against equal-sampling GRPO on the rest at pass@1 (non-inferiority at -2 pp) and on the hard subset
at pass@k_max. The goal of issue 32 (``goal``) is judged per knob from the same cells.

Budget (issue 32: about 8 hours of cell time; v1's cells ran 60-100 s each on one thread): the sweep is
9 arms x 3 rates x 2 seeds x 3 knobs = 162 cells (about 3.8 h), the study 6 primary arms x 10 seeds x 3 knobs +
its base cells (about 4.5 h), the exploratory arms 5 seeds (about 0.6 h) and the pilot 20 cells (about 0.4 h):
about 9.3 h. Cut, and said so: the capacity point (a 4x base) is a separate study; pooled-no-anchor, GRPO and the
behavior anchor are not rerun (v1 holds them).
"""

from __future__ import annotations

import numpy as np

from tagrpo.experiments.study import SWEEP_SAMPLES, Contrast, primary_contrasts, sweep_objective

KNOBS = (0.0, 0.6, 0.9)
SWEEP_LRS = (1e-5, 3e-5, 1e-4)
EDGE_LR = 3e-4  # swept for an arm at a knob where its best of SWEEP_LRS is the top of the grid
SWEEP_SEEDS = (100, 101)  # never reported
SEEDS = tuple(range(10))  # primary arms
EXPLORATORY_SEEDS = tuple(range(5))
WEIGHTED = ("ta_grpo_w25", "ta_grpo_w50")  # one arm, "weighted": lambda chosen with the rate per knob
CANDIDATES = ("ta_grpo_gated", "weighted")  # the variants judged against issue 32's goal
PRIMARY_ARMS = ("ta_grpo", "equal_sampling", "grpo_long", "ta_grpo_control", *CANDIDATES)
EXPLORATORY_ARMS = ("ta_grpo_kl", "ta_grpo_adaptive")
SWEPT_ARMS = tuple(a for a in PRIMARY_ARMS + EXPLORATORY_ARMS if a != "weighted") + WEIGHTED
PILOT = {"arm": "ta_grpo_variant", "knobs": (0.6, 0.9), "rates": (3e-5, 1e-4), "seeds": tuple(range(5))}


def pilot_arm(lr: float) -> str:
    """The pilot's arm at one of its rates, as the report names it (``tagrpo.experiments.report.label`` reads it)."""
    return f"{PILOT['arm']}@{lr:g}"


PILOT_ARMS = tuple(pilot_arm(lr) for lr in PILOT["rates"])  # in the report: one arm per pilot rate
NON_INFERIORITY = 0.02  # rest pass@1: the candidate's lower bound against equal-sampling above -2 pp
KEEP_GAIN = 0.8  # hard pass@k_max: the candidate keeps >= 80% of TA-GRPO's gain over equal-sampling
OBJECTIVE = sweep_objective  # validation pass@1 + pass@SWEEP_SAMPLES on q0, as v1
SAMPLES = SWEEP_SAMPLES  # per validation question in the sweep, as v1


def choose(rows: list[dict]) -> dict[float, dict[str, float]]:
    """Per knob, each swept arm's rate (ties to the smaller), and the ``weighted`` arm: the lambda arm of
    ``WEIGHTED`` with the best mean objective at its own best rate.

    ``rows``: ``{"arm", "knob", "learning_rate", "seed", "objective"}``, one per sweep cell (the base model's,
    ``arm="base"``, are left out). Returns
    ``{knob: {arm: rate}}`` with ``weighted_arm`` naming the lambda arm chosen (its rate under ``weighted``)."""
    scores: dict[tuple[float, str], dict[float, list[float]]] = {}
    for r in (r for r in rows if r["arm"] != "base"):
        scores.setdefault((r["knob"], r["arm"]), {}).setdefault(r["learning_rate"], []).append(r["objective"])
    chosen: dict[float, dict] = {}
    for (knob, arm), by_lr in scores.items():
        best = max(by_lr, key=lambda lr: (np.mean(by_lr[lr]), -lr))
        chosen.setdefault(knob, {})[arm] = (best, float(np.mean(by_lr[best])))
    out = {}
    for knob, arms in chosen.items():
        out[knob] = {arm: lr for arm, (lr, _) in arms.items()}
        weighted = [a for a in WEIGHTED if a in arms]
        if weighted:
            name = max(weighted, key=lambda a: (arms[a][1], a))
            out[knob].update(weighted=arms[name][0], weighted_arm=name)
    return out


def at_edge(rates: dict[float, dict], arm: str, knob: float, grid: tuple[float, ...] = SWEEP_LRS) -> bool:
    """Whether ``arm``'s chosen rate at ``knob`` is the top of the swept ``grid`` (below ``EDGE_LR``): the edge
    rule then sweeps ``EDGE_LR`` too."""
    top = max(grid)
    return top < EDGE_LR and rates.get(knob, {}).get(arm) == top


def v2_primary_contrasts(k_max: int) -> list[Contrast]:
    """v1's primary family at the v2 knobs, plus each candidate against equal-sampling GRPO: rest pass@1
    (non-inferiority at ``NON_INFERIORITY``, where the rest holds questions) and hard pass@k_max (superiority)."""
    out = list(primary_contrasts(k_max))
    for knob in KNOBS:
        for arm in CANDIDATES:
            out.append(Contrast(knob, arm, "equal_sampling", "rest", 1, "matches", True))
            if knob > 0:
                out.append(Contrast(knob, arm, "equal_sampling", "hard", k_max, primary=True))
    return out


def v2_exploratory_contrasts(k_max: int) -> list[Contrast]:
    """Every new arm against TA-GRPO and against equal-sampling GRPO on the rest (pass@1) and the hard subset
    (pass@k_max); the pilot's arm against equal-sampling; no arm-vs-base hard-subset contrast (the subset is chosen
    by the base's own zeros, so such a contrast carries regression to the mean)."""
    out = []
    for knob in KNOBS:
        for arm in (*CANDIDATES, *EXPLORATORY_ARMS, *PILOT_ARMS):
            if arm in PILOT_ARMS and knob not in PILOT["knobs"]:
                continue
            for ref in ("ta_grpo", "equal_sampling"):
                out.append(Contrast(knob, arm, ref, "rest", 1))
                if knob > 0:
                    out.append(Contrast(knob, arm, ref, "hard", k_max))
    return out + rest_contrasts(k_max)


def rest_contrasts(k_max: int) -> list[Contrast]:
    """Added after the runs (issue 33, to set both worlds side by side by difficulty), uncorrected: TA-GRPO against
    equal-sampling GRPO and the renaming-only control on the rest at pass@1 and pass@k_max (its hard rows are
    primary)."""
    return [Contrast(knob, "ta_grpo", ref, "rest", k) for knob in KNOBS for ref in ("equal_sampling", "ta_grpo_control")
            for k in (1, k_max)]
