"""Every current study re-renders from its committed cells with the committed numbers: a fresh ``--render-only``
into a scratch folder is compared with ``studies/results/<study>.json`` number by number (verdicts, rates, sweep,
issue 32's goal) and with its markdown line by line (less the machine it was rendered on). A change to the
framework that moves a number, or a report not re-rendered after a change, fails here."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from tagrpo.experiments import run

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "studies" / "results"
STUDIES = (("embedded_v2", "toy_regime_v2"), ("capacity", "toy_capacity"), ("real_v2", "real_study_v2"),
           ("real_v3", "real_study_v3"))  # the third real study as far as its committed cells go
VERDICT_FIELDS = ("mean", "lo", "hi", "n", "p", "p_holm", "verdict", "p_equivalence_holm", "values", "versus_values")


def _key(r: dict) -> tuple:
    return r["knob"], r["arm"], r["ref"], r["subset"], r["k"], r["versus"], r["family"], r["kind"]


def _same(a, b) -> bool:
    """Equal, floats to 1e-12 relative: numpy's sums take other SIMD paths on other CPUs (an AVX2-only EPYC moved
    the last digit of a mean rendered on an AVX512 one), so a recomputation matches to rounding, not to the bit."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def _without_machine(md: str) -> list[str]:
    return [re.sub(r"Rendered on: \{.*?\}", "Rendered on: <machine>", line) for line in md.splitlines()]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("rendered")
    for name, _ in STUDIES:  # the embedded study first: the real one is set beside it
        run.main(name, argv=["--render-only", "--out", str(out)], results=str(RESULTS))
    return out


@pytest.mark.slow
@pytest.mark.parametrize(("name", "outputs"), STUDIES)
def test_a_fresh_render_has_the_committed_numbers(rendered, name, outputs):
    committed = json.loads((RESULTS / f"{outputs}.json").read_text(encoding="utf-8"))
    fresh = json.loads((rendered / f"{outputs}.json").read_text(encoding="utf-8"))
    old, new = ({_key(r): r for r in d["verdicts"]} for d in (committed, fresh))
    assert set(old) == set(new) and len(fresh["verdicts"]) == len(committed["verdicts"])
    for key, row in old.items():
        for field in VERDICT_FIELDS:
            assert _same(row.get(field), new[key].get(field)), (key, field)
    for field in ("learning_rates", "goal", "closest", "q0", "premise", "base", "cells"):
        assert _same(fresh[field], committed[field]), field
    def sweep(d):
        return [(r["arm"], r["knob"], r["learning_rate"], r["seed"], r["objective"], r["pass1"]) for r in d["sweep"]]

    assert _same(sweep(fresh), sweep(committed))
    md = (rendered / f"{outputs}.md").read_text(encoding="utf-8")
    assert _without_machine(md) == _without_machine((RESULTS / f"{outputs}.md").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_the_committed_verdicts_are_the_ones_the_documents_quote(rendered):
    """The real study's primary verdict as README and docs/results.md quote it (issue 33), from a fresh render."""
    fresh = json.loads((rendered / "real_study_v2.json").read_text(encoding="utf-8"))
    row = next(r for r in fresh["verdicts"] if r["primary"] and r["ref"] == "equal_sampling" and r["k"] == 1)
    assert (round(100 * row["mean"], 1), round(100 * row["lo"], 1), round(100 * row["hi"], 1)) == (11.8, 6.6, 17.1)
    assert row["n"] == 10 and row["verdict"] == "reproduced"


def test_render_only_without_cells_says_what_to_run(tmp_path):
    with pytest.raises(SystemExit, match="no premise cell under .*run without --render-only first"):
        run.main("real_v2", argv=["--render-only", "--work-dir", str(tmp_path / "none"), "--out", str(tmp_path)],
                 results=str(tmp_path))


def test_the_premise_and_the_probe_against_it_re_render_from_their_raw_counts():
    """``studies/toy_premise.py`` and ``studies/probe_premise.py --render-only``: the committed JSON and markdown
    from the raw part the JSON keeps (the premise's per-question counts; the probe's shares per h)."""
    from tagrpo.toy import premise

    committed = json.loads((RESULTS / "toy_premise.json").read_text(encoding="utf-8"))
    fresh = premise.premise_result({k: committed[k] for k in premise.PREMISE_RAW})
    assert list(fresh) == list(committed) and _same(json.loads(json.dumps(fresh)), committed)
    assert premise.premise_markdown(fresh) == (RESULTS / "toy_premise.md").read_text(encoding="utf-8")
    probe = json.loads((RESULTS / "probe_premise.json").read_text(encoding="utf-8"))
    rows = [{k: r[k] for k in premise.PROBE_RAW} for r in probe["rows"]]
    again = premise.probe_result(probe["command"], probe["machine"], committed, rows, probe["wall_s"])
    assert json.loads(json.dumps(again)) == probe
    assert premise.probe_markdown(again, committed) == (RESULTS / "probe_premise.md").read_text(encoding="utf-8")


def test_the_premise_mixes_its_two_kinds_by_hand():
    from tagrpo.toy import premise

    counts = {"spelled": [0, 0, 2, 4], "symbolic": [4, 4, 4, 4], "narrative": [2, 2, 2, 2], "words": [0, 0, 0, 0]}
    easy = {"spelled": [4, 4, 4, 4], "symbolic": [4, 4, 4, 4], "narrative": [4, 4, 4, 4], "words": [4, 4, 4, 4]}
    raw = {"command": "c", "machine": "m", "base": "b", "questions_per_kind": 4, "split": "test", "samples": 4,
           "blind_guess_rate": 0.0, "populations": {"hard": {"counts": counts, "strategy_entropy_bits": 1.0},
                                                    "easy": {"counts": easy, "strategy_entropy_bits": 0.0}},
           "wall_s": 1.0}
    result = premise.premise_result(raw)
    hard = result["kinds"]["hard"]
    assert hard["zero_of_n_on_q0"] == (0.5, 0.25)  # 2 of 4 questions 0 of 4 on q0; sqrt(0.5 * 0.5 / 4)
    assert hard["easiest_rephrasing"] == "symbolic" and hard["easiest_pass1_on_zero_q0"] == 1.0
    at = {k["hard_share"]: k for k in result["knob"]}
    assert at[0.6]["zero_of_n_on_q0"] == pytest.approx(0.3)  # 0.6 * 0.5 + 0.4 * 0
    assert at[0.6]["ci95"] == pytest.approx([0.3 - 1.96 * 0.15, 0.3 + 1.96 * 0.15])  # se 0.6 * 0.25
    assert at[0.6]["pass1"]["spelled"] == pytest.approx(0.6 * 6 / 16 + 0.4)
    # the probe's definition at n = 2 of 4: q0 with 2 of 4 right is all wrong with C(2, 2) / C(4, 2) = 1/6
    assert premise.zero_of(2, 4, 2) == pytest.approx(1 / 6)
    q0, hidden = premise.expected_hidden(raw["populations"]["hard"], 4, 2)
    assert q0 == pytest.approx((1 + 1 + 1 / 6 + 0) / 4) and hidden == pytest.approx(q0)  # symbolic always right


def test_the_probe_row_by_hand():
    from tagrpo.toy import premise

    lo, hi = premise.wilson(0.5, 100)  # centre 0.5, half 1.96 * sqrt(0.0025 + 0.000096) / 1.038416
    assert (lo, hi) == pytest.approx((0.5 - 0.09617, 0.5 + 0.09617), abs=1e-5)
    assert premise.wilson(0.0, 100)[1] > 0  # not empty at a share of 0
    knob = {"hard_share": 0.6, "zero_of_n_on_q0": 0.55, "ci95": [0.5, 0.6]}
    measured = {"hard_share": 0.6, "questions": 100, "n": 8, "probe_hidden": 0.5, "probe_shares": {},
                "probed_hard_share": 0.5}
    row = premise.probe_row(measured, {"knob": [knob], "samples": 64}, {"hard": (0.9, 0.8), "easy": (0.1, 0.0)})
    assert row["expected_hidden_at_n"] == pytest.approx(0.48)  # 0.6 * 0.8 + 0.4 * 0
    assert row["expected_hidden_at_probed_mix"] == pytest.approx(0.4)  # the drawn questions: 0.5 * 0.8
    assert row["definition_shift"] == pytest.approx(0.48 - 0.55)
    assert row["within_premise_interval"] and row["premise_in_probe_interval"]
    assert row["expected_in_probe_interval"] and not row["expected_at_probed_mix_in_probe_interval"]


def test_the_contrast_forest_draws_what_has_two_seeds(tmp_path):
    from tagrpo.experiments.plots import plot_contrasts

    row = {"knob": "natural", "arm": "ta_grpo", "ref": "equal_sampling", "k": 1, "mean": 0.02, "lo": -0.03, "hi": 0.07}
    path = tmp_path / "forest.png"
    assert not plot_contrasts([{**row, "n": 1}, {**row, "n": 0, "mean": math.nan}], str(path), "t", str)
    assert not path.exists()
    assert plot_contrasts([{**row, "n": 10}, {**row, "n": 1}], str(path), "t", str, margin=0.05)
    assert path.stat().st_size > 0


def test_the_forest_draws_the_equivalence_tests_own_interval_where_the_study_has_one(tmp_path, monkeypatch):
    from matplotlib.axes import Axes

    from tagrpo.experiments.plots import plot_contrasts

    drawn, labels = [], []
    plot, xlabel = Axes.plot, Axes.set_xlabel
    monkeypatch.setattr(Axes, "plot", lambda ax, x, y, **kw: drawn.append((list(x), kw["color"])) or plot(ax, x, y,
                                                                                                         **kw))
    monkeypatch.setattr(Axes, "set_xlabel", lambda ax, text, **kw: labels.append(text) or xlabel(ax, text, **kw))
    row = {"knob": "natural", "arm": "ta_grpo", "ref": "equal_sampling", "k": 1, "mean": 0.02, "lo": -0.03, "hi": 0.07,
           "n": 10}
    assert plot_contrasts([{**row, "tost_lo": -0.02, "tost_hi": 0.06}, row], str(tmp_path / "a.png"), "t", str, 0.05)
    assert drawn == [([-2.0, 6.0], "tab:blue")] and "blue: 90%" in labels[-1]  # the row without one: none
    assert plot_contrasts([{**row, "tost_lo": -0.02, "tost_hi": 0.06}], str(tmp_path / "b.png"), "t", str)
    assert len(drawn) == 1 and "blue" not in labels[-1]  # no margin: no equivalence test to show
    decided = {**row, "tost_lo": -0.02, "tost_hi": 0.06, "verdict": "reproduced"}
    assert plot_contrasts([decided, {**decided, "verdict": "no difference"}], str(tmp_path / "c.png"), "t", str, 0.05)
    assert len(drawn) == 2 and "blue: 90%" in labels[-1]  # only the contrast the superiority test left undecided


def test_the_forest_keeps_its_axis_on_what_a_difference_of_two_shares_can_be(tmp_path, monkeypatch):
    """Two seeds give a t interval of +-165 pp: the axis stops at +-100 (plus room for the numbers on the right)."""
    from matplotlib.axes import Axes

    from tagrpo.experiments.plots import plot_contrasts

    limits = []
    xlim = Axes.set_xlim
    monkeypatch.setattr(Axes, "set_xlim", lambda ax, *a, **kw: limits.append(a) or xlim(ax, *a, **kw))
    wide = {"knob": "reasoning", "arm": "ta_grpo", "ref": "equal_sampling", "k": 1, "mean": 0.225, "lo": -1.427,
            "hi": 1.877, "n": 2}
    assert plot_contrasts([wide, {**wide, "mean": -0.007, "lo": -0.044, "hi": 0.031, "n": 10}],
                          str(tmp_path / "f.png"), "t", str, 0.05)
    (drawn,) = [a for a in limits if len(a) == 2]  # the plot's own call
    assert drawn == pytest.approx((-100 - 0.05 * 200, 100 + 0.45 * 200))
