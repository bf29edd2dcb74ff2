"""A regime study run end to end by the phase runner (``tagrpo.experiments.run``) at a tiny size: every cell runs
once, a rerun of its script (``studies/toy_regime_v2.py``) computes none and draws the same report; a cell worker
ends with the study's process; a render with no cells says what to run."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tagrpo.experiments import run

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ["--workers", "2", "--seeds", "0", "--exploratory-seeds", "0", "--sweep-lrs", "1e-4", "--rl-steps", "1",
         "--questions", "2", "--samples", "2", "--no-edge",
         "--arms", "ta_grpo,equal_sampling,weighted,ta_grpo_kl,ta_grpo_variant@3e-05"]
# cells per phase at the smoke flags (one arm of each kind: swept, chosen with the rate, exploratory, fixed-rate):
# 3 knobs x 2 sweep seeds x (the base + TA-GRPO, equal-sampling and both weighted options) for the primary arms'
# sweep; 3 x 2 x 1 for the exploratory arm's; 3 knobs x (the base + 3 primary arms) on seed 0; the exploratory arm
# at 3 knobs and the pilot's one rate at 0.6 and 0.9 on seed 0
PHASES = {"sweep, primary arms": 30, "sweep, primary edge rule": 24, "study, primary arms": 12,
          "sweep, exploratory arms": 6, "sweep, exploratory edge rule": 6, "study, exploratory arms": 5}
COMPUTED = 30 + 12 + 6 + 5


def _phases(stdout: str) -> dict[str, tuple[int, int, int]]:
    out = {}
    for line in stdout.splitlines():
        what, _, rest = line.partition(": ")
        if what in PHASES and " cells, " in rest:
            words = rest.replace(",", "").split()  # "48 cells 0 done before 48 to run on 2 workers"
            out[what] = (int(words[0]), int(words[2]), int(words[5]))
    return out


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@pytest.mark.slow
def test_the_regime_study_runs_every_cell_once_and_a_rerun_computes_none(tmp_path, capsys):
    work, out = tmp_path / "cells", tmp_path / "out"
    argv = [*SMOKE, "--work-dir", str(work), "--out", str(out)]
    data = run.main("embedded_v2", argv=argv, results=str(tmp_path))
    first = _phases(capsys.readouterr().out)
    assert first == {what: (n, n if "edge" in what else 0, 0 if "edge" in what else n) for what, n in PHASES.items()}
    assert len(list(work.rglob("result.jsonl"))) == COMPUTED
    assert len(data["cells"]) == 12 + 5 and len(data["sweep"]) == 30 + 6
    invocations = [json.loads(line) for line in (work / "invocations.jsonl").read_text().splitlines()]
    assert [(i["cells_run"], i["finished"]) for i in invocations] == [(COMPUTED, True)]
    saved = json.loads((out / "toy_regime_v2.json").read_text())
    rates = saved["learning_rates"]
    assert set(rates) == {"0.0", "0.6", "0.9"}
    assert all(rates[h][a] == 1e-4 for h in rates for a in ("ta_grpo", "equal_sampling", "ta_grpo_kl", "weighted"))
    assert {rates[h]["weighted_arm"] for h in rates} <= {"ta_grpo_w25", "ta_grpo_w50"}
    assert all(c["spec"]["rl_steps"] == 1 and c["spec"]["questions"] == 2 for c in data["cells"])
    assert {c["samples"] for c in data["cells"]} == {2} and {c["samples"] for c in data["sweep"]} == {16}
    primary = [v for v in saved["verdicts"] if v["primary"]]
    assert len(primary) == 40 and all(v["n"] <= 1 for v in primary)  # one seed: no interval, no verdict
    assert all(v["verdict"] == "inconclusive" for v in saved["verdicts"])
    assert saved["goal"] and all(r[5] == "met" or r[5] == f"undecided ({r[4]} of 10 seeds)" and r[4] <= 1
                                 for r in saved["goal"])  # one seed, or none where a knob's subset is empty
    md = (out / "toy_regime_v2.md").read_text()
    for section in ("## Primary contrasts (Holm over the family)", "## Issue 32's goal", "## Exploratory contrasts",
                    "## Post hoc contrasts", "## Every arm at hard_share = 0.6", "## Per-form pass@1",
                    "## Learning-rate sweep (validation problems)", "## Invocations",
                    "TA-GRPO, per-variant groups at 3e-05"):
        assert section in md, section
    assert (out / "toy_regime_v2.png").stat().st_size > 10_000

    again = subprocess.run([sys.executable, str(ROOT / "studies" / "toy_regime_v2.py"), *argv], check=True,
                           capture_output=True, text=True, timeout=300, cwd=ROOT).stdout
    assert _phases(again) == {what: (n, n, 0) for what, n in PHASES.items()}
    invocations = [json.loads(line) for line in (work / "invocations.jsonl").read_text().splitlines()]
    assert [(i["cells_run"], i["finished"]) for i in invocations] == [(COMPUTED, True), (0, True)]
    resaved = json.loads((out / "toy_regime_v2.json").read_text())
    for field in ("learning_rates", "verdicts", "goal", "closest", "cells"):
        assert _same(resaved[field], saved[field]), field

    def rows(d):  # the computing run lists its sweep in the order the cells landed, a rerun in the plan's
        return sorted(d["sweep"], key=lambda r: (r["arm"], r["knob"], r["learning_rate"], r["seed"]))

    assert _same(rows(resaved), rows(saved)) and len(saved["sweep"]) == 30 + 6


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return True
    return "State:\tZ" in state  # exited, not yet reaped by an init that may never reap


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_a_cell_worker_ends_when_the_study_process_is_killed():
    worker = ("import os; parent = os.getppid(); from tagrpo.experiments.cells import exit_with_parent; "
              "print('ready', flush=True); exit_with_parent(parent, 0.05)")
    study_process = ("import subprocess, sys, time; "
                     f"p = subprocess.Popen([sys.executable, '-c', {worker!r}]); "
                     "print(p.pid, flush=True); time.sleep(120)")
    parent = subprocess.Popen([sys.executable, "-c", study_process], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    assert parent.stdout.readline().strip() == "ready" and not _gone(child)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 60
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(child)


def test_render_only_of_the_capacity_point_without_cells_says_what_to_run(tmp_path):
    with pytest.raises(SystemExit, match=r"base\.json: no base record; run the study first$"):
        run.main("capacity", argv=["--render-only", "--work-dir", str(tmp_path / "none"), "--out", str(tmp_path)],
                 results=str(tmp_path))
    assert not list(tmp_path.iterdir())  # nothing written


def test_render_only_of_the_regime_map_without_cells_says_what_to_run(tmp_path):
    try:
        run.main("embedded_v2", argv=["--render-only", "--work-dir", str(tmp_path / "none"), "--out",
                                      str(tmp_path / "out")], results=str(tmp_path))
    except SystemExit as stop:
        assert "(without --render-only)" in str(stop) and "\n" not in str(stop)
    else:
        raise AssertionError("no cells, and no line saying what to run")
    assert not (tmp_path / "out").exists()
