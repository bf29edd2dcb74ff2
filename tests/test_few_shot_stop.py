"""``studies/few_shot_stop.py``: the variant's templates, the counts from a cache, the Wilson interval by hand, and
the committed table re-rendered from its JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from script_loader import load_script

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def script():
    return load_script(ROOT / "studies" / "few_shot_stop.py")


def test_wilson_by_hand(script):
    # 5 of 10: p = 0.5, z^2 = 3.8416; centre (0.5 + 0.19208) / 1.38416 = 0.5;
    # half 1.96 * sqrt((0.25 + 0.09604) / 10) / 1.38416 = 0.26341
    assert script.wilson(5, 10) == pytest.approx((0.5 - 0.26341, 0.5 + 0.26341), abs=1e-5)
    lo, hi = script.wilson(0, 66)
    assert lo == pytest.approx(0.0, abs=1e-12) and 0 < hi < 0.06  # none seen: the interval still reaches above 0


def test_the_variant_drops_the_blank_line_stop_and_nothing_else(script, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(script, "OUT", str(tmp_path))
    assert script.templates_of("blank_line_stop") == script.templates_of("three_attempts") == script.TEMPLATES
    assert script.templates_of("three_attempts_sampled") == script.TEMPLATES
    from tagrpo.rephrase.config import DO_SAMPLE_BODY  # the sampled variant sends what the warning tells a user

    assert json.loads(script.EXTRA_BODY["three_attempts_sampled"]) == {"generation_config": '{"do_sample": true}'}
    assert script.EXTRA_BODY["three_attempts_sampled"] == DO_SAMPLE_BODY
    with open(script.TEMPLATES, encoding="utf-8") as f:
        shipped = yaml.safe_load(f)
    with open(script.templates_of("no_blank_line_stop"), encoding="utf-8") as f:
        variant = yaml.safe_load(f)
    assert "\n\n" in shipped["stop"] and variant["stop"] == [s for s in shipped["stop"] if s != "\n\n"]
    assert {k: v for k, v in variant.items() if k != "stop"} == {k: v for k, v in shipped.items() if k != "stop"}


def test_counts_read_what_rephrase_wrote_on_the_asked_questions_only(script, tmp_path):
    out = str(tmp_path / "v.jsonl")
    rows = [{"id": "q1", "rephrasings": ["A?"]}, {"id": "q2", "rephrasings": []}, {"id": "q3", "rephrasings": ["C?"]}]
    rejected = [{"id": "q1", "reason": "duplicate"}, {"id": "q1", "reason": "empty"}, {"id": "q2", "reason": "empty"},
                {"id": "q2", "reason": "question"}, {"id": "q2", "reason": "numbers"}, {"id": "q3", "reason": "empty"}]
    replies = [{"id": i, "usage": [9, 2]} for i in ("q1", "q1", "q1", "q1", "q2", "q2", "q2", "q3")]  # q1: again
    for path, lines in ((out, rows), (out + ".rejected.jsonl", rejected), (out + ".cache.jsonl", replies)):
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in lines)
    with open(out + ".summary.json", "w", encoding="utf-8") as f:
        json.dump({"new_results": 7, "request_phase_s": 12.5}, f)
    c = script.counts(out, {"q1", "q2", "q4"})  # q4: asked, never written
    assert (c["asked"], c["replies"], c["accepted"], c["full"], c["fewer"], c["none"]) == (9, 7, 1, 0, 1, 2)
    assert c["reasons"] == {"duplicate": 1, "empty": 2, "question": 1, "numbers": 1} and c["completion_tokens"] == 14


def test_the_committed_table_is_its_json_rendered(script):
    path = ROOT / "studies" / "results" / "few_shot_stop" / "few_shot_stop.json"
    if not path.exists():
        pytest.skip("the measurement is not committed")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert path.with_suffix(".md").read_text(encoding="utf-8") == script.markdown(data)
    assert set(data["variants"]) == set(script.VARIANTS)
