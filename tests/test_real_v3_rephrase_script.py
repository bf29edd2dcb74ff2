"""``studies/real_study_v3_rephrase.py``'s report when the checks accept nothing, and the study runner's refusal to
compute a setting that ended by design."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from script_loader import load_script

from tagrpo.experiments import run
from tagrpo.experiments.declarations.real_v3 import STUDY

ROOT = Path(__file__).resolve().parents[1]


def test_the_failed_report_counts_questions_candidates_and_reasons(tmp_path):
    script = load_script(ROOT / "studies" / "real_study_v3_rephrase.py")
    replies = [{"id": "a", "accepted": False, "reason": "question", "usage": [10, 5]},
               {"id": "a", "accepted": True, "reason": None, "usage": [10, 6]},
               {"id": "b", "accepted": False, "reason": "numbers", "usage": [12, 7]},
               {"id": "b", "accepted": False, "reason": "question", "usage": None}]
    cache = tmp_path / "r.jsonl.cache.jsonl"
    cache.write_text("".join(json.dumps(r) + "\n" for r in replies))
    text = script.failed_report(str(cache), asked=3, n=2, command="tagrpo rephrase ...", why="nothing")
    # 3 questions x 2 asked; one accepted (question a: fewer than N), questions b and c with none
    assert "| 3 | 6 | 1 | 0 | 1 | 2 |" in text
    assert "numbers 1, question 2" in text and "(4 replies cached, 32 prompt and 18 completion tokens)" in text


def test_a_setting_that_ended_is_not_computed(tmp_path, capsys):
    assert set(STUDY.ended) == {"model_made", "reasoning"}
    args = run.StudyArgs(work_dir=str(tmp_path), out=str(tmp_path), settings=["model_made", "reasoning"])
    with pytest.raises(SystemExit, match="every setting asked for has ended"):
        run.execute(STUDY, args, [])
    assert "not computed, ended by design: model_made (tagrpo rephrase accepted none" in capsys.readouterr().out
    assert not (tmp_path / "invocations.jsonl").exists()  # nothing computed, nothing recorded
