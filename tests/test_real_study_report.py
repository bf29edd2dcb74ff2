"""The real-model study's verdict logic (``tagrpo/experiments/real_report.py``) on cells worked out by hand."""

from __future__ import annotations

import math

import pytest

from tagrpo.experiments import real_report as report
from tagrpo.experiments import real_study


def _cell(kind, seed, counts, arm=None, lr=1e-5, samples=2):
    spec = {"kind": kind, "seed": seed, "split": "test"}
    if arm:
        spec.update(arm=arm, learning_rate=lr)
    return {"spec": spec, "counts": counts, "samples": samples, "pass_at_k": {}}


def _cells():
    ta = {0: [2, 1], 1: [2, 2], 2: [1, 1]}  # pass@1 0.75, 1.0, 0.5
    es = {0: [1, 0], 1: [1, 1], 2: [1, 0]}  # pass@1 0.25, 0.5, 0.25: TA-GRPO - ES = 0.5, 0.5, 0.25
    cells = [_cell("base", s, [0, 1]) for s in range(3)]
    for s in range(3):
        cells += [_cell("arm", s, ta[s], "ta_grpo"), _cell("arm", s, es[s], "equal_sampling"),
                  _cell("arm", s, es[s], "ta_grpo_control"), _cell("arm", s, ta[s], "pooled_no_anchor")]
    return cells


def test_primary_contrasts_are_holm_corrected_and_the_rest_exploratory():
    runs, bases = report.index(_cells())
    rows = {(r["ref"], r["arm"], r["k"]): r for r in report.verdicts(runs, bases, 2)}
    es = rows[("equal_sampling", "ta_grpo", 1)]
    assert es["values"] == pytest.approx([0.5, 0.5, 0.25])
    assert es["mean"] == pytest.approx(5 / 12)
    se = math.sqrt(((1 / 12) ** 2 * 2 + (1 / 6) ** 2) / 2) / math.sqrt(3)  # sd 0.1443 / sqrt(3) = 0.0833
    assert es["hi"] - es["mean"] == pytest.approx(4.3027 * se, rel=1e-3)  # t(0.975, 2 df)
    assert es["p"] == pytest.approx(0.0377, abs=5e-4)  # t = 5.0 on 2 df
    primary = [r for r in rows.values() if r["primary"]]
    assert {(r["ref"], r["k"]) for r in primary} == {("equal_sampling", 1), ("equal_sampling", 2),
                                                     ("ta_grpo_control", 1), ("ta_grpo_control", 2)}
    assert all(r["p_holm"] >= r["p"] for r in primary)
    assert es["verdict"] == ("reproduced" if es["p_holm"] < 0.05 else "inconclusive")
    pooled = rows[("pooled_no_anchor", "ta_grpo", 1)]
    assert not pooled["primary"] and "p_holm" not in pooled and pooled["values"] == [0.0, 0.0, 0.0]
    assert rows[("base", "ta_grpo", 1)]["values"] == pytest.approx([0.5, 0.75, 0.25])  # against base 0.25
    assert ("grpo", "ta_grpo", 1) in rows and rows[("grpo", "ta_grpo", 1)]["n"] == 0  # not run: no values


def test_q0_is_the_hardest_form_inside_the_mixed_band():
    premise = {"accuracy": {"symbolic": 0.8, "words": 0.2, "narrative": 0.3, "spelled": 0.05}}
    assert real_study.choose_q0(premise) == "words"  # spelled is below 10%
    premise["accuracy"]["spelled"] = 0.12
    assert real_study.choose_q0(premise) == "spelled"


def test_each_arm_gets_its_best_rate_ties_to_the_smaller():
    def sweep(arm, lr, p1, pk):
        cell = _cell("arm", 100, [0], arm, lr, samples=8)
        cell["pass_at_k"] = {"1": p1, "8": pk}
        return cell

    cells = [sweep("ta_grpo", 1e-5, 0.1, 0.3), sweep("ta_grpo", 3e-5, 0.2, 0.3), sweep("grpo", 1e-5, 0.1, 0.2),
             sweep("grpo", 3e-5, 0.2, 0.1)]
    assert report.choose_learning_rates(cells) == {"ta_grpo": 3e-5, "grpo": 1e-5}


def test_one_seed_reads_as_no_test_and_three_as_a_holm_p():
    one = [c for c in _cells() if c["spec"]["seed"] == 0]
    runs, bases = report.index(one)
    rows = [r for r in report.verdicts(runs, bases, 2) if r["primary"]]
    text = report.summary(rows)
    assert text.count("on one seed: no interval, no test") == 4 and "nan" not in text
    assert all(row[4] == "-" and row[5] == "-" for row in report.verdict_rows(rows))
    runs, bases = report.index(_cells())
    rows = [r for r in report.verdicts(runs, bases, 2) if r["primary"]]
    es = next(r for r in rows if r["ref"] == "equal_sampling" and r["k"] == 1)
    assert f"Holm p {es['p_holm']:.2g}, 3 seeds" in report.summary(rows)
    assert report.verdict_rows([es])[0][4] == f"{es['p']:.2g}"


def test_bf16_only_where_it_is_native(monkeypatch):
    flags = {"avx2": "flags : fpu avx2 fma", "bf16": "flags : fpu avx2 avx512f avx512_bf16", "amx": "flags : amx_bf16"}
    for name, text in flags.items():
        monkeypatch.setattr(real_study.Path, "read_text", lambda self, encoding=None, text=text: text)
        assert real_study.native_bf16("cpu") is (name != "avx2")
    assert real_study.native_bf16("cuda")  # a GPU: no CPU flags read

    def unreadable(self, encoding=None):
        raise OSError("no /proc here")

    monkeypatch.setattr(real_study.Path, "read_text", unreadable)
    assert not real_study.native_bf16("cpu")
