"""Recompute committed cells of the real study (second version) on this machine and compare them with the stored ones.

    .venv/bin/python tools/recompute_cell.py studies/results/real_study_v2_cells/test/seed0/base/result.jsonl

A cell is deterministic on one machine (same seed, same thread count: the same counts twice), but two processors
can round bf16 work differently and so sample differently; a study resumed on a new machine mixes cells from
both. This tool states how far apart they land: per cell, the stored and recomputed pass@k and how many of the
held-out questions got a different number of correct samples. It reads each cell's spec from its
``result.jsonl`` (the model from ``tagrpo models fetch smollm2-135m``) and computes it with one torch thread, as
the study's workers do. Writes ``recompute_cell.json`` and ``.md`` into ``--out`` (default ``tools/results``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from tagrpo.common.machine import machine
from tagrpo.data.jsonl import read_jsonl


def compare(stored: dict, fresh: dict) -> dict:
    """What differs between a stored cell's result and a recomputation of the same spec."""
    if len(stored["counts"]) != len(fresh["counts"]):
        raise ValueError(f"the cells hold {len(stored['counts'])} and {len(fresh['counts'])} questions: not one spec")
    differing = sum(a != b for a, b in zip(stored["counts"], fresh["counts"], strict=True))
    return {"identical": differing == 0, "questions": len(stored["counts"]), "questions_differing": differing,
            "stored": stored["pass_at_k"], "recomputed": fresh["pass_at_k"],
            "difference_pp": {k: 100 * (fresh["pass_at_k"][k] - stored["pass_at_k"][k]) for k in stored["pass_at_k"]}}


def load_cell(path: str) -> dict:
    rows = read_jsonl(path)
    if len(rows) != 1 or "spec" not in rows[0]:
        raise SystemExit(f"{path}: not a cell's result.jsonl (one line with a 'spec' field)")
    if rows[0]["spec"].get("study") != "real_v2":
        raise SystemExit(f"{path}: field 'study' is {rows[0]['spec'].get('study')!r}; only 'real_v2' cells are "
                         "recomputed by this tool")
    return rows[0]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("cells", nargs="+", help="result.jsonl files of committed cells")
    p.add_argument("--out", type=Path, default=Path("tools/results"))
    args = p.parse_args(argv)
    cells = [(path, load_cell(path)) for path in args.cells]

    import torch

    from tagrpo.toy import smollm_sums

    torch.set_num_threads(1)
    start, rows = time.perf_counter(), []
    for path, stored in cells:
        with tempfile.TemporaryDirectory() as scratch:
            fresh = smollm_sums.compute(stored["spec"], scratch)
        rows.append({"cell": path, **compare(stored, fresh)})
        print(f"{path}: {rows[-1]['questions_differing']} of {rows[-1]['questions']} questions differ", flush=True)
    result = {"command": " ".join(["python tools/recompute_cell.py", *(argv or sys.argv[1:])]), "machine": machine(),
              "cells": rows, "wall_s": time.perf_counter() - start}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "recompute_cell.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    lines = ["# Committed cells recomputed on this machine", "",
             f"Command: `{result['command']}`. Machine: {result['machine']}. One torch thread per cell. "
             f"Wall {result['wall_s']:.0f} s.", "",
             "| cell | questions differing | stored pass@1 / pass@8 % | recomputed % | difference, pp |",
             "|---|---|---|---|---|"]
    for r in rows:
        ks = sorted(r["stored"], key=int)
        stored, again = (" / ".join(f"{100 * r[side][k]:.1f}" for k in ks) for side in ("stored", "recomputed"))
        diff = " / ".join(f"{r['difference_pp'][k]:+.1f}" for k in ks)
        moved = f"{r['questions_differing']} of {r['questions']}"
        lines.append(f"| `{r['cell']}` | {moved} | {stored} | {again} | {diff} |")
    (args.out / "recompute_cell.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
