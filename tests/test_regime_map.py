"""The shipped regime map (``tagrpo/evaluation/regime_map.json``) is what ``tools/regime_map.py`` makes of the
committed studies: rebuilt here, it must equal the committed file, so a study's JSON or base cells changing without
the map being rebuilt fails. Also: the hypergeometric share by hand, and the third real study joining when present."""

from __future__ import annotations

import hashlib
import json
from math import comb
from pathlib import Path

import pytest
from script_loader import load_script

from tagrpo.evaluation.probe_report import MAP, load_map

ROOT = Path(__file__).resolve().parents[1]
CURRENT = ("toy_regime_v2.json", "toy_capacity.json", "real_study_v2.json")


@pytest.fixture(scope="module")
def tool():
    return load_script(ROOT / "tools" / "regime_map.py")


def test_the_committed_map_is_rebuilt_from_the_committed_studies(tool):
    assert json.loads(json.dumps(tool.build())) == load_map(), "run .venv/bin/python tools/regime_map.py"
    assert MAP.name == "regime_map.json"


def test_the_map_reads_the_current_studies_only_and_hashes_them(tool):
    shipped = load_map()
    names = {Path(s).name for s in shipped["sources"]}
    assert names >= set(CURRENT) and "toy_regime.json" not in names and "toy_premise.json" not in names
    for source, digest in shipped["sources"].items():
        assert hashlib.sha256((ROOT / source).read_bytes()).hexdigest() == digest
    assert {p["source"] for p in shipped["points"]} <= set(shipped["sources"])
    worlds = {(p["world"], Path(p["source"]).name, p.get("hard_share")) for p in shipped["points"]}
    assert {("real", "real_study_v2.json", None), ("embedded", "toy_regime_v2.json", 0.0),
            ("embedded", "toy_regime_v2.json", 0.6), ("embedded", "toy_regime_v2.json", 0.9),
            ("embedded", "toy_capacity.json", 0.6)} <= worlds
    (v2,) = [p for p in shipped["points"] if p["source"].endswith("real_study_v2.json")]
    pass1 = next(c for c in v2["contrasts"] if c["k"] == 1)
    assert (round(100 * pass1["mean"], 1), round(100 * pass1["lo"], 1), round(100 * pass1["hi"], 1)) == \
        (11.8, 6.6, 17.1)
    assert (v2["num_rephrasings"], v2["num_generations"], v2["seeds"], v2["q0_form"]) == (3, 2, 10, "spelled")


def test_all_wrong_at_the_probes_n_by_hand(tool):
    # of 64 samples: 0 right -> 8 drawn are all wrong surely; 64 right -> never; 32 right -> C(32, 8) / C(64, 8)
    assert tool.all_wrong_at_probe_n([0, 64, 32], 64) == pytest.approx((1 + 0 + comb(32, 8) / comb(64, 8)) / 3)
    assert tool.all_wrong_at_probe_n([0, 1, 8, 0], 8) == 0.5  # at 8 samples: the share of zeros
    with pytest.raises(ValueError, match="4 samples"):
        tool.all_wrong_at_probe_n([0], 4)


def _v3(regimes: dict) -> dict:
    verdict = {"arm": "ta_grpo", "ref": "equal_sampling", "subset": "all", "lo": 0.0, "hi": 0.1, "mean": 0.05,
               "n": 10, "p_holm": 0.2, "verdict": "inconclusive", "primary": True, "versus": None}
    base = {"kind": "base", "split": "test", "group": "narrative", "knobs": ["natural", "model_made"]}
    return {
        "q0": {r: "narrative" for r in regimes}, "arms": {"ta_grpo": {"num_rephrasings": 3, "num_generations": 2}},
        "task_options": {"regimes": regimes, "groups": {"narrative": {"problem": "sum", "q0": "narrative"},
                                                        "three_sum": {"problem": "sum_three", "q0": "narrative"}}},
        "verdicts": [{**verdict, "knob": "natural", "k": 1}, {**verdict, "knob": "natural", "k": 8},
                     {**verdict, "knob": "model_made", "k": 1}, {**verdict, "knob": "reasoning", "primary": False}],
        "results": [{"spec": {**base, "seed": s}, "counts": counts, "samples": 8,
                     "forms": {"narrative": 0.25, "symbolic": 0.5 + s / 10, "words": 0.1, "spelled": 0.15}}
                    for s, counts in ((0, [0, 8, 4, 0]), (1, [0, 8, 4, 2]))],
    }


def _scratch(tool, tmp_path, monkeypatch):
    """A scratch repository root holding the current studies (linked), where a test may write a third study."""
    results = tmp_path / "studies" / "results"
    results.mkdir(parents=True)
    for name in (*CURRENT, "toy_regime_v2_cells", "toy_capacity_cells"):
        (results / name).symlink_to(ROOT / "studies" / "results" / name)
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    return results


def test_the_third_real_study_joins_when_present_and_is_skipped_while_absent(tool, tmp_path, monkeypatch):
    results = _scratch(tool, tmp_path, monkeypatch)
    without = tool.build()
    assert without == tool.build() and not [p for p in without["points"] if "v3" in p["source"]]
    regimes = {"natural": {"group": "narrative", "rephrasings": "rule"},
               "model_made": {"group": "narrative", "rephrasings": "model"},
               "reasoning": {"group": "three_sum", "rephrasings": "rule"}}
    (results / "real_study_v3.json").write_text(json.dumps(_v3(regimes)))
    built = tool.build()
    v3 = {p["regime"].split(":")[0]: p for p in built["points"] if p["source"].endswith("real_study_v3.json")}
    assert set(v3) == {"regime natural", "regime model_made"}  # reasoning has no primary verdicts yet
    natural, made = v3["regime natural"], v3["regime model_made"]
    assert natural["measured"]["q0_all_wrong"]["mean"] == pytest.approx((0.5 + 0.25) / 2, rel=1e-5)
    # rephrasing forms symbolic, words, spelled against q0 narrative: (0.5 + 0.1 + 0.15) / 3 - 0.25 = 0, then +1/30
    assert natural["measured"]["mean_shift"]["mean"] == pytest.approx((0.0 + 0.1 / 3) / 2, rel=1e-5)  # 6 figures
    assert made["measured"]["mean_shift"] is None  # its rephrasings are not among the base's forms
    assert [c["k"] for c in natural["contrasts"]] == [1, 8] and natural["q0_form"] == "narrative"
    assert "studies/results/real_study_v3.json" in built["sources"]


def test_a_regime_short_of_its_declared_seeds_stays_off_the_map(tool, tmp_path, monkeypatch):
    results = _scratch(tool, tmp_path, monkeypatch)
    regimes = {"natural": {"group": "narrative", "rephrasings": "rule"},
               "model_made": {"group": "narrative", "rephrasings": "model"}}
    study = _v3(regimes)
    for v in study["verdicts"]:
        if v["knob"] == "natural" and v["k"] == 8:
            v["n"] = 9  # one seed short: still running
    (results / "real_study_v3.json").write_text(json.dumps(study))
    regimes_on_map = {p["regime"].split(":")[0] for p in tool.build()["points"] if "v3" in p["source"]}
    assert regimes_on_map == {"regime model_made"}
    assert not tool.complete([], "real_v3") and tool.complete([{"n": 10}], "real_v3")


def _probe_run(folder: Path, share: float, shift: float) -> None:
    """A committed probe run of three questions: q0 0, 8 and 4 of 8 right; the rephrasings 8/0/0, 8/8/8, 0/0/0."""
    folder.mkdir(parents=True)
    records = [{"id": "a", "n": 8, "q0": 0, "rephrasings": [8, 0, 0]},
               {"id": "b", "n": 8, "q0": 8, "rephrasings": [8] * 3},
               {"id": "c", "n": 8, "q0": 4, "rephrasings": [0] * 3}]
    (folder / "counts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    probe = {"n": 8, "q0_all_wrong": share, "mean_shift": shift, "shares": {"hidden": 1 / 3},
             "config": {"temperature": 0.7}}
    (folder / "probe.json").write_text(json.dumps(probe))


def test_a_real_point_is_measured_by_its_committed_probe_run_and_keeps_its_base_cells_beside(tool, tmp_path,
                                                                                          monkeypatch):
    results = _scratch(tool, tmp_path, monkeypatch)
    # by hand: q0 all wrong on 1 of 3 questions; shifts (8/3 - 0)/8 = 1/3, 0, (0 - 4)/8 = -1/2: mean -1/18
    _probe_run(results / "real_study_v3_forecast" / "natural", 1 / 3, -1 / 18)
    regimes = {"natural": {"group": "narrative", "rephrasings": "rule"},
               "model_made": {"group": "narrative", "rephrasings": "model"}}
    (results / "real_study_v3.json").write_text(json.dumps(_v3(regimes)))
    built = tool.build()
    v3 = {p["regime"].split(":")[0]: p for p in built["points"] if p["source"].endswith("real_study_v3.json")}
    natural, made = v3["regime natural"], v3["regime model_made"]
    assert natural["measured"]["q0_all_wrong"]["mean"] == pytest.approx(1 / 3, rel=1e-5)
    assert natural["measured"]["mean_shift"]["mean"] == pytest.approx(-1 / 18, rel=1e-5)
    assert natural["measured"]["on"] == "training questions" and natural["measured"]["questions"] == 3
    assert natural["measured_base"]["q0_all_wrong"]["mean"] == pytest.approx((0.5 + 0.25) / 2, rel=1e-5)
    assert "measured_base" not in made and made["measured"]["on"] == "test questions"  # no probe run: base cells
    assert "studies/results/real_study_v3_forecast/natural/counts.jsonl" in built["sources"]
    _probe_run(results / "real_study_v3_forecast" / "model_made", 0.5, -1 / 18)  # a probe.json its counts deny
    with pytest.raises(ValueError, match="counts.jsonl does not give probe.json's numbers"):
        tool.build()
