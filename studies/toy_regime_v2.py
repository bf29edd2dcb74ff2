"""The regime map, second version (issue 32): every arm's rate swept at every knob, the cause-separating arms.

    .venv/bin/python studies/toy_regime_v2.py --workers 2                 # everything, resumable
    .venv/bin/python studies/toy_regime_v2.py --workers 2 --sweep-only    # the validation sweep alone
    .venv/bin/python studies/toy_regime_v2.py --render-only               # the files from the cells on disk

The design is declared in ``tagrpo/experiments/study_v2.py`` (arms, knobs, seeds, sweep and its edge rule,
primary contrasts, issue 32's goal). Every cell is a process-pool task (``tagrpo.experiments.cells``) computed by
``tagrpo.experiments.regime_cells.compute``, the v1 study's cell, and written to ``--work-dir``, which is inside
``studies/results`` so that finished cells are committed as they land (only ``result.jsonl`` files and the
invocation log are tracked; ``.gitignore`` drops the rest): a new machine resumes where the last stopped. Phases:
the sweep (validation problems, every swept arm x rate x sweep seed x knob), the edge rule (``EDGE_LR`` where an
arm's best is the grid's top), then the study (test problems: primary arms on ``SEEDS``, exploratory arms on
``EXPLORATORY_SEEDS``, the pilot). Writes ``toy_regime_v2.json`` and ``.md`` into ``--out``.
"""

from __future__ import annotations

import argparse
import os
import sys

from tagrpo.data.jsonl import read_jsonl
from tagrpo.experiments import study_v2 as design
from tagrpo.experiments.cells import Invocation, finished, run_all
from tagrpo.experiments.regime_cells import cell_spec, compute
from tagrpo.experiments.regime_v2_report import sweep_rows, write
from tagrpo.toy.regime_base import recipe_id

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def spec(args, *cell, **named) -> tuple[dict, str]:
    return cell_spec(args.work_dir, args.overrides, *cell, **named)


def sweep_specs(args, rates: dict | None = None) -> list[tuple[dict, str]]:
    """Base and every swept arm at every rate, sweep seed and knob; with ``rates`` (the grid's choices), also
    ``EDGE_LR`` for the arms whose best is the grid's top."""
    out = []
    for knob in design.KNOBS:
        for seed in design.SWEEP_SEEDS:
            out.append(spec(args, "base", knob, seed, "validation", design.SAMPLES))
            for arm in design.SWEPT_ARMS:
                lrs = list(args.sweep_lrs)
                if rates is not None and args.edge and design.at_edge(rates, arm, knob, tuple(args.sweep_lrs)):
                    lrs.append(design.EDGE_LR)
                out += [spec(args, "arm", knob, seed, "validation", design.SAMPLES, arm, lr) for lr in lrs]
    return out


def study_specs(args, rates: dict) -> list[tuple[dict, str]]:
    """Primary arms over every seed first (the order a cut-short study keeps), then the exploratory arms and the
    pilot; ``weighted`` trains the lambda arm the sweep chose at that knob."""
    out = []
    for seed in args.seeds:
        for knob in design.KNOBS:
            out.append(spec(args, "base", knob, seed, "test", args.samples, forms=seed in args.exploratory_seeds))
            for arm in (a for a in design.PRIMARY_ARMS if a in rates.get(knob, {})):  # a partial sweep: the chosen
                name = rates[knob]["weighted_arm"] if arm == "weighted" else arm
                out.append(spec(args, "arm", knob, seed, "test", args.samples, name, rates[knob][arm],
                                forms=seed in args.exploratory_seeds))
    for seed in args.exploratory_seeds:
        for knob in design.KNOBS:
            out += [spec(args, "arm", knob, seed, "test", args.samples, arm, rates[knob][arm], forms=True)
                    for arm in design.EXPLORATORY_ARMS if arm in rates.get(knob, {})]
    pilot = design.PILOT
    out += [spec(args, "arm", knob, seed, "test", args.samples, pilot["arm"], lr) for seed in pilot["seeds"]
            if seed in args.exploratory_seeds for knob in pilot["knobs"] for lr in pilot["rates"]]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2, help="cells trained at once (one torch thread each)")
    parser.add_argument("--work-dir", default=os.path.join(RESULTS, "toy_regime_v2_cells"),
                        help="cell directories (reused: resumable; committed)")
    parser.add_argument("--out", default=RESULTS, help="where the JSON and markdown go")
    parser.add_argument("--samples", type=int, default=64, help="samples per held-out test question (largest k)")
    parser.add_argument("--sweep-lrs", type=float, nargs="+", default=list(design.SWEEP_LRS))
    parser.add_argument("--no-edge", dest="edge", action="store_false",
                        help="no edge rule (a smoke test only: the declared design has it)")
    parser.add_argument("--sweep-only", action="store_true", help="stop after the learning-rate sweep")
    parser.add_argument("--render-only", action="store_true", help="no training: write the files from the cells")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(design.SEEDS),
                        help="seeds of the primary arms (fewer than the declared ones: a smoke test only)")
    parser.add_argument("--exploratory-seeds", type=int, nargs="+", default=list(design.EXPLORATORY_SEEDS))
    parser.add_argument("--rl-steps", type=int, default=None, help="override the preset (a smoke test only)")
    parser.add_argument("--questions", type=int, default=None, help="held-out questions (a smoke test only)")
    args = parser.parse_args()
    args.overrides = {k: v for k, v in (("rl_steps", args.rl_steps), ("questions", args.questions)) if v}
    args.overrides["base_recipe"] = recipe_id()  # cells of another base are not reused
    log = os.path.join(args.work_dir, "invocations.jsonl")
    invocation = Invocation(log, sys.argv[1:], args.workers, record=not args.render_only)

    def run(specs, what):
        return finished(specs) if args.render_only else run_all(specs, args.workers, what, compute,
                                                                on_cell=invocation.landed)

    grid = run(sweep_specs(args), "sweep")
    rates = design.choose(sweep_rows(grid.values()))
    sweep = {**grid, **run(sweep_specs(args, rates), "sweep, edge rule")}
    rates = design.choose(sweep_rows(sweep.values()))
    print("learning rates from the sweep:", rates, flush=True)
    cells = {} if args.sweep_only else run(study_specs(args, rates), "study")
    invocation.finish()
    write(args, list(sweep.values()), rates, list(cells.values()), read_jsonl(log))


if __name__ == "__main__":
    main()
