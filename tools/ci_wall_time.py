"""Wall time and disk use of CI's targets on a fresh clone: what `.ci/run` costs, target by target.

    python tools/ci_wall_time.py            # clones HEAD into a temporary folder beside this checkout

Clones the committed HEAD (with ``../shared`` linked beside the clone, as CI has it), runs each target of
``.ci/run`` in order with ``CI=true``, and records per target its exit status and seconds, then the disk used by
the clone and each virtual environment. pip's cache is whatever this machine has (a first run anywhere downloads
more). Writes ``tools/results/ci_wall_time.json`` and ``.md``; the clone is removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "tools" / "results"


def targets() -> list[str]:
    """The targets `.ci/run` loops over, then the ones it runs in the background beside them (``make X ... &``),
    read from the script itself."""
    script = (ROOT / ".ci" / "run").read_text()
    match = re.search(r"^for target in (.+); do$", script, re.MULTILINE)
    if match is None:
        raise SystemExit(".ci/run has no 'for target in ...; do' line to read the targets from")
    return match.group(1).split() + re.findall(r"^make ([\w-]+) .*&$", script, re.MULTILINE)


def budget(script: str | None = None) -> str:
    """The budget `.ci/run` states in its header ("Budget: 45 minutes on 2 cores ..."), as written there."""
    script = (ROOT / ".ci" / "run").read_text() if script is None else script
    match = re.search(r"Budget: (\d+ minutes on \d+ cores)", script)
    if match is None:
        raise SystemExit(".ci/run states no 'Budget: N minutes on K cores'")
    return match.group(1)


def disk_use(path: Path) -> int:
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=True).stdout
    return int(out.split()[0])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    args = parser.parse_args(argv)
    stated = budget()  # before the half hour of targets, so a .ci/run without one fails at once
    work = Path(tempfile.mkdtemp(prefix="ci-wall-", dir=ROOT.parent))
    clone = work / "main"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    os.symlink(ROOT.parent / "shared", work / "shared")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True, text=True,
                            check=True).stdout.strip()
    rows, start = [], time.perf_counter()
    try:
        for target in targets():
            t0 = time.perf_counter()
            proc = subprocess.run(["make", target], cwd=clone, env={**os.environ, "CI": "true"},
                                  capture_output=True, text=True)
            rows.append({"target": target, "rc": proc.returncode, "wall_s": round(time.perf_counter() - t0, 1)})
            print(f"make {target}: rc {proc.returncode}, {rows[-1]['wall_s']:.0f} s", flush=True)
        total = round(time.perf_counter() - start, 1)
        disk = {p.name: disk_use(p) for p in sorted(clone.glob(".venv*")) if p.is_dir()}
        disk["clone"] = disk_use(clone)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    report = {"commit": commit, "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
              "total_wall_s": total, "targets": rows, "disk_bytes": disk}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "ci_wall_time.json").write_text(json.dumps(report, indent=2) + "\n")
    gib = 1024**3
    lines = [
        "# CI on a fresh clone: wall time and disk per target",
        "",
        "`python tools/ci_wall_time.py`",
        "",
        f"Commit {commit}, {report['cpus']} CPUs, {report['date']}; pip's cache as this machine had it. Budget "
        f"(`.ci/run`): {stated}.",
        "",
        "| target | rc | wall (s) |",
        "|---|---:|---:|",
        *[f"| make {r['target']} | {r['rc']} | {r['wall_s']:.0f} |" for r in rows],
        f"| **all** | {max(r['rc'] for r in rows)} | {total:.0f} |",
        "",
        "Each target ran alone, in turn; `.ci/run` runs the background ones (check-extras, which waits on the "
        "package index) beside the tests, so its wall time is below this sum.",
        "",
        "Disk: " + ", ".join(f"{name} {size / gib:.1f} GiB" for name, size in disk.items()) + ".",
    ]
    (RESULTS / "ci_wall_time.md").write_text("\n".join(lines) + "\n")
    print(f"total {total:.0f} s; wrote {RESULTS / 'ci_wall_time.md'}")
    return max(r["rc"] for r in rows)


if __name__ == "__main__":
    sys.exit(main())
