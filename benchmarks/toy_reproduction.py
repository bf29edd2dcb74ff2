"""Reproduce the paper's effects on the embedded world: GRPO, TA-GRPO and equal-sampling GRPO over several seeds.

Command (what produced benchmarks/results/toy_reproduction.*):

    .venv/bin/python benchmarks/toy_reproduction.py --seeds 0 1 2

Each seed is one ``tagrpo demo`` run of the default preset (the same code path as ``make demo``): every seed and
method starts from one pretrained base (``--base-seed``, pretrained once into ``WORK_DIR/base``) and the same
training questions; the seed drives the RL sampling, the data order and the evaluation sampling.
Writes, into ``benchmarks/results/``, ``toy_reproduction.json`` (every run's numbers, the machine, wall times and
rollouts), ``toy_reproduction.md`` (mean ± std table and the targets, met or missed) and the plots under
``toy_reproduction/``. ``--render-only`` redraws the report and plots from an existing ``toy_reproduction.json``
without training.
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
    parser.add_argument("--render-only", action="store_true", help="redraw from the existing JSON, no training")
    args = parser.parse_args()
    json_path = os.path.join(args.out, "toy_reproduction.json")
    if args.render_only:
        with open(json_path, encoding="utf-8") as f:
            saved = json.load(f)
        results, command, total, notes = saved["runs"], saved["command"], saved["total_wall_s"], saved.get("notes", "")
    else:
        start = time.perf_counter()
        results = []
        for seed in args.seeds:
            cfg = DemoConfig(
                output_dir=os.path.join(args.work_dir, f"seed{seed}"),
                base_dir=os.path.join(args.work_dir, "base"),
                preset=args.preset,
                seed=seed,
                base_seed=args.base_seed,
            )
            results.append(run_demo(cfg))
        total = time.perf_counter() - start
        command = "`.venv/bin/python benchmarks/toy_reproduction.py --seeds " + " ".join(map(str, args.seeds)) + "`"
        notes = "The base model is pretrained once and shared by every seed; the total includes that pretraining."
    plots = os.path.join(args.out, "toy_reproduction")
    summary = write_report(plots, results)
    with open(os.path.join(plots, "report.md"), encoding="utf-8") as f:
        report = f.read().replace("](", "](toy_reproduction/")
    with open(os.path.join(args.out, "toy_reproduction.md"), "w", encoding="utf-8") as f:
        f.write(report + f"\nCommand: {command}. Total wall time {total / 60:.1f} min. {notes}\n")
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(
            {"command": command, "total_wall_s": total, "notes": notes, "summary": summary, "runs": results},
            f,
            indent=2,
        )


if __name__ == "__main__":
    main()
