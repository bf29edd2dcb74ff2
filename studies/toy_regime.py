"""The regime map: TA-GRPO against its baselines at several shares of hard questions, tuned per arm, many seeds.

Command (what produced studies/results/toy_regime.*):

    .venv/bin/python studies/toy_regime.py --workers 2

The design (knob settings, arms, seeds, sweep, primary contrasts) is declared in ``tagrpo/experiments/study.py``.

1. Sweep, on validation problems: every primary and exploratory arm at each of ``SWEEP_LRS`` on ``SWEEP_SEEDS`` at
   ``hard_share = SWEEP_KNOB``, scored by ``sweep_objective`` on held-out validation q0 questions; each arm gets its
   own best learning rate (the adaptive arms take TA-GRPO's).
2. Study, on test problems: per knob setting and seed, the base model's counts on the held-out q0 questions (the
   hard subset) and its premise (every form), then each arm's cell from the shipped regime base with its learning
   rate, the demo's ``regime`` preset (``tagrpo/experiments/demo.py``: two optimizer steps per generation batch).
3. ``tagrpo.experiments.study.judge`` over the paired per-seed differences, Holm over the primary family.

Every cell is one process-pool task (``--workers`` processes of one torch thread each) writing its result to its
own directory under ``--work-dir``; a finished cell is reused, so an interrupted study resumes where it stopped.
Each training invocation appends its wall time to ``--work-dir``/invocations.jsonl, which the report sums.
Writes ``toy_regime.json``, ``toy_regime.md`` and ``toy_regime.png`` into ``--out``; ``--render-only`` rewrites them
from the cells on disk.
"""

from __future__ import annotations

import argparse
import os
import sys

from tagrpo.data.jsonl import read_jsonl
from tagrpo.experiments import study
from tagrpo.experiments.cells import Invocation, finished, run_all
from tagrpo.experiments.regime_cells import cell_spec, compute
from tagrpo.experiments.regime_report import write
from tagrpo.toy.regime_base import recipe_id

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def sweep_specs(args) -> list[tuple[dict, str]]:
    """Every arm at every rate and sweep seed, and the base model on the same validation questions."""
    cell = (args.work_dir, args.overrides)
    out = [cell_spec(*cell, "base", study.SWEEP_KNOB, seed, "validation", study.SWEEP_SAMPLES)
           for seed in study.SWEEP_SEEDS]
    for arm in study.PRIMARY_ARMS + study.EXPLORATORY_ARMS:
        for lr in args.sweep_lrs:
            out += [cell_spec(*cell, "arm", study.SWEEP_KNOB, seed, "validation", study.SWEEP_SAMPLES, arm, lr)
                    for seed in study.SWEEP_SEEDS]
    return out


def study_specs(args, lrs: dict[str, float]) -> list[tuple[dict, str]]:
    """Primary arms over every seed first (the order a cut-short study keeps), then the exploratory arms."""
    out = []

    def add(kind, knob, seed, arm=None, forms=False):
        out.append(cell_spec(args.work_dir, args.overrides, kind, knob, seed, "test", args.samples, arm,
                             lrs[arm] if arm else None, forms))

    for seed in args.seeds:
        for knob in study.KNOBS:
            add("base", knob, seed, forms=True)
            for arm in study.PRIMARY_ARMS:
                add("arm", knob, seed, arm, forms=seed in args.exploratory_seeds)
    for seed in args.exploratory_seeds:
        for knob in study.KNOBS:
            for arm in study.EXPLORATORY_ARMS:
                add("arm", knob, seed, arm, forms=True)
        for arm in study.ADAPTIVE_ARMS:
            add("arm", study.HARDEST, seed, arm)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2, help="cells trained at once (one torch thread each)")
    parser.add_argument("--work-dir", default="outputs/toy_regime", help="cell directories (reused: resumable)")
    parser.add_argument("--out", default=RESULTS, help="where the JSON, markdown and plot go")
    parser.add_argument("--samples", type=int, default=64, help="samples per held-out test question (largest k)")
    parser.add_argument("--sweep-lrs", type=float, nargs="+", default=list(study.SWEEP_LRS))
    parser.add_argument("--sweep-only", action="store_true", help="stop after the learning-rate sweep")
    parser.add_argument("--render-only", action="store_true", help="no training: write the files from the cells")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(study.SEEDS),
                        help="seeds of the primary arms (fewer than the declared ones: a smoke test only)")
    parser.add_argument("--exploratory-seeds", type=int, nargs="+", default=list(study.EXPLORATORY_SEEDS))
    parser.add_argument("--rl-steps", type=int, default=None, help="override the preset (a smoke test only)")
    parser.add_argument("--questions", type=int, default=None, help="held-out questions (a smoke test only)")
    args = parser.parse_args()
    args.argv = sys.argv[1:]
    args.overrides = {k: v for k, v in (("rl_steps", args.rl_steps), ("questions", args.questions)) if v}
    args.overrides["base_recipe"] = recipe_id()  # cells of another base are not reused
    log = os.path.join(args.work_dir, "invocations.jsonl")
    invocation = Invocation(log, args.argv, args.workers, record=not args.render_only)
    specs = sweep_specs(args)
    sweep = finished(specs) if args.render_only else run_all(specs, args.workers, "sweep", compute,
                                                             on_cell=invocation.landed)
    rows = [{"arm": r["spec"].get("arm", "base"), "learning_rate": r["spec"].get("learning_rate", 0.0),
             "seed": r["spec"]["seed"], "objective": study.sweep_objective(r["pass_at_k"]), "pass_at_k": r["pass_at_k"],
             "clip_max": max(r.get("clip_fraction", []), default=0.0), "cell_wall_s": r["cell_wall_s"]}
            for r in sweep.values()]
    lrs = study.choose_learning_rates([r for r in rows if r["arm"] != "base"])
    print("learning rates from the sweep:", lrs, flush=True)
    if args.sweep_only:
        invocation.finish()
        return
    if "ta_grpo" not in lrs:
        raise SystemExit(f"no TA-GRPO sweep cells under {args.work_dir}: run without --render-only first")
    lrs.update({arm: lrs["ta_grpo"] for arm in study.ADAPTIVE_ARMS})
    specs = study_specs(args, lrs)
    cells = finished(specs) if args.render_only else run_all(specs, args.workers, "study", compute,
                                                             on_cell=invocation.landed)
    invocation.finish()
    write(args, rows, lrs, list(cells.values()), read_jsonl(log))


if __name__ == "__main__":
    main()
