"""``studies/toy_regime.py`` end to end at a tiny size: every cell runs once, a rerun reuses them all."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from script_loader import load_script

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_regime_study_runs_every_cell_once_and_resumes(tmp_path):
    cmd = [sys.executable, str(ROOT / "studies" / "toy_regime.py"), "--work-dir", str(tmp_path / "cells"),
           "--out", str(tmp_path / "out"), "--rl-steps", "1", "--questions", "2", "--samples", "2",
           "--sweep-lrs", "1e-4", "--seeds", "0", "--exploratory-seeds", "0", "--workers", "2"]
    first = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=900).stdout
    # sweep: 7 arms x 1 rate x 2 sweep seeds + 2 base cells; study: 3 settings x (base + 4 primary + 3 exploratory)
    # + 2 adaptive arms at the hardest
    assert "sweep: 16 cells, 0 done before, 16 to run" in first
    assert "study: 26 cells, 0 done before, 26 to run" in first
    again = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=300).stdout
    assert "sweep: 16 cells, 16 done before, 0 to run" in again and "study: 26 cells, 26 done before" in again
    invocations = [json.loads(line) for line in (tmp_path / "cells" / "invocations.jsonl").read_text().splitlines()]
    assert [(i["cells_run"], i["finished"]) for i in invocations] == [(42, True), (0, True)]
    saved = json.loads((tmp_path / "out" / "toy_regime.json").read_text())
    assert len(saved["cells"]) == 26 and set(saved["learning_rates"]) >= {"ta_grpo", "equal_sampling", "grpo_long"}
    primary = [v for v in saved["verdicts"] if v["primary"]]
    assert len(primary) == 30 and all(v["n"] <= 1 for v in primary)  # one seed: no interval, no verdict
    assert all(v["verdict"] == "inconclusive" for v in primary)
    assert any(c[0].startswith("the clip acts") for c in saved["conditions"])
    md = (tmp_path / "out" / "toy_regime.md").read_text()
    for section in ("## The premise at each setting", "## Primary contrasts", "## Learning-rate sweep",
                    "## Adaptive pools", "## Per-form accuracy after training"):
        assert section in md
    assert (tmp_path / "out" / "toy_regime.png").stat().st_size > 10_000


def test_cells_are_filed_by_base_and_keyed_by_its_recipe(tmp_path, monkeypatch):
    from tagrpo.experiments.cells import done
    from tagrpo.experiments.regime_cells import cell_path
    from tagrpo.toy.regime_base import recipe_id

    toy_regime = load_script(ROOT / "studies" / "toy_regime.py")
    spec = {"kind": "base", "knob": 0.6, "seed": 3, "split": "test", "samples": 2, "forms": False}
    assert cell_path("w", spec) == "w/test/h0.6/seed3/base/result.jsonl"
    probe = {**spec, "base": "outputs/probe19/slip40/"}
    assert cell_path("w", probe) == "w/slip40/test/h0.6/seed3/base/result.jsonl"
    argv = ["toy_regime.py", "--render-only", "--sweep-only", "--work-dir", str(tmp_path)]
    monkeypatch.setattr(sys, "argv", argv)
    seen = []
    monkeypatch.setattr(toy_regime, "finished", lambda specs: seen.extend(specs) or {})
    toy_regime.main()
    assert seen and all(s["base_recipe"] == recipe_id() for s, _ in seen)
    cached = {"spec": {**seen[0][0], "base_recipe": "an-older-base"}}
    (tmp_path / "cell.jsonl").write_text(json.dumps(cached) + "\n")
    assert done(str(tmp_path / "cell.jsonl"), seen[0][0]) is None  # another base's cell is not reused


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


@pytest.mark.parametrize("name", ["toy_regime", "toy_rl_check", "toy_reproduction"])
def test_render_only_without_cells_says_what_to_run_in_one_line(name, tmp_path, monkeypatch):
    script = load_script(ROOT / "studies" / f"{name}.py")
    argv = [f"{name}.py", "--render-only", "--work-dir", str(tmp_path / "w"), "--out", str(tmp_path / "o")]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit, match="run without --render-only"):
        script.main()
