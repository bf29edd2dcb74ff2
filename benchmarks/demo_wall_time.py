"""Wall time of ``tagrpo demo --preset regime`` (what ``make demo`` runs: the regime world's hardest setting) and of
``tagrpo demo --quick``.

Command (what produced benchmarks/results/demo_wall_time.*):

    .venv/bin/python benchmarks/demo_wall_time.py --demo-runs 1 --quick-runs 3

Each run is the real command in a fresh process, timed from its start to its exit (library imports and the
report included), into a temporary directory. Writes the medians, every run, the budgets (6 min and 90 s on
2 idle cores, from the testbed issue) and their ratio to ``demo_wall_time.json`` and ``demo_wall_time.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from statistics import median

from tagrpo.evaluation.tables import markdown_table

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
BUDGETS = {"regime": 360.0, "quick": 90.0}


def time_demo(preset: str) -> float:
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "tagrpo", "demo", "--preset", preset, "--output-dir", out]
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-runs", type=int, default=1, help="runs of make demo's preset (regime)")
    parser.add_argument("--quick-runs", type=int, default=3)
    parser.add_argument("--out", default=RESULTS)
    args = parser.parse_args()
    runs = {"quick": [time_demo("quick") for _ in range(args.quick_runs)],
            "regime": [time_demo("regime") for _ in range(args.demo_runs)]}
    summary = {p: {"runs_s": r, "median_s": median(r), "budget_s": BUDGETS[p], "ratio": median(r) / BUDGETS[p]}
               for p, r in runs.items() if r}
    machine = {"platform": platform.platform(), "cpus": os.cpu_count()}
    saved = {"command": " ".join(["python benchmarks/demo_wall_time.py", *sys.argv[1:]]), "machine": machine,
             "summary": summary}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "demo_wall_time.json"), "w", encoding="utf-8") as f:
        json.dump(saved, f, indent=2)
    rows = [[f"`tagrpo demo --preset {p}`", len(s["runs_s"]), f"{s['median_s']:.0f}", f"{s['budget_s']:.0f}",
             f"{s['ratio']:.2f}", "within" if s["ratio"] <= 1 else "OVER"] for p, s in summary.items()]
    md = [
        "# Wall time of the demo",
        "",
        f"Command: `{saved['command']}`. Machine: {machine}. Each run is a fresh process (imports included).",
        "",
        markdown_table(["command", "runs", "median s", "budget s", "median / budget", "budget"], rows),
        "",
    ]
    with open(os.path.join(args.out, "demo_wall_time.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
