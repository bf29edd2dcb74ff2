"""The real-model study, second version (issue 33; ``studies/real_study_v2.py``): declared here before any of its runs.

Why a second version: the first (``real_study.py``, ``studies/results/real_study.md``: 3 seeds, 221.7 min on 2
cores) decided nothing, its splits shared problems (67 of 140 test sums had their swap in train; 3+1, the prompt's
worked example, was a test sum), and its sweep ran one seed at half the steps. What changes:

- Task (``real_task``, scheme ``pairs``): splits by unordered pair (a sum and its swap in one split; 104 / 30 / 74
  pairs, 197 / 58 / 142 problems), the templates' worked examples (``real_task.EXAMPLES``) in no split. q0's form
  is chosen as before (``real_study.choose_q0``: the hardest whose base accuracy on validation lies in 10-70%) from
  a ``premise`` cell on the new validation problems.
- Settings (``STUDY``): the first study's (one-example prompt in the chat template, 12 completion tokens, 4
  questions per step, two optimizer steps per generation batch, bf16 autocast, completion-only scoring, two cells
  at once) without gradient checkpointing (TRL's default, which recomputed the forward in every backward of a
  135M model that needs no memory saving), and the evaluation's samples drawn with
  ``share_prompt_cache`` (``tagrpo.generation``: each prompt through the model once for its 8 samples), and the
  training's log-probs scored with ``share_prompt_prefix`` (``tagrpo.trainer.prefix``: each distinct prompt of a
  chunk once, the rows only their completions; the same log-probs and gradients).
  ``benchmarks/real_throughput.py`` times them against the first study's side by side and scores the base accuracy
  of both on the same questions (``real_throughput.md``).
- Sweep (item 3 of the issue): every arm of the study at ``SWEEP_LRS`` on validation problems, ``SWEEP_SEEDS``
  (two), at the study's full length (``STEPS``), one objective for every arm (validation pass@1 + pass@8 on q0,
  ``real_report.objective``; pass@1 reported beside it), ties to the smaller rate. Edge rule: an arm whose best
  rate is the grid's lowest is also swept at ``LOW_EDGE_LR``, at its highest at ``HIGH_EDGE_LR``, and its rate is
  chosen again over all it ran.
- Primary (10 seeds, ``SEEDS``): TA-GRPO against equal-sampling GRPO and against the renaming-only control, at
  pass@1 and pass@8 on q0's form (140-odd test problems x 8 samples), paired by seed, Holm over these four
  (``primary_contrasts``; ``tagrpo.evaluation.verdicts``). A primary contrast left undecided is called **no
  difference** when two one-sided tests (``tagrpo.evaluation.stats.equivalence``) put it inside
  +-``EQUIVALENCE_MARGIN`` (5 pp: half the +10 pp the first study's point estimate suggested), Holm over the four
  TOST p-values (declared 2026-12-04, before any of its study cells ran). Power: at the first study's per-seed SD
  of the pass@1 difference (8.9 pp) 10 seeds give a 90% half-width of 5.1 pp, so even a true zero difference would
  be called "no difference" at most about half the time; and a contrast with the same value on every seed (pass@8 at
  100% for both arms) is "no difference" by construction (``equivalence`` of a zero spread).
- Exploratory (5 seeds, ``EXPLORATORY_SEEDS``, no correction): pooling without anchoring, plain GRPO (G=2, a
  quarter of the rollouts), GRPO on 2.5x the questions (G=2, 2.5x the steps with 4 new questions each: 320
  questions; the train split holds 197 problems, so 123 come back in a second epoch with other names and items),
  and issue 32's recommended variant (``ISSUE32_VARIANT``: the rephrased rows' advantages weighted 0.5, the
  candidate closest to issue 32's goal in the embedded world, ``studies/results/toy_regime_v2.md``).
  Contrasts: TA-GRPO against each, the variant against equal-sampling GRPO, at pass@1 and pass@8; every arm against
  the base at pass@1 (``exploratory_contrasts``).
- After training, every arm's accuracy in every form (test problems x ``FORM_SAMPLES``; q0's form from its 8).

Budget, estimated (not measured) from the first study's cells (2 workers of one thread on a 2-core CPU: a TA-GRPO
test cell about 1,500 s, of which about 480 s evaluation; a base cell 490 s), this version's settings (training
1.11x cheaper in CPU time, ``benchmarks/results/real_step_profile.md``; the 8-sample evaluation about 2.2x) and
its full-length sweep: the sweep is 7 arms x 3 rates x 2 seeds = 42 cells plus up to 14 of the edge rule (about
56,000 cell-seconds), the study 10 base cells, 3 x 10 primary and 4 x 5 exploratory arm cells (about 64,000): about
115 cells and 17 hours of wall time on 2 idle cores. Measured once ``share_prompt_prefix`` existed (2.52x the first
study's rollouts per CPU second): the TA-GRPO and equal-sampling sweep cells took 513-595 s each, two at a time on 2
otherwise idle cores (the first, 1,127 s, ran beside another study), so the whole study is about 9 hours of wall
time (test cells evaluate 2.4x the validation problems), spread over several sessions.

Every cell (premise, base, or an arm at a rate and seed) is cached under ``--work-dir`` (inside
``studies/results`` by default, so that finished cells are committed as they land: only ``result.jsonl`` and the
invocation log are tracked) and reused only when its spec (which holds ``STUDY`` and the arm's configuration)
matches: an interrupted study resumes on another machine. ``tagrpo/experiments/real_report_v2.py`` writes the
report.
"""

from __future__ import annotations

import math

from tagrpo.experiments import real_study

STUDY = {**real_study.STUDY, "gradient_checkpointing": False, "scheme": "pairs", "share_prompt_cache": True,
         "share_prompt_prefix": True}
SETTINGS = {"study": real_study.STUDY, "v2": STUDY}  # by name: what benchmarks/real_throughput.py compares
STEPS = 32  # 32 x 4 questions x 8 = 1,024 rollouts per arm and seed (TA-GRPO, its control, equal-sampling)
SWEEP_STEPS = STEPS  # the sweep at the study's full length (the first study's ran half)
SWEEP_LRS = (1e-5, 3e-5, 1e-4)
LOW_EDGE_LR, HIGH_EDGE_LR = 3e-6, 3e-4  # swept for an arm whose best of SWEEP_LRS is the grid's lowest / highest
SWEEP_SEEDS = (100, 101)  # never reported as results
SEEDS = tuple(range(10))  # base and primary arms
EXPLORATORY_SEEDS = tuple(range(5))  # exploratory arms (the first five of SEEDS: paired with the primary ones)
EVAL_SAMPLES = real_study.EVAL_SAMPLES  # 8 per test question on q0's form: pass@1 and pass@8
FORM_SAMPLES = real_study.FORM_SAMPLES

_TA = {"num_rephrasings": 3, "num_generations": 2}
VARIANTS = {  # issue 32's candidates, as configurations of TAGRPOConfig (tagrpo/experiments/arms.py names them)
    "ta_grpo_gated": {**_TA, "pool_gate": "q0_all_wrong"},
    "ta_grpo_w25": {**_TA, "rephrased_weight": 0.25},
    "ta_grpo_w50": {**_TA, "rephrased_weight": 0.5},
    "ta_grpo_kl": {**_TA, "beta": 0.001},
    "ta_grpo_adaptive": {**_TA, "pool_mode": "adaptive"},
}
ISSUE32_VARIANT = "ta_grpo_w50"  # the variant issue 32 recommends (tagrpo.experiments.arms.RECOMMENDED; a VARIANTS key)
PRIMARY_ARMS = ("ta_grpo", "equal_sampling", "ta_grpo_control")
EXPLORATORY_ARMS = ("pooled_no_anchor", "grpo", "grpo_more_data", ISSUE32_VARIANT)
ARMS = {
    "ta_grpo": _TA,
    "equal_sampling": {"num_rephrasings": 0, "num_generations": 8, "reference_group_size": 2},
    "ta_grpo_control": {**_TA, "plan": "control"},
    "pooled_no_anchor": {**_TA, "anchor": "none"},
    "grpo": {"num_rephrasings": 0, "num_generations": 2},
    "grpo_more_data": {"num_rephrasings": 0, "num_generations": 2, "questions_factor": 2.5},
    ISSUE32_VARIANT: VARIANTS[ISSUE32_VARIANT],
}
PRIMARY_REFS = ("equal_sampling", "ta_grpo_control")
PRIMARY_KS = (1, EVAL_SAMPLES)
EQUIVALENCE_MARGIN = 0.05  # an undecided primary contrast inside +-5 pp by TOST (Holm over the four) is "no difference"


def steps_of(arm: str, steps: int) -> int:
    """Generation steps of ``arm`` for a study of ``steps``: 2.5x for GRPO on 2.5x the questions (4 new ones each)."""
    return math.ceil(steps * ARMS[arm].get("questions_factor", 1))


def at_edge(rates: dict[str, float], arm: str, grid: tuple[float, ...]) -> float | None:
    """The edge rate to sweep for ``arm`` when its chosen rate is the lowest or highest of ``grid`` and that edge's
    rate is not in it yet; else None."""
    chosen = rates.get(arm)
    if chosen == min(grid) and LOW_EDGE_LR not in grid:
        return LOW_EDGE_LR
    if chosen == max(grid) and HIGH_EDGE_LR not in grid:
        return HIGH_EDGE_LR
    return None


def primary_contrasts() -> list[tuple[str, str, int]]:
    """The primary family (Holm over all of it): ``(arm, reference, k)``."""
    return [("ta_grpo", ref, k) for ref in PRIMARY_REFS for k in PRIMARY_KS]


def exploratory_contrasts() -> list[tuple[str, str, int]]:
    """Uncorrected: TA-GRPO against each exploratory arm, the variant against equal-sampling GRPO (pass@1, pass@8),
    every arm against the base model (pass@1)."""
    out = [("ta_grpo", ref, k) for ref in EXPLORATORY_ARMS for k in PRIMARY_KS]
    out += [(ISSUE32_VARIANT, "equal_sampling", k) for k in PRIMARY_KS]
    out += [(arm, "base", 1) for arm in ARMS]
    return out


def subset_contrasts() -> list[tuple[str, str, str, int]]:
    """Added after the primary verdicts (2026-12-04), post hoc, uncorrected: ``(arm, reference, subset, k)`` for
    TA-GRPO against the primary references on the hard subset (test questions the same seed's base model got 0 of
    ``EVAL_SAMPLES`` right on q0, the embedded world's definition: ``study.hard_mask``) and on the rest, at pass@1
    and pass@8, to set the real model beside the embedded world by difficulty. No arm-vs-base subset contrast: the
    subset is chosen by the base's own zeros (regression to the mean); between two arms it is not, since both are
    scored on samples of their own."""
    return [("ta_grpo", ref, subset, k) for ref in PRIMARY_REFS for subset in ("hard", "rest") for k in PRIMARY_KS]


def cell_spec(args, kind: str, split: str, seed: int, arm: str | None = None, lr: float | None = None,
              q0: str | None = None) -> tuple[dict, str]:
    """A cell's spec (everything its result depends on: ``STUDY``, and the arm's configuration) and its path."""
    spec = {"kind": kind, "split": split, "seed": seed, "device": args.device, "study": "real_v2",
            "setting": {k: v for k, v in STUDY.items() if k != "workers"}, **args.overrides}
    if kind != "premise":
        spec.update(q0=q0, samples=args.samples)
    if kind == "arm":
        spec.update(arm=arm, arm_config=ARMS[arm], learning_rate=lr, steps=steps_of(arm, args.steps))
    return spec, real_study.cell_path(args.work_dir, spec)


def compute(spec: dict, out: str) -> dict:
    """One cell of this study (a module-level function: the process pool's workers import it). An arm's trained
    model is evaluated in memory and its saved copy removed (only ``result.jsonl`` is kept)."""
    return real_study.compute_with(spec, out, STUDY, ARMS, keep_model=False)
