"""The capacity point of issue 32: the regime study's primary arms and both candidates at hard_share 0.6 on a base
with about four times the parameters.

    .venv/bin/python studies/toy_capacity.py --workers 2        # base, sweep, study: resumable
    .venv/bin/python studies/toy_capacity.py --render-only      # the files from the cells on disk

The design is declared in ``tagrpo/experiments/study_capacity.py``. Phases: (1) the base, pretrained bit for bit
by ``tagrpo.toy.regime_base`` at ``BASE``'s width on one thread (reused when its marker matches; its SHA-256 and
parameter count go to ``--work-dir``/base.json and key every cell); (2) the sweep on validation problems (every
swept arm x rate x sweep seed, v2's objective and edge rule); (3) the study on test problems, 5 seeds. Cells are
``tagrpo.experiments.regime_cells``' (the v2 study's, with this base), written under ``--work-dir`` inside
``studies/results`` so that finished cells are committed as they land; the base itself is not committed (rebuilt
in about 45 minutes on one core). Writes ``toy_capacity.json``, ``.md`` and ``.png`` into ``--out``.
"""

from __future__ import annotations

import argparse
import os
import sys

from tagrpo.data.jsonl import read_jsonl
from tagrpo.experiments import study_capacity as design
from tagrpo.experiments import study_v2 as v2
from tagrpo.experiments.capacity_report import build_base, write
from tagrpo.experiments.cells import Invocation, finished, run_all
from tagrpo.experiments.regime_cells import cell_spec, compute
from tagrpo.experiments.regime_v2_report import sweep_rows

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "studies", "results")


def sweep_specs(args, rates: dict | None = None) -> list[tuple[dict, str]]:
    """The base (with its premise) and every swept arm at every rate and sweep seed; with ``rates``, also v2's
    ``EDGE_LR`` for an arm whose best is the grid's top."""
    cell = (args.work_dir, args.overrides)
    out = []
    for seed in design.SWEEP_SEEDS:
        out.append(cell_spec(*cell, "base", design.KNOB, seed, "validation", design.SAMPLES, forms=True))
        for arm in design.SWEPT_ARMS:
            lrs = list(args.sweep_lrs)
            if rates is not None and v2.at_edge(rates, arm, design.KNOB, tuple(args.sweep_lrs)):
                lrs.append(design.EDGE_LR)
            out += [cell_spec(*cell, "arm", design.KNOB, seed, "validation", design.SAMPLES, arm, lr) for lr in lrs]
    return out


def study_specs(args, rates: dict) -> list[tuple[dict, str]]:
    """Per seed, the base (with its premise) and every arm at its rate; ``weighted`` trains the lambda arm chosen."""
    chosen = rates.get(design.KNOB, {})
    out = []
    for seed in args.seeds:
        out.append(cell_spec(args.work_dir, args.overrides, "base", design.KNOB, seed, "test", args.samples,
                             forms=True))
        for arm in (a for a in design.ARMS if a in chosen):
            name = chosen["weighted_arm"] if arm == "weighted" else arm
            out.append(cell_spec(args.work_dir, args.overrides, "arm", design.KNOB, seed, "test", args.samples,
                                 name, chosen[arm], forms=True))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2, help="cells trained at once (one torch thread each)")
    parser.add_argument("--work-dir", default=os.path.join(RESULTS, "toy_capacity_cells"),
                        help="cell directories (reused: resumable; committed)")
    parser.add_argument("--base-dir", default="outputs/regime_base_h328",
                        help="the 4x base's directory, relative to the repository root (not committed)")
    parser.add_argument("--v2-work-dir", default=os.path.join(RESULTS, "toy_regime_v2_cells"),
                        help="study v2's cells (the shipped base's side of the cost change)")
    parser.add_argument("--out", default=RESULTS, help="where the JSON, markdown and plot go")
    parser.add_argument("--samples", type=int, default=64, help="samples per held-out test question (largest k)")
    parser.add_argument("--sweep-lrs", type=float, nargs="+", default=list(design.SWEEP_LRS))
    parser.add_argument("--render-only", action="store_true", help="no training: write the files from the cells")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(design.SEEDS),
                        help="study seeds (fewer than the declared ones: a smoke test only)")
    parser.add_argument("--base-steps", type=int, default=None, help="pretraining steps (a smoke test only)")
    parser.add_argument("--rl-steps", type=int, default=None, help="override the preset (a smoke test only)")
    parser.add_argument("--questions", type=int, default=None, help="held-out questions (a smoke test only)")
    args = parser.parse_args()
    args.work_dir, args.out, args.v2_work_dir = map(os.path.abspath, (args.work_dir, args.out, args.v2_work_dir))
    os.chdir(ROOT)  # the base's directory in every cell's spec is relative to the repository root
    invocation = Invocation(os.path.join(args.work_dir, "invocations.jsonl"), sys.argv[1:], args.workers,
                            record=not args.render_only)
    base = build_base(args)
    args.overrides = {k: v for k, v in (("rl_steps", args.rl_steps), ("questions", args.questions)) if v}
    args.overrides.update(base=args.base_dir, base_recipe=base["recipe"], base_sha256=base["sha256"])

    def run(specs, what):
        return finished(specs) if args.render_only else run_all(specs, args.workers, what, compute,
                                                                on_cell=invocation.landed)

    grid = run(sweep_specs(args), "sweep")
    rates = v2.choose(sweep_rows(grid.values()))
    sweep = {**grid, **run(sweep_specs(args, rates), "sweep, edge rule")}
    rates = v2.choose(sweep_rows(sweep.values()))
    print("learning rates from the sweep:", rates.get(design.KNOB), flush=True)
    cells = run(study_specs(args, rates), "study")
    invocation.finish()
    write(args, base, list(sweep.values()), rates, list(cells.values()), read_jsonl(invocation.path))


if __name__ == "__main__":
    main()
