"""The real-model study, second version (issue 33): clean splits, a two-seed full-length sweep, 10 seeds.

    .venv/bin/python studies/real_study_v2.py --workers 2                 # everything, resumable
    .venv/bin/python studies/real_study_v2.py --workers 2 --sweep-only    # the validation sweep alone
    .venv/bin/python studies/real_study_v2.py --render-only               # the files from the cells on disk

The design (task, settings, arms, sweep and its edge rule, seeds, primary and exploratory contrasts) is declared
in ``tagrpo/experiments/real_study_v2.py``; the model comes from ``tagrpo models fetch smollm2-135m``. Every cell is
a process-pool task (``tagrpo.experiments.cells``) computed by ``real_study_v2.compute`` and written to
``--work-dir``, which is inside ``studies/results`` so that finished cells are committed as they land (only
``result.jsonl`` files and the invocation log are tracked; ``.gitignore`` drops the rest): a new machine resumes
where the last stopped. Phases: the premise (q0's form), then for the primary arms and afterwards for the
exploratory ones (so that the verdicts the issue asks for come first): the sweep (validation problems, every arm x
rate x sweep seed at the study's length), the edge rule, the study (test problems: base and primary arms on
``SEEDS``; exploratory arms on ``EXPLORATORY_SEEDS``). An arm's rate comes from its own sweep cells only, so the
order changes no result. Each invocation's wall time and the cell time it computed are logged as each cell lands
(a killed invocation keeps them up to its last finished cell). Writes ``real_study_v2.json`` and ``.md`` into
``--out``.
"""

from __future__ import annotations

import argparse
import os
import sys

from tagrpo.data.jsonl import read_jsonl
from tagrpo.experiments import real_study_v2 as design
from tagrpo.experiments.cells import Invocation, finished, run_all
from tagrpo.experiments.real_report_v2 import choose, sweep_rows, write
from tagrpo.experiments.real_study import choose_q0, native_bf16

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def sweep_specs(args, rates: dict | None = None, arms: list[str] | None = None) -> list[tuple[dict, str]]:
    """Every arm (of ``arms``, default all) at every rate and sweep seed; with ``rates`` (the grid's choices), also
    the edge rate of each arm whose best is the lowest or highest of the grid."""
    out = []
    for arm in args.arms if arms is None else arms:
        lrs = list(args.sweep_lrs)
        if rates is not None and args.edge and (edge := design.at_edge(rates, arm, tuple(args.sweep_lrs))):
            lrs.append(edge)
        out += [design.cell_spec(args, "arm", "validation", seed, arm, lr, args.q0) for lr in lrs
                for seed in design.SWEEP_SEEDS]
    return out


def study_specs(args, rates: dict, tier: str | None = None) -> list[tuple[dict, str]]:
    """Base and primary arms over every seed first (the order a cut-short study keeps), then the exploratory arms;
    ``tier`` ("primary" or "exploratory") keeps one of the two."""
    out = []
    for seed in args.seeds if tier in (None, "primary") else ():
        out.append(design.cell_spec(args, "base", "test", seed, q0=args.q0))
        out += [design.cell_spec(args, "arm", "test", seed, arm, rates[arm], args.q0)
                for arm in design.PRIMARY_ARMS if arm in args.arms and arm in rates]
    for seed in args.exploratory_seeds if tier in (None, "exploratory") else ():
        out += [design.cell_spec(args, "arm", "test", seed, arm, rates[arm], args.q0)
                for arm in design.EXPLORATORY_ARMS if arm in args.arms and arm in rates]
    return out


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--workers", type=int, default=design.STUDY["workers"],
                        help="cells at once (the CPU cores shared among them)")
    parser.add_argument("--work-dir", default=os.path.join(RESULTS, "real_study_v2_cells"),
                        help="cell directories (reused: resumable; committed)")
    parser.add_argument("--out", default=RESULTS, help="where the JSON and markdown go")
    parser.add_argument("--render-only", action="store_true", help="no training: write the files from the cells")
    parser.add_argument("--sweep-only", action="store_true", help="stop after the learning-rate sweep")
    parser.add_argument("--no-edge", dest="edge", action="store_false",
                        help="no edge rule (a smoke test only: the declared design has it)")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(design.SEEDS),
                        help="seeds of the base and primary arms (fewer than declared: a smoke test only)")
    parser.add_argument("--exploratory-seeds", type=int, nargs="+", default=list(design.EXPLORATORY_SEEDS))
    parser.add_argument("--steps", type=int, default=design.STEPS, help="generation steps (a smoke test only)")
    parser.add_argument("--sweep-lrs", type=float, nargs="+", default=list(design.SWEEP_LRS))
    parser.add_argument("--questions", type=int, default=None, help="held-out questions (a smoke test only)")
    parser.add_argument("--arms", default=",".join(design.ARMS), help="comma-separated subset (a smoke test only)")
    args = parser.parse_args()
    args.arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    if unknown := [a for a in args.arms if a not in design.ARMS]:
        parser.error(f"--arms: unknown {', '.join(unknown)}; valid arms are {', '.join(design.ARMS)}")
    args.samples = design.EVAL_SAMPLES
    args.overrides = {"questions": args.questions} if args.questions else {}
    if not native_bf16(args.device):  # fp32 cells never mix with bf16 ones (real_study.native_bf16)
        args.overrides["precision"] = "fp32"
    return args


def main() -> None:
    args = parse()
    threads = max(1, (os.cpu_count() or 2) // args.workers)
    log = os.path.join(args.work_dir, "invocations.jsonl")
    invocation = Invocation(log, sys.argv[1:], args.workers, record=not args.render_only)

    def run(specs, what):
        if args.render_only:
            return finished(specs)
        return run_all(specs, args.workers, what, compute=design.compute, threads=threads, on_cell=invocation.landed)

    args.q0 = None
    premise = run([design.cell_spec(args, "premise", "validation", design.SWEEP_SEEDS[0])], "premise")
    if not premise:
        raise SystemExit(f"no premise cell under {args.work_dir}: run without --render-only first")
    premise = next(iter(premise.values()))
    args.q0 = choose_q0(premise)
    print(f"q0's form: {args.q0}", flush=True)
    sweep, cells = {}, {}
    for tier, arms in (("primary", design.PRIMARY_ARMS), ("exploratory", design.EXPLORATORY_ARMS)):
        arms = [arm for arm in arms if arm in args.arms]
        if not arms:
            continue
        grid = run(sweep_specs(args, arms=arms), f"sweep, {tier} arms")
        sweep |= grid | run(sweep_specs(args, choose(sweep_rows(grid.values())), arms), f"sweep, {tier} edge rule")
        rates = choose(sweep_rows(sweep.values()))
        print(f"learning rates chosen so far (after the {tier} arms' sweep):", rates, flush=True)
        if not args.sweep_only:
            cells |= run(study_specs(args, rates, tier), f"study, {tier} arms")
    invocation.finish()
    write(args, premise, args.q0, list(sweep.values()), rates, list(cells.values()), read_jsonl(log))


if __name__ == "__main__":
    main()
