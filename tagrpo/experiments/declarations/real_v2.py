"""The real-model study, second version (issue 33; ``studies/real_study_v2.py``), declared before any of its runs.

Why a second version: the first (superseded; ``studies/results/real_study.md``: 3 seeds) decided nothing, its splits
shared problems (67 of 140 test sums had their swap in train; 3+1, the prompt's worked example, was a test sum), and
its sweep ran one seed at half the steps. What changed:

- Task (``tagrpo.data.sum_problems``, scheme ``pairs``): splits by unordered pair (104 / 30 / 74 pairs, 197 / 58
  / 142 problems), the templates' worked examples in no split. q0's form: the hardest whose base accuracy on
  validation lies in 10-70% (the premise cell; ``tasks.sums.choose_q0``). TA-GRPO's rephrasings are the other three
  forms, made by rule (exact); the control's are q0's form renamed.
- Settings (``smollm_sums.V2``): one-example prompt in the chat template, 12 completion tokens, 4 questions per step,
  two optimizer steps per generation batch, bf16 autocast, no gradient checkpointing, shared prompt cache and prefix;
  32 generation steps (1,024 rollouts per arm and seed for TA-GRPO, its control and equal-sampling GRPO).
- Sweep: every arm at 1e-5, 3e-5, 1e-4 on validation problems, two seeds, at the study's full length, one objective
  for every arm (validation pass@1 + pass@8 on q0), ties to the smaller rate; edge rule 3e-6 / 3e-4.
- Primary (10 seeds): TA-GRPO against equal-sampling GRPO and against the renaming-only control, pass@1 and pass@8
  on q0's form, paired by seed, Holm over the four. An undecided one is "no difference" when two one-sided tests put
  it inside +-5 pp (Holm over the four TOST p-values; declared 2026-12-04 before any study cell ran). Power: at the
  first study's per-seed SD (8.9 pp) 10 seeds give a 90% half-width of 5.1 pp.
- Exploratory (5 seeds, uncorrected): pooling without anchoring, plain GRPO (G=2, a quarter of the rollouts), GRPO
  on 2.5x the questions (G=2, 2.5x the steps: 640 rollouts, not TA-GRPO's 1,024), and issue 32's recommended variant
  (rephrased rows weighted 0.5). TA-GRPO against each, the variant against equal-sampling GRPO, every arm against
  the base at pass@1.
- Post hoc (added 2026-12-04 after the primary verdicts, uncorrected): TA-GRPO against the primary references on the
  hard subset (the same seed's base 0 of 8 on q0) and the rest. No arm-vs-base subset contrast (regression to the
  mean).

Budget: about 115 cells, 9 hours of wall time on 2 idle cores (measured: 1,169.7 min of cell time in all).
"""

from __future__ import annotations

from tagrpo.experiments.study import KMAX, Contrast, Study, Sweep
from tagrpo.toy import smollm_sums

VARIANT = "ta_grpo_w50"  # issue 32's recommended variant (tagrpo.demo.arms.RECOMMENDED)
PRIMARY_ARMS = ("ta_grpo", "equal_sampling", "ta_grpo_control")
EXPLORATORY_ARMS = ("pooled_no_anchor", "grpo", "grpo_more_data", VARIANT)
REFS = ("equal_sampling", "ta_grpo_control")
KS = (1, KMAX)  # pass@1 and pass@8 (the test samples per question)

STUDY = Study(
    name="real_v2",
    title="A real LLM, second version: TA-GRPO on SmolLM2-135M-Instruct, clean splits, 10 seeds (issue 33)",
    task="sums",
    script="studies/real_study_v2.py",
    outputs="real_study_v2",
    settings=(None,),
    arms={a: smollm_sums.ARMS[a] for a in (*PRIMARY_ARMS, *EXPLORATORY_ARMS)},
    primary_arms=PRIMARY_ARMS,
    exploratory_arms=EXPLORATORY_ARMS,
    seeds=tuple(range(10)),
    exploratory_seeds=tuple(range(5)),
    sweep=Sweep(rates=(1e-5, 3e-5, 1e-4), seeds=(100, 101), samples=smollm_sums.EVAL_SAMPLES, low_edge=3e-6,
                high_edge=3e-4),
    primary=tuple(Contrast("ta_grpo", ref, k) for ref in REFS for k in KS),
    exploratory=(*(Contrast("ta_grpo", ref, k) for ref in EXPLORATORY_ARMS for k in KS),
                 *(Contrast(VARIANT, "equal_sampling", k) for k in KS),
                 *(Contrast(arm, "base", 1) for arm in (*PRIMARY_ARMS, *EXPLORATORY_ARMS))),
    post_hoc=tuple(Contrast("ta_grpo", ref, k, subset) for ref in REFS for subset in ("hard", "rest") for k in KS),
    samples=smollm_sums.EVAL_SAMPLES,
    margin=0.05,
    tost=True,
    task_options={"setting": smollm_sums.V2, "steps": 32, "tag": "real_v2"},
    beside="toy_regime_v2",
)
