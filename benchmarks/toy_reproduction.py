"""Reproduce the paper's effects on the embedded world: GRPO, TA-GRPO and equal-sampling GRPO over several seeds.

Command (what produced benchmarks/results/toy_reproduction.*):

    .venv/bin/python benchmarks/toy_reproduction.py --seeds 0 1 2

Each seed is one ``tagrpo demo`` run of the default preset (the same code path as ``make demo``): the methods
share one pretrained base (``--base-seed``) and the same training questions; the seed drives the RL sampling,
the data order and the evaluation sampling. Writes, into ``benchmarks/results/``, ``toy_reproduction.json``
(every run's numbers, the machine, wall times and rollouts), ``toy_reproduction.md`` (mean ± std table and the
targets, met or missed) and the plots under ``toy_reproduction/``.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from tagrpo.toy.demo import DemoConfig, run_demo
from tagrpo.toy.report import write_report

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--base-seed", type=int, default=0)
    parser.add_argument("--preset", default="default")
    parser.add_argument("--work-dir", default="outputs/toy_reproduction")
    parser.add_argument("--out", default=RESULTS)
    args = parser.parse_args()
    start = time.perf_counter()
    results = []
    for seed in args.seeds:
        cfg = DemoConfig(
            output_dir=os.path.join(args.work_dir, f"seed{seed}"),
            preset=args.preset,
            seed=seed,
            base_seed=args.base_seed,
        )
        results.append(run_demo(cfg))
    total = time.perf_counter() - start
    plots = os.path.join(args.out, "toy_reproduction")
    summary = write_report(plots, results)
    with open(os.path.join(plots, "report.md"), encoding="utf-8") as f:
        report = f.read().replace("](", "](toy_reproduction/")
    command = "`.venv/bin/python benchmarks/toy_reproduction.py --seeds " + " ".join(map(str, args.seeds)) + "`"
    with open(os.path.join(args.out, "toy_reproduction.md"), "w", encoding="utf-8") as f:
        f.write(report + f"\nCommand: {command}. Total wall time {total / 60:.1f} min (pretraining included once).\n")
    with open(os.path.join(args.out, "toy_reproduction.json"), "w", encoding="utf-8") as f:
        json.dump({"command": command, "total_wall_s": total, "summary": summary, "runs": results}, f, indent=2)


if __name__ == "__main__":
    main()
