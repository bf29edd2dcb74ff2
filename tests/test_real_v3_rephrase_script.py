"""``studies/real_study_v3_rephrase.py``'s report when the checks accept nothing, and the study runner's refusal to
compute a setting that ended by design."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from script_loader import load_script

from tagrpo.experiments import run
from tagrpo.experiments.declarations.real_v3 import STUDY

ROOT = Path(__file__).resolve().parents[1]


def test_the_report_counts_questions_candidates_and_reasons_and_applies_the_declared_rule(tmp_path):
    script = load_script(ROOT / "studies" / "real_study_v3_rephrase.py")
    replies = [{"id": "a", "type": "paraphrase", "accepted": False, "reason": "question", "usage": [10, 5]},
               {"id": "a", "type": "rename", "accepted": True, "reason": None, "text": "Ann has 2.", "usage": [10, 6]},
               {"id": "a", "type": "format", "accepted": True, "reason": None, "text": "Ann has 2.", "usage": [1, 1]},
               {"id": "b", "type": "paraphrase", "accepted": False, "reason": "numbers", "usage": [12, 7]},
               {"id": "b", "type": "rename", "accepted": False, "reason": "question", "usage": None}]
    out = tmp_path / "r.jsonl"
    (tmp_path / "r.jsonl.cache.jsonl").write_text("".join(json.dumps(r) + "\n" for r in replies))
    questions = [{"id": q, "prompt": f"{q}?"} for q in "abc"]
    text = script.report(str(out), questions, "tagrpo rephrase ...", pilot=True, why="nothing")
    # 3 questions x 3 asked; question a keeps one (its duplicate counts once): fewer than N; b and c none
    assert "| 3 | 9 | 1 | 0 | 1 | 2 |" in text
    assert "numbers 1, question 2" in text and "(5 replies cached, 33 prompt and 19 completion tokens)" in text
    assert "the regime ends here" in text and "| a? | rename | Ann has 2. |" in text  # 1 of 9 is under a third
    assert script.goes_on({"accepted": 3, "asked": 9}, pilot=True, questions=3)
    assert not script.goes_on({"accepted": 2, "asked": 9}, pilot=True, questions=3)
    assert script.goes_on({"none": 2}, pilot=False, questions=4)
    assert not script.goes_on({"none": 3}, pilot=False, questions=4)


def test_a_setting_that_ended_is_not_computed(tmp_path, capsys):
    assert STUDY.ended == {}  # model-made's second design goes on, the reasoning regime's fifth (its declaration)
    ended = dataclasses.replace(STUDY, ended={"reasoning": "its premise failed"})  # as it was before the fifth
    args = run.StudyArgs(work_dir=str(tmp_path), out=str(tmp_path), settings=["reasoning"])
    with pytest.raises(SystemExit, match="every setting asked for has ended"):
        run.execute(ended, args, [])
    assert "not computed, ended by design: reasoning (its premise failed" in capsys.readouterr().out
    assert not (tmp_path / "invocations.jsonl").exists()  # nothing computed, nothing recorded
