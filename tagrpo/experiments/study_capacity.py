"""The capacity point of issue 32 (``studies/toy_capacity.py``): declared here before any of its runs.

Question: does TA-GRPO's rest pass@1 cost against equal-sampling GRPO (study v2, ``study_v2``) shrink on a base
with about four times the parameters? The base is the shipped regime base's recipe (``RegimePretrainConfig``: the
same corpus, steps, seed and one-thread loop) at a width of 328 instead of 160 (``BASE``): 3,966,176 parameters
against 967,040, 4.10x (320 would give 3.91x; 324's head size, 81, is odd, which rotary embeddings do not take; the
count is measured and recorded). It is not shipped (about 15 MB): the study rebuilds it bit for bit with one command and
records its SHA-256, which keys its cells (a different build is never mixed with these cells).

- One knob, ``KNOB`` (0.6: the setting where v1 found the cost to be a gain missed rather than damage done).
- Arms: v2's primary arms (TA-GRPO, equal-sampling GRPO, GRPO-long, the renaming-only control) and both of its
  candidates (gated pools; the rephrased weight, lambda chosen with the rate), swept as in v2: ``SWEEP_LRS`` on
  ``SWEEP_SEEDS`` (validation problems, v2's objective and edge rule) on this base.
- ``SEEDS``: 5 per arm (the issue's minimum); the base's premise (every form) measured on every seed.
- The primary family (Holm over it): on this base, TA-GRPO and each candidate against equal-sampling GRPO (rest
  pass@1: TA-GRPO two-sided, candidates non-inferiority at -2 pp; hard pass@k_max), and the *cost change*:
  TA-GRPO's rest pass@1 difference from equal-sampling here minus the same difference on v2's base at ``KNOB``
  (independent seeds: Welch), "greater" meaning the cost shrinks.

Budget: (7 arms x 3 rates + edge) x 2 seeds + 2 base cells in the sweep, 5 x (6 arms + base) in the study: about
80 cells, each slower than v2's by the model's size (measured in the report). Cut: the knob 0.9 and the
exploratory arms.
"""

from __future__ import annotations

from tagrpo.experiments import study_v2 as v2
from tagrpo.experiments.study import Contrast

BASE = {"hidden_size": 328}  # RegimePretrainConfig's other settings unchanged (hidden 160: the shipped base)
KNOB = 0.6
ARMS = ("ta_grpo", "equal_sampling", "grpo_long", "ta_grpo_control", *v2.CANDIDATES)
SWEPT_ARMS = tuple(a for a in ARMS if a != "weighted") + v2.WEIGHTED
SWEEP_LRS, EDGE_LR, SWEEP_SEEDS, SAMPLES = v2.SWEEP_LRS, v2.EDGE_LR, v2.SWEEP_SEEDS, v2.SAMPLES
SEEDS = tuple(range(5))
COST = "cost change"  # the contrast's ``ref``: TA-GRPO - equal-sampling (rest pass@1), this base minus v2's


def primary_contrasts(k_max: int) -> list[Contrast]:
    """The capacity family: TA-GRPO and each candidate against equal-sampling GRPO at ``KNOB`` on this base, and
    the cost change (a ``Contrast`` with ``ref=COST``, judged by ``capacity_report.cost_change``)."""
    out = [Contrast(KNOB, "ta_grpo", "equal_sampling", "rest", 1, "greater", True),
           Contrast(KNOB, "ta_grpo", "equal_sampling", "hard", k_max, "greater", True)]
    for arm in v2.CANDIDATES:
        out += [Contrast(KNOB, arm, "equal_sampling", "rest", 1, "matches", True),
                Contrast(KNOB, arm, "equal_sampling", "hard", k_max, "greater", True)]
    return out + [Contrast(KNOB, "ta_grpo", COST, "rest", 1, "greater", True)]
