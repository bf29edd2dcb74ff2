"""``tools/recompute_cell.py``: what it reports when a committed cell is computed again, and what it refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from script_loader import load_script

TOOL = load_script(Path(__file__).resolve().parents[1] / "tools" / "recompute_cell.py")


def test_identical_cells_differ_nowhere():
    cell = {"counts": [1, 0, 8], "pass_at_k": {"1": 0.375, "8": 0.6667}}
    got = TOOL.compare(cell, dict(cell))
    assert got["identical"] and got["questions_differing"] == 0 and got["difference_pp"] == {"1": 0.0, "8": 0.0}


def test_a_recomputed_cell_that_moved_counts_the_questions_and_the_points():
    stored = {"counts": [1, 0, 8, 4], "pass_at_k": {"1": 13 / 32, "8": 0.75}}  # 13 correct of 4 x 8 samples
    fresh = {"counts": [2, 0, 8, 2], "pass_at_k": {"1": 12 / 32, "8": 0.75}}  # two questions moved, one net sample
    got = TOOL.compare(stored, fresh)
    assert not got["identical"] and got["questions_differing"] == 2 and got["questions"] == 4
    assert got["difference_pp"]["1"] == pytest.approx(-100 / 32) and got["difference_pp"]["8"] == 0.0


def test_cells_of_different_specs_are_refused():
    with pytest.raises(ValueError, match="hold 2 and 3 questions"):
        TOOL.compare({"counts": [1, 2], "pass_at_k": {}}, {"counts": [1, 2, 3], "pass_at_k": {}})


def test_only_real_v2_cells_are_loaded(tmp_path):
    path = tmp_path / "result.jsonl"
    path.write_text(json.dumps({"spec": {"study": "toy_regime"}, "counts": []}) + "\n")
    with pytest.raises(SystemExit, match="field 'study' is 'toy_regime'; only 'real_v2'"):
        TOOL.load_cell(str(path))
    path.write_text(json.dumps({"counts": []}) + "\n")
    with pytest.raises(SystemExit, match="not a cell's result.jsonl"):
        TOOL.load_cell(str(path))
