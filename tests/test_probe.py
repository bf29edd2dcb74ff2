"""``tagrpo probe``: its arithmetic on hand-worked counts, the placement rule and the report on hand-made maps and on
the shipped one, and the command end to end on the regime world's shipped base (three files, resume, refusals in one
line). The shipped map against its sources: tests/test_regime_map.py."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from tagrpo.cli import main
from tagrpo.evaluation import probe_math as pm
from tagrpo.evaluation import probe_report as pr
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


def _contrast(subset, k, m, lo, hi, p):
    return {"subset": subset, "k": k, "mean": m, "lo": lo, "hi": hi, "n": 10, "p_holm": p, "verdict": "any"}


def _point(world, share, shift, contrasts, **extra):
    return {"world": world, "source": f"studies/results/{world}.json", "model": f"{world} model", "task": "sums",
            "q0_form": "spelled", "num_rephrasings": 3, "num_generations": 2, "seeds": 10, "contrasts": contrasts,
            "measured": {"q0_all_wrong": {"mean": share}, "mean_shift": None if shift is None else {"mean": shift},
                         "probe_n": 8}, **extra}


# A hand-made map: one real model (50% q0 all wrong, rephrasings +20 pp), the toy base at two hard shares.
REAL = _point("real", 0.50, 0.20, [_contrast("all", 1, 0.10, 0.05, 0.15, 0.001)], regime="q0 spelled")
TOY_06 = _point("embedded", 0.57, 0.52, [_contrast("all", 1, -0.128, -0.158, -0.097, 1e-4),
                                         _contrast("all", 64, 0.31, 0.24, 0.39, 1e-4)],
                hard_share=0.6, toy_base="toy_regime")
TOY_0 = _point("embedded", 0.004, 0.41, [_contrast("all", 1, -0.02, -0.03, -0.01, 0.02),
                                         _contrast("all", 64, 0.0, 0.0, 0.0, 1.0)],
               hard_share=0.0, toy_base="toy_regime")
MINI = {"points": [REAL, TOY_06, TOY_0]}
LLM = "HuggingFaceTB/SmolLM2-135M-Instruct"


def _summary(monkeypatch, model, hidden, reph=4, total=200, regime=MINI):
    """``hidden`` questions with q0 0 of 8 and every rephrasing ``reph`` of 8 (shift reph/8 each), the rest with q0
    and every rephrasing 4 of 8 (shift 0): q0 all wrong on hidden/total, mean shift hidden/total * reph/8."""
    monkeypatch.setattr(pr, "load_map", lambda: regime)
    records = [rec(0, [reph] * 3, n=8) | {"id": str(i)} for i in range(hidden)]
    records += [rec(4, [4] * 3, n=8) | {"id": str(i)} for i in range(hidden, total)]
    cfg = SimpleNamespace(model=model, data="rows.jsonl", hard_share=None, reward="math", n=8, questions=total,
                          num_rephrasings=3, num_generations=8)
    return pr.summarize(records, cfg, rows=total, notes=[])


def test_an_llm_near_a_real_point_expects_what_it_measured(monkeypatch):
    s = _summary(monkeypatch, LLM, hidden=110)  # 55% all wrong, shift 0.55 * 0.5 = +27.5 pp: 5 and 7.5 pp from REAL
    assert (s["q0_all_wrong"], s["mean_shift"]) == pytest.approx((0.55, 0.275))
    assert s["placement"]["near"] and s["placement"]["source"] == "studies/results/real.json"
    assert s["placement"]["distance"]["scaled"] == pytest.approx(0.75)
    assert s["conclusion"].startswith("Expect TA-GRPO to raise pass@1 compared with equal-sampling GRPO")
    assert "raised pass@1 by 10.0 pp [5.0, 15.0]" in s["recommendation"][2]


def test_an_llm_far_from_every_real_point_cannot_tell_even_beside_a_toy_point(monkeypatch):
    far = _summary(monkeypatch, LLM, hidden=60)  # 30% all wrong: 20 pp from REAL
    assert not far["placement"]["near"] and far["conclusion"].startswith("Cannot tell")
    # the toy point at h=0.6 reads exactly like this (60% all wrong, +52.5 pp), but an LLM goes by real points only
    like_toy = _summary(monkeypatch, LLM, hidden=120, reph=7)
    assert pr._distance(like_toy, TOY_06)["scaled"] <= 1.0
    assert not like_toy["placement"]["near"] and like_toy["placement"]["source"] == "studies/results/real.json"
    assert any(x.startswith("Weaker context, from a toy model") and "at hard share 0.6" in x
               for x in like_toy["recommendation"])
    few = _summary(monkeypatch, LLM, hidden=28, total=50)  # near REAL in shares, but 50 < MIN_QUESTIONS questions
    assert not few["placement"]["near"] and "a probe of 100 questions" in few["conclusion"]


def test_a_toy_model_is_placed_on_the_embedded_points(monkeypatch):
    s = _summary(monkeypatch, "toy_regime", hidden=120, reph=7)  # 60% all wrong, shift 0.6 * 7/8 = +52.5 pp
    assert s["placement"]["near"] and s["placement"]["world"] == "embedded"
    assert s["placement"]["point"].endswith("at hard share 0.6")
    assert s["conclusion"].startswith("Expect TA-GRPO to lower pass@1 but raise pass@64 compared with")
    assert any(x.startswith("On a real LLM, for comparison") for x in s["recommendation"])


def test_which_models_are_toys():
    assert pr.is_toy_model("toy_regime") and pr.is_toy_model(BASE) and pr.is_toy_model("toy_world")
    assert not pr.is_toy_model(LLM) and not pr.is_toy_model(str(ROOT / "tagrpo" / "toy"))


def test_a_point_without_a_shift_is_compared_on_the_share_alone(monkeypatch):
    made = _point("real", 0.30, None, [_contrast("all", 1, 0.0, -0.05, 0.05, 1.0)], regime="model-made")
    s = _summary(monkeypatch, LLM, hidden=60, regime={"points": [made]})  # 30% all wrong, shift +15 pp
    assert s["placement"]["near"] and s["placement"]["distance"]["shift"] is None
    assert s["conclusion"].startswith("Expect TA-GRPO to make no clear difference to pass@1")


OPENING = re.compile(r"^\*\*(Expect [^.]+; confirm it with [^.]+|Cannot tell [^.]+; find out with [^.]+)\.\*\*$")
JARGON = ("refuted", "reproduced", "inconclusive", "verdict", "cheaper")


@pytest.mark.parametrize(("model", "hidden", "reph"), [(LLM, 110, 4), (LLM, 60, 4), ("toy_regime", 120, 7),
                                                        ("toy_regime", 10, 4)])
def test_the_report_opens_with_one_conclusion_and_speaks_plainly(monkeypatch, model, hidden, reph):
    for regime in (MINI, json.loads(pr.MAP.read_text(encoding="utf-8"))):  # the hand-made map and the shipped one
        s = _summary(monkeypatch, model, hidden=hidden, reph=reph, regime=regime)
        text = pr.markdown(s)
        opening = text.split("\n")[2]
        plain = re.sub(r"\d+\.\d+", "X", re.sub(r"`[^`]*`", "CMD", opening))  # commands and decimals aside,
        assert OPENING.match(plain), opening  # one sentence
        assert not [w for w in JARGON if w in text.lower()]
        assert 3 <= len(s["recommendation"]) <= 6
        assert all(re.search(r"\((probe\.json|studies/results/[\w.]+\.json)\)\.$", x) for x in s["recommendation"])


def test_costs_are_stated_per_arm(monkeypatch):
    s = _summary(monkeypatch, LLM, hidden=110)  # N=3, G=8; adaptive: 8 + U*3*8 with U the zero-signal share
    (cost,) = [x for x in s["recommendation"] if x.startswith("Cost per question")]
    adaptive = 8 + s["grpo"]["zero_signal_share"] * 24
    assert cost.startswith("Cost per question: TA-GRPO and equal-sampling GRPO the same 32 rollouts ((N+1)·G, N=3, "
                           f"G=8); GRPO 8; the adaptive pool modes about {adaptive:.1f}")
    assert "num_rephrasings=0 num_generations=32` (the same rollouts)" in s["conclusion"]


def test_the_shipped_map_places_a_probe_of_v2s_own_data_at_v2s_point(monkeypatch):
    """A real point is measured by the probe of its own training data (studies/results/real_study_v2_probe: 68% of q0
    all wrong, rephrasings +15.25 pp), so that probe lands on it. The first study's probe
    (benchmarks/results/probe_time.md: 57%, +16.6 pp, another prompt and split) is 11 pp off: outside the rule."""
    shipped = json.loads(pr.MAP.read_text(encoding="utf-8"))
    (v2,) = [p for p in shipped["points"] if p["source"] == "studies/results/real_study_v2.json"]
    own = json.loads((ROOT / "studies" / "results" / "real_study_v2_probe" / "probe.json").read_text())
    assert pr._distance(own, v2)["scaled"] == pytest.approx(0.0, abs=1e-5)
    assert v2["measured"]["on"] == "training questions" and v2["measured_base"]["on"] == "test questions"
    assert pr._distance({"q0_all_wrong": 0.57, "mean_shift": (0.340 + 0.048 + 0.111) / 3}, v2)["scaled"] > 1.0
    s = _summary(monkeypatch, LLM, hidden=136, reph=2, regime={"points": [v2]})  # 68% all wrong, shift +17 pp
    assert s["conclusion"].startswith("Expect TA-GRPO to raise pass@1")
    assert "raised pass@1 by 11.8 pp [6.6, 17.1]" in s["recommendation"][2] and "10 seeds, Holm-corrected" in \
        s["recommendation"][2]
    assert "68.0% of training questions with q0 all wrong in 8 samples" in s["recommendation"][1]


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
    assert report["placement"]["world"] == "embedded"  # the shipped toy base: the embedded points
    assert report["conclusion"].startswith("Cannot tell") and "a probe of 100 questions" in report["conclusion"]
    assert (out / "probe.md").read_text().split("\n")[2] == f"**{report['conclusion']}**"
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
