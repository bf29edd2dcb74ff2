"""The capacity point of issue 32 (``studies/toy_capacity.py``), declared before any of its runs.

Question: does TA-GRPO's rest pass@1 cost against equal-sampling GRPO (``embedded_v2``) shrink on a base with about
four times the parameters? The base is the shipped regime base's recipe (``RegimePretrainConfig``: the same corpus,
steps, seed and one-thread loop) at a width of 328 instead of 160: 3,966,176 parameters against 967,040, 4.10x
(320 would give 3.91x; 324's head size, 81, is odd, which rotary embeddings do not take). It is not shipped (about
15 MB): the study rebuilds it bit for bit with one command and records its SHA-256, which keys its cells. One
pretraining draw per size: base-to-base variance is not measured.

- One knob, 0.6 (where v1 found the cost to be a gain missed rather than damage done).
- Arms: v2's primary arms and both of its candidates (gated pools; the rephrased weight, lambda chosen with the
  rate), swept as in v2 on this base.
- 5 seeds per arm (the issue's minimum); the base's premise (every form) measured on every seed. Seeds that share
  the same questions are paired within this study; the cost change compares two studies' per-seed differences
  unpaired (Welch), which ignores that seed s draws the same questions in both.
- Primary (Holm over the family): TA-GRPO and each candidate against equal-sampling GRPO (rest pass@1: TA-GRPO
  two-sided, candidates non-inferiority at -2 pp; hard pass@k_max), and the *cost change*: TA-GRPO minus
  equal-sampling on the rest at pass@1 here minus the same on v2's base ("greater": the cost shrinks).

Budget: about 80 cells, each slower than v2's by the model's size. Cut: the knob 0.9 and the exploratory arms.
"""

from __future__ import annotations

from dataclasses import replace

from tagrpo.experiments.declarations import embedded_v2 as v2
from tagrpo.experiments.study import KMAX, Contrast, Goal, Study

KNOB = 0.6
ARMS = ("ta_grpo", "equal_sampling", "grpo_long", "ta_grpo_control", *v2.CANDIDATES)


def _primary() -> list[Contrast]:
    out = [Contrast("ta_grpo", "equal_sampling", 1, "rest", KNOB),
           Contrast("ta_grpo", "equal_sampling", KMAX, "hard", KNOB)]
    for arm in v2.CANDIDATES:
        out += [Contrast(arm, "equal_sampling", 1, "rest", KNOB, "matches"),
                Contrast(arm, "equal_sampling", KMAX, "hard", KNOB)]
    return out + [Contrast("ta_grpo", "equal_sampling", 1, "rest", KNOB, versus="embedded_v2")]


STUDY = Study(
    name="capacity",
    title="The capacity point (issue 32, item 3)",
    task="regime",
    script="studies/toy_capacity.py",
    outputs="toy_capacity",
    settings=(KNOB,),
    arms={a: {} for a in (*ARMS[:-1], *v2.STUDY.choices["weighted"])},
    primary_arms=ARMS,
    exploratory_arms=(),
    seeds=tuple(range(5)),
    exploratory_seeds=(),
    sweep=replace(v2.STUDY.sweep, forms=True),
    primary=tuple(_primary()),
    samples=64,
    margin=0.02,
    choices=v2.STUDY.choices,
    goal=Goal(v2.CANDIDATES),
    forms_seeds=tuple(range(5)),
    task_options={"base": {"hidden_size": 328}},
)
