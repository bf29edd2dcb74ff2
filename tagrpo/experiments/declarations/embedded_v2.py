"""The regime map, second version (issue 32; ``studies/toy_regime_v2.py``), declared before any of its runs.

Why a second version: the first (superseded; ``studies/results/toy_regime.md``) found TA-GRPO rescuing hidden
questions but losing pass@1 on the rest, with every arm's learning rate chosen at one knob (0.6) and reused at the
others. This version asks whether that cost is the method's or the testbed's, and whether a variant keeps the
rescue without the cost. What changed against v1:

- Every arm's rate is swept **at every knob** (validation problems, two sweep seeds, the same objective for every
  arm: pass@1 + pass@16 on q0). Rates 1e-5, 3e-5, 1e-4 (v1 found 3e-4 and 1e-3 collapsing every arm at 0.6), and
  an arm whose best at a knob is the grid's top is also swept at 3e-4 there (the edge rule).
- Arms that separate and trade the two candidate causes of the cost (pooled normalisation; anchored terms from the
  rephrased rows): gated pools (``ta_grpo_gated``: a question's rephrased rows carry signal only when its q0 group
  is all wrong), a weight lambda < 1 on the anchored rephrased rows (``ta_grpo_w25``, ``ta_grpo_w50``: lambda is
  chosen with the rate on validation at each knob, and the chosen one is the arm ``weighted``), the paper's k3 KL
  (``ta_grpo_kl``, beta 0.001) and in-step adaptive pools (``ta_grpo_adaptive``).
- The issue's pilot (per-variant normalisation with q0 anchoring, ``ta_grpo_variant``) is reproduced at its own
  fixed rates, seeds and knobs, not swept.

The primary family (Holm across every knob) is v1's (TA-GRPO against equal-sampling GRPO, GRPO-long and the
renaming-only control, pass@1 and pass@k_max, overall and on the hard subset, which is empty at a knob of 0) plus
each candidate (gated, weighted) against equal-sampling GRPO on the rest at pass@1 (non-inferiority at -2 pp) and on
the hard subset at pass@k_max. Issue 32's goal is judged per knob from the same cells. Exploratory: every new arm
against TA-GRPO and equal-sampling GRPO (rest pass@1, hard pass@k_max); no arm-vs-base hard-subset contrast (the
subset is chosen by the base's own zeros: regression to the mean). Post hoc (issue 33, added after the runs, to set
this world beside the real model by difficulty): TA-GRPO against equal-sampling GRPO and the control on the rest.

Budget (issue 32: about 8 hours of cell time; v1's cells ran 60-100 s each on one thread): about 9.3 h estimated;
it took 11.2 h. Cut, and said so: the capacity point is a study of its own (``capacity``); pooled-no-anchor, GRPO and
the behavior anchor are not rerun (v1 holds them).
"""

from __future__ import annotations

from tagrpo.experiments.study import KMAX, Contrast, Fixed, Goal, Study, Sweep

KNOBS = (0.0, 0.6, 0.9)
CANDIDATES = ("ta_grpo_gated", "weighted")
EXPLORATORY_ARMS = ("ta_grpo_kl", "ta_grpo_adaptive")
PILOT = Fixed("ta_grpo_variant", rates=(3e-5, 1e-4), settings=(0.6, 0.9), seeds=tuple(range(5)))


def _primary() -> list[Contrast]:
    out = []
    for knob in KNOBS:
        for ref in ("equal_sampling", "grpo_long", "ta_grpo_control"):
            for subset in ("all", "hard") if knob > 0 else ("all",):
                out += [Contrast("ta_grpo", ref, k, subset, knob) for k in (1, KMAX)]
    for knob in KNOBS:
        for arm in CANDIDATES:
            out.append(Contrast(arm, "equal_sampling", 1, "rest", knob, "matches"))
            if knob > 0:
                out.append(Contrast(arm, "equal_sampling", KMAX, "hard", knob))
    return out


def _exploratory() -> list[Contrast]:
    out = []
    for knob in KNOBS:
        for arm in (*CANDIDATES, *EXPLORATORY_ARMS, *(PILOT.name(r) for r in PILOT.rates)):
            if arm.startswith(PILOT.arm) and knob not in PILOT.settings:
                continue
            for ref in ("ta_grpo", "equal_sampling"):
                out.append(Contrast(arm, ref, 1, "rest", knob))
                if knob > 0:
                    out.append(Contrast(arm, ref, KMAX, "hard", knob))
    return out


STUDY = Study(
    name="embedded_v2",
    title="The regime map, second version (issue 32)",
    task="regime",
    script="studies/toy_regime_v2.py",
    outputs="toy_regime_v2",
    settings=KNOBS,
    arms={a: {} for a in ("ta_grpo", "equal_sampling", "grpo_long", "ta_grpo_control", "ta_grpo_gated", "ta_grpo_w25",
                          "ta_grpo_w50", "ta_grpo_kl", "ta_grpo_adaptive", "ta_grpo_variant")},
    primary_arms=("ta_grpo", "equal_sampling", "grpo_long", "ta_grpo_control", *CANDIDATES),
    exploratory_arms=EXPLORATORY_ARMS,
    seeds=tuple(range(10)),
    exploratory_seeds=tuple(range(5)),
    sweep=Sweep(rates=(1e-5, 3e-5, 1e-4), seeds=(100, 101), samples=16, high_edge=3e-4, base=True),
    primary=tuple(_primary()),
    exploratory=tuple(_exploratory()),
    post_hoc=tuple(Contrast("ta_grpo", ref, k, "rest", knob) for knob in KNOBS
                   for ref in ("equal_sampling", "ta_grpo_control") for k in (1, KMAX)),
    samples=64,
    margin=0.02,
    choices={"weighted": ("ta_grpo_w25", "ta_grpo_w50")},
    fixed=(PILOT,),
    goal=Goal(CANDIDATES, non_inferiority=0.02, keep_gain=0.8),
    forms_seeds=tuple(range(5)),
)
