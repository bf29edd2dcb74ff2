"""A verdict on a real LLM: TA-GRPO against equal-sampling GRPO on SmolLM2-135M-Instruct, several seeds (issue 20).

Command (what produced studies/results/real_study.*; the model from `tagrpo models fetch smollm2-135m`):

    .venv/bin/python studies/real_study.py            # CPU, the committed scale
    python studies/real_study.py --device cuda --scale 4   # a GPU: 4x the steps, seeds and held-out samples

The design (task, arms, settings, sweep, evaluation, verdicts) is declared in ``tagrpo/experiments/real_study.py``.
Every cell (premise, base, or an arm at a rate and seed) is cached under ``--work-dir`` and reused: an interrupted
study resumes. Writes ``real_study.json`` and ``real_study.md`` (``tagrpo/experiments/real_report.py``) into ``--out``.
"""

from __future__ import annotations

import argparse
import os
import sys

from tagrpo.data.jsonl import read_jsonl
from tagrpo.experiments.cells import Invocation, finished, run_all
from tagrpo.experiments.real_report import choose_learning_rates, write
from tagrpo.experiments.real_study import (
    ARMS,
    EVAL_SAMPLES,
    SEEDS,
    STEPS,
    STUDY,
    SWEEP_LRS,
    SWEEP_SEEDS,
    SWEEP_STEPS,
    choose_q0,
    compute,
    native_bf16,
    specs_for,
)

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--scale", type=int, default=1, help="multiply steps, seeds and held-out samples (a GPU)")
    parser.add_argument("--workers", type=int, default=STUDY["workers"],
                        help="cells at once (the CPU cores shared among them)")
    parser.add_argument("--work-dir", default="outputs/real_study")
    parser.add_argument("--out", default=RESULTS)
    parser.add_argument("--render-only", action="store_true")
    parser.add_argument("--sweep-only", action="store_true")
    parser.add_argument("--seeds", type=int, nargs="+", default=None, help="fewer seeds: a smoke test only")
    parser.add_argument("--steps", type=int, default=None, help="generation steps (a smoke test only)")
    parser.add_argument("--sweep-lrs", type=float, nargs="+", default=list(SWEEP_LRS))
    parser.add_argument("--questions", type=int, default=None, help="held-out questions (a smoke test only)")
    parser.add_argument("--arms", default=",".join(ARMS), help="comma-separated subset of the arms (a smoke test only)")
    args = parser.parse_args()
    args.arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    if unknown := [a for a in args.arms if a not in ARMS]:
        parser.error(f"--arms: unknown {', '.join(unknown)}; valid arms are {', '.join(ARMS)}")
    args.sweep_steps = max(1, (args.steps or STEPS * args.scale) * SWEEP_STEPS // STEPS)
    args.steps = args.steps or STEPS * args.scale
    args.samples = EVAL_SAMPLES * args.scale
    args.seeds = args.seeds or list(range(len(SEEDS) * args.scale))
    args.overrides = {"questions": args.questions} if args.questions else {}
    if not native_bf16(args.device) and not args.render_only:  # a redraw reads the bf16 cells (the committed study)
        args.overrides["precision"] = "fp32"
    threads = max(1, (os.cpu_count() or 2) // args.workers)
    log = os.path.join(args.work_dir, "invocations.jsonl")
    invocation = Invocation(log, sys.argv[1:], args.workers, record=not args.render_only)

    def run(specs, what):
        if args.render_only:
            return finished(specs)
        return run_all(specs, args.workers, what, compute=compute, threads=threads, on_cell=invocation.landed)

    premise_spec = specs_for(args, "premise", "validation", SWEEP_SEEDS[0])
    premise = run([premise_spec], "premise")
    if not premise:
        raise SystemExit(f"no premise cell under {args.work_dir}: run without --render-only first")
    q0 = choose_q0(next(iter(premise.values())))
    print(f"q0's form: {q0}", flush=True)
    sweep_specs = [specs_for(args, "arm", "validation", s, arm, lr, q0, args.sweep_steps) for arm in args.arms
                   for lr in args.sweep_lrs for s in SWEEP_SEEDS]
    sweep = run(sweep_specs, "sweep")
    lrs = choose_learning_rates(list(sweep.values()))
    print("learning rates from the sweep:", lrs, flush=True)
    if not args.sweep_only:
        study_specs = []
        for seed in args.seeds:
            study_specs.append(specs_for(args, "base", "test", seed, q0=q0))
            study_specs += [specs_for(args, "arm", "test", seed, arm, lrs[arm], q0) for arm in args.arms if arm in lrs]
        cells = run(study_specs, "study")
    else:
        cells = {}
    invocation.finish()
    write(args, next(iter(premise.values())), q0, list(sweep.values()), lrs, list(cells.values()), read_jsonl(log))


if __name__ == "__main__":
    main()
