"""Two demo runs one after the other (2 torch threads each) against both at once (1 thread each), on one machine.

Command (what produced benchmarks/results/parallel_cells.*):

    .venv/bin/python benchmarks/parallel_cells.py

Why: ``studies/toy_regime.py`` trains its cells in ``--workers`` processes of one thread each; on 2 cores this
says whether that beats running them in turn with both threads. Each run is the same small regime-world demo (three
arms, 10 steps, 64 held-out questions x 64 samples) in a fresh process, imports included; the outputs of the two
modes are compared too (the thread count must not change a result).
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

from tagrpo.evaluation.tables import markdown_table

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
DEMO = ["demo", "--world", "regime", "--hard-share", "0.9", "--preset", "regime", "--arms",
        "ta_grpo,grpo_long,equal_sampling", "--rl-steps", "10"]


def _start(out: str, threads: int) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    cmd = [sys.executable, "-m", "tagrpo", *DEMO, "--output-dir", out]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _pass_at_k(out: str) -> dict:
    with open(os.path.join(out, "metrics.json"), encoding="utf-8") as f:
        runs = json.load(f)["runs"]
    return {arm: run["pass_at_k"] for arm, run in runs.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=RESULTS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        outs = [os.path.join(tmp, name) for name in ("seq0", "seq1", "par0", "par1")]
        start = time.perf_counter()
        for out in outs[:2]:
            if _start(out, 2).wait():
                raise SystemExit(f"the demo failed in {out}")
        sequential = time.perf_counter() - start
        start = time.perf_counter()
        procs = [_start(out, 1) for out in outs[2:]]
        if any(p.wait() for p in procs):
            raise SystemExit("a parallel demo failed")
        parallel = time.perf_counter() - start
        same = all(_pass_at_k(a) == _pass_at_k(b) for a, b in zip(outs[:2], outs[2:], strict=True))
    saved = {"command": "python benchmarks/parallel_cells.py", "demo": "tagrpo " + " ".join(DEMO),
             "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
             "sequential_s": sequential, "parallel_s": parallel, "speedup": sequential / parallel,
             "same_results": same}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "parallel_cells.json"), "w", encoding="utf-8") as f:
        json.dump(saved, f, indent=2)
    md = ["# Two cells in turn or at once", "", f"Command: `{saved['command']}`; each run: `{saved['demo']}`. "
          f"Machine: {saved['machine']}, otherwise idle.", "",
          markdown_table(["mode", "wall s for both runs"], [["in turn, 2 threads each", f"{sequential:.0f}"],
                                                            ["at once, 1 thread each", f"{parallel:.0f}"]]), "",
          f"At once is {sequential / parallel:.2f}x faster. Same pass@k in both modes: {same}.", ""]
    with open(os.path.join(args.out, "parallel_cells.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
