"""Repeat tests in fresh processes and count the runs that fail, optionally with both cores kept busy.

    python tools/stress.py --runs 30 tests/test_multiprocess.py
    python tools/stress.py --runs 30 --busy 2 --label under_load tests/test_multiprocess.py

Each run is a new ``python -m pytest`` process on the given tests (so each starts from a cold interpreter, as CI
does). ``--busy K`` starts K processes that spin on the CPU for the whole stress run: another job beside the tests,
as on a CI machine with both cores taken. A run fails when pytest exits non-zero or its output shows a C++ abort;
its last lines are kept. Writes ``tools/results/stress_<label>.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import subprocess
import sys
import time
from pathlib import Path

from tagrpo.common.machine import machine

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "tools" / "results"
ABORT_MARKERS = ("terminate called", "Fatal Python error", "SIGABRT", "Segmentation fault")


def _spin(stop) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10_000))


def run_once(tests: list[str], timeout: float, tail: int) -> dict:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        rc, output = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as e:
        rc, output = "timeout", (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
    wall = time.perf_counter() - start
    aborted = [m for m in ABORT_MARKERS if m in output]
    failed = rc != 0 or bool(aborted)
    return {
        "rc": rc,
        "wall_s": round(wall, 2),
        "failed": failed,
        "abort_markers": aborted,
        "last_lines": output.strip().splitlines()[-tail:] if failed else [],
    }


def write_report(label: str, report: dict) -> tuple[Path, Path]:
    RESULTS.mkdir(parents=True, exist_ok=True)
    json_path, md_path = RESULTS / f"stress_{label}.json", RESULTS / f"stress_{label}.md"
    json_path.write_text(json.dumps(report, indent=2) + "\n")
    runs = report["runs"]
    failures = [(i, r) for i, r in enumerate(runs, 1) if r["failed"]]
    walls = sorted(r["wall_s"] for r in runs)
    lines = [
        f"# Stress: {' '.join(report['tests'])} ({label})",
        "",
        f"`{report['command']}`",
        "",
        f"Machine: {report['machine']['cpus']} CPUs, {report['machine']['platform']}, Python "
        f"{report['machine']['python']}, torch {report['machine']['torch']}; {report['busy']} busy process(es) "
        f"beside the runs; {report['date']}.",
        "",
        "| runs | clean | failed | median wall (s) | max wall (s) | total wall (s) |",
        "|---:|---:|---:|---:|---:|---:|",
        f"| {len(runs)} | {len(runs) - len(failures)} | {len(failures)} | {walls[len(walls) // 2]:.1f} | "
        f"{walls[-1]:.1f} | {report['total_wall_s']:.0f} |",
    ]
    for i, r in failures:
        lines += ["", f"## Run {i}: rc {r['rc']}, {', '.join(r['abort_markers']) or 'no abort marker'}", "", "```"]
        lines += r["last_lines"] + ["```"]
    md_path.write_text("\n".join(lines) + "\n")
    return json_path, md_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tests", nargs="+", help="pytest paths or node ids, run together in each fresh process")
    parser.add_argument("--runs", type=int, default=30, help="fresh processes to run, one after another")
    parser.add_argument("--busy", type=int, default=0, help="CPU-spinning processes to run beside the tests")
    parser.add_argument("--label", default=None, help="name of the result files (default: idle or busy<K>)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds before a run counts as hung")
    parser.add_argument("--tail", type=int, default=60, help="lines of a failed run's output to keep")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.busy < 0:
        parser.error("--runs must be >= 1 and --busy >= 0")
    label = args.label or ("idle" if args.busy == 0 else f"busy{args.busy}")
    stop = mp.Event()
    spinners = [mp.Process(target=_spin, args=(stop,), daemon=True) for _ in range(args.busy)]
    for p in spinners:
        p.start()
    runs, start = [], time.perf_counter()
    try:
        for i in range(1, args.runs + 1):
            r = run_once(args.tests, args.timeout, args.tail)
            runs.append(r)
            failed = sum(x["failed"] for x in runs)
            status = f"FAILED rc={r['rc']} {' '.join(r['abort_markers'])}" if r["failed"] else "ok"
            print(f"run {i}/{args.runs}: {status} ({r['wall_s']:.1f} s); {failed} failed so far", flush=True)
    finally:
        stop.set()
        for p in spinners:
            p.join(timeout=5)
    report = {
        "tests": args.tests,
        "command": "python tools/stress.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "busy": args.busy,
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "total_wall_s": round(time.perf_counter() - start, 1),
        "clean": sum(not r["failed"] for r in runs),
        "failed": sum(r["failed"] for r in runs),
        "runs": runs,
    }
    json_path, md_path = write_report(label, report)
    print(f"{report['clean']}/{len(runs)} clean; wrote {json_path.relative_to(ROOT)} and {md_path.relative_to(ROOT)}")
    return 1 if report["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
