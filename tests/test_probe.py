"""``tagrpo probe``: its arithmetic on hand-worked counts, the shipped regime map against its sources, and the
command end to end on the regime world's shipped base (three files, resume, refusals in one line)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from script_loader import load_script

from tagrpo.cli import main
from tagrpo.evaluation import probe_math as pm
from tagrpo.evaluation.probe_report import MAP, load_map, place
from tagrpo.toy.regime import question_rows

ROOT = Path(__file__).resolve().parents[1]
BASE = str(ROOT / "tagrpo" / "toy" / "regime_checkpoint")


def rec(q0, rephrasings, n=4, types=None):
    return {"n": n, "q0": q0, "rephrasings": rephrasings, "types": types}


@pytest.mark.parametrize(("q0", "reph", "label"), [
    (4, [0, 0], "solved"), (1, [0, 0], "readable"), (3, [4, 4], "readable"), (0, [0, 1], "hidden"),
    (0, [4], "hidden"), (0, [0, 0], "unreachable"),
])
def test_classes_by_hand(q0, reph, label):
    assert pm.classify(q0, reph, 4) == label


def test_shares_sum_to_one():
    shares = pm.class_shares([rec(4, [0]), rec(0, [2]), rec(0, [1]), rec(0, [0])])
    assert shares == {"solved": 0.25, "readable": 0.0, "hidden": 0.5, "unreachable": 0.25}
    assert pm.class_shares([]) == dict.fromkeys(pm.CLASSES, 0.0)


def test_uniform_chances_by_hand():
    # 2 of 4 right, G=2 drawn without replacement: C(2,2)/C(4,2) = 1/6 all right, and 1/6 all wrong
    assert pm.uniform_chances(2, 4, 2) == pytest.approx((1 / 6, 1 / 6))
    assert pm.uniform_chances(0, 4, 3) == (0.0, 1.0) and pm.uniform_chances(4, 4, 4) == (1.0, 0.0)
    # G above n: the plug-in rate, 0.5^5 each
    assert pm.uniform_chances(2, 4, 5) == pytest.approx((1 / 32, 1 / 32))
    assert (pm.estimator(4, 4), pm.estimator(4, 5)) == ("hypergeometric", "plug-in")


def test_grpo_zero_signal_from_per_question_rates():
    # q0 counts 0, 2, 4 of 4 at G=2: uniform with chance 1, 1/6 + 1/6, 1 -> mean 7/9
    assert pm.grpo_zero_signal([rec(0, [1]), rec(2, [1]), rec(4, [1])], 2) == pytest.approx(7 / 9)
    # the same mean rate (2 of 4) as one question: a third
    assert pm.grpo_zero_signal([rec(2, [1])], 2) == pytest.approx(1 / 3)


def test_pool_uniform_and_rescue_by_hand():
    r = rec(0, [0, 2, 4])
    # N=2: q0 and the first two rephrasings; all wrong 1 * 1 * 1/6, all right 0
    assert pm.pool_uniform([r], 2, 2) == pytest.approx(1 / 6)
    assert pm.rescued_from_all_wrong([r], 2, 2) == pytest.approx(1 - 1 / 6)
    # N=1: only the all-wrong rephrasing joins q0, so the pool stays all wrong
    assert pm.pool_uniform([r], 1, 2) == 1.0 and pm.rescued_from_all_wrong([r], 1, 2) == 0.0
    # a solved question's pool: all right only where every variant is
    assert pm.pool_uniform([rec(4, [4, 2])], 2, 2) == pytest.approx(1 / 6)


def test_rollouts_per_mode():
    assert pm.rollouts(3, 8, 0.5) == {"grpo": 8.0, "ta_grpo": 32.0, "equal_sampling": 32.0, "adaptive": 20.0,
                                      "history": 20.0}


def test_per_type_shift_and_positions():
    out = pm.per_type([rec(0, [4, 2], types=["symbolic", "words"]), rec(2, [4, 0], types=["symbolic", "words"]),
                       rec(1, [3])])
    assert out["symbolic"]["shift"] == pytest.approx((1.0 + 0.5) / 2)
    assert out["words"]["shift"] == pytest.approx((0.5 - 0.5) / 2) and out["words"]["questions"] == 2
    assert out["rephrasing 1"]["questions"] == 1 and math.isnan(out["rephrasing 1"]["shift_ci95"][0])


def test_the_shipped_map_is_what_its_sources_say():
    generator = load_script(ROOT / "tools" / "regime_map.py")
    shipped = load_map()
    assert shipped["toy"] == json.loads(json.dumps(generator.toy_points()))
    assert shipped["real"] == json.loads(json.dumps(generator.real_point()))
    assert MAP.name == "regime_map.json"
    assert place(0.5, shipped)["hard_share"] == 0.6 and place(0.02, shipped)["hard_share"] == 0.0


def _probe(tmp_path, *extra):
    return main(["probe", "--model", BASE, "--data", "toy_regime", "--hard-share", "0.6", "--questions", "3",
                 "--n", "2", "--output-dir", str(tmp_path / "probe"), *extra])


@pytest.mark.slow
def test_probe_end_to_end_resumes_and_refuses_another_setting(tmp_path, capsys):
    assert _probe(tmp_path) == 0
    out = tmp_path / "probe"
    assert {p.name for p in out.iterdir()} >= {"probe.json", "probe.md", "probe.png", "counts.jsonl",
                                                "fingerprint.json"}
    report = json.loads((out / "probe.json").read_text())
    assert (report["n"], report["questions"], report["sampled"]) == (2, 3, 3)
    assert sum(report["shares"].values()) == pytest.approx(1.0)
    assert set(report["per_type"]) == {"symbolic", "narrative", "words"}
    assert all("(" in s and s.rstrip().endswith(").") for s in report["recommendation"])
    (real,) = [s for s in report["recommendation"] if s.startswith("On a real model")]
    assert "decided 4 of its 4 primary contrasts at Holm" in real and real.count("(reproduced") == 4  # each once
    (split,) = [s for s in report["recommendation"] if s.startswith("Split after its verdicts")]
    assert "pass@1 on the hard subset" in split and "pass@1 on the rest" in split and "post hoc" in split
    assert _probe(tmp_path) == 0
    assert json.loads((out / "probe.json").read_text())["sampled"] == 0
    capsys.readouterr()
    assert _probe(tmp_path, "--temperature", "0.5") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "temperature (1.0 vs 0.5)" in err


def _rows_file(tmp_path, rephrased: bool) -> str:
    rows = question_rows(2, seed=1, hard_share=0.5, split="test")
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps({**r, "rephrasings": r["rephrasings"] if rephrased else []}) + "\n"
                            for r in rows))
    return str(path)


@pytest.mark.parametrize(("args", "needle"), [
    (["--data", "ROWS"], "row 1 (id 'r1-0') has no rephrasings in field 'rephrasings'"),
    (["--data", "toy_regime", "--n", "1"], "--n 1: the probe needs at least 2 samples"),
    (["--data", "toy_world", "--hard-share", "0.5"], "data 'toy_world' does not take --hard-share"),
    (["--data", "toy_regime", "--model", "MISSING"], "no such directory"),
])
def test_bad_input_is_one_line(tmp_path, capsys, args, needle):
    rows = _rows_file(tmp_path, rephrased=False)
    argv = ["probe", "--model", BASE, "--output-dir", str(tmp_path / "out"), *args]
    argv = [rows if a == "ROWS" else str(tmp_path / "no" / "model") if a == "MISSING" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err


def test_more_questions_than_rows_probes_all_and_says_so(tmp_path, capsys):
    """From a cache that holds both questions (no model run): the command reports from counts alone."""
    from tagrpo.data.jsonl import append_jsonl
    from tagrpo.evaluation.probe import FIELDS, ProbeConfig, load_probe_rows, probe_fingerprint

    rows_path, out = _rows_file(tmp_path, rephrased=True), tmp_path / "out"
    argv = ["--model", BASE, "--data", rows_path, "--questions", "5", "--n", "2", "--output-dir", str(out)]
    cfg = ProbeConfig(model=BASE, data=rows_path, questions=5, n=2, output_dir=str(out))
    rows, _ = load_probe_rows(cfg)
    out.mkdir()
    (out / "fingerprint.json").write_text(json.dumps({k: probe_fingerprint(cfg, rows)[k] for k in FIELDS}))
    append_jsonl(str(out / "counts.jsonl"), [rec(0, [2, 1, 0], n=2) | {"id": r["id"]} for r in rows])
    assert main(["probe", *argv]) == 0
    report = json.loads((out / "probe.json").read_text())
    assert (report["questions"], report["sampled"], report["shares"]["hidden"]) == (2, 0, 1.0)
    assert "probing all" in report["notes"][0] and "probing all" in capsys.readouterr().out
    assert set(report["per_type"]) == {"rephrasing 1", "rephrasing 2", "rephrasing 3"}
