"""The embedded world and the real model side by side (issue 33): the same contrasts from each study's verdicts.

Rows: TA-GRPO against equal-sampling GRPO and against the renaming-only control, at pass@1 and at each study's
largest k (64 in the embedded world, 8 on the real model), on all test questions (the real model: q0's form).
Columns: the embedded world's regime study v2 at each share of hard questions, then the real-model study. A cell is
the paired difference's mean [95% interval] in pp, its seeds and its verdict, Holm-corrected within its own study's
primary family: the two worlds are never pooled. ``by_difficulty`` splits the same contrasts by the hard subset
(held-out questions whose base got none of its samples right on q0) and the rest; there a verdict outside its study's
primary family is uncorrected and says so.
"""

from __future__ import annotations

from tagrpo.evaluation.tables import markdown_table
from tagrpo.experiments.report import label, pct

CONTRASTS = (("ta_grpo", "equal_sampling"), ("ta_grpo", "ta_grpo_control"))


def _cell(row: dict | None) -> str:
    if row is None or row["n"] == 0:
        return "-"
    family = "" if row["primary"] else ", uncorrected"
    return f"{pct(row, sign=True)} ({row['n']} seeds; {row['verdict']}{family})"


def side_by_side(toy_verdicts: list[dict], real_verdicts: list[dict], real_name: str, real_k: int) -> str:
    """A markdown table of ``CONTRASTS`` at pass@1 and the largest k: the embedded world's primary rows (``knob``,
    ``arm``, ``ref``, ``subset`` "all", ``k``) per knob beside the real study's primary rows (``arm``, ``ref``,
    ``k``; its largest k is ``real_k``); "-" where a study has no such verdict yet."""
    toy = {(r["knob"], r["arm"], r["ref"], r["k"]): r for r in toy_verdicts
           if r.get("subset") == "all" and r["primary"]}
    real = {(r["arm"], r["ref"], r["k"]): r for r in real_verdicts if r["primary"]}
    knobs = sorted({knob for knob, *_ in toy})
    toy_k = max((k for *_, k in toy), default=1)
    rows = []
    for arm, ref in CONTRASTS:
        for which in ("pass@1", "largest k"):
            tk, rk = (1, 1) if which == "pass@1" else (toy_k, real_k)
            metric = "pass@1" if which == "pass@1" else f"pass@{tk} / pass@{rk}"
            rows.append([f"{label(arm)} - {label(ref)}", metric,
                         *[_cell(toy.get((knob, arm, ref, tk))) for knob in knobs],
                         _cell(real.get((arm, ref, rk)))])
    return markdown_table(["contrast", "metric (embedded / real)", *[f"embedded, hard_share {h:g}" for h in knobs],
                           real_name], rows)


def by_difficulty(toy_verdicts: list[dict], real_verdicts: list[dict], real_name: str, real_k: int) -> str:
    """A markdown table of ``CONTRASTS`` on the hard subset and the rest at pass@1 and the largest k: the embedded
    world's rows (``knob``, ``subset``; primary or not) per knob beside the real study's (``subset``); knobs with no
    such row are left out (at hard_share 0 no question is hard); "-" where a study has no such row."""
    toy = {(r["knob"], r["arm"], r["ref"], r["subset"], r["k"]): r for r in toy_verdicts if r["subset"] != "all"}
    real = {(r["arm"], r["ref"], r["subset"], r["k"]): r for r in real_verdicts if r.get("subset", "all") != "all"}
    toy_k = max((k for *_, k in toy), default=1)
    rows, knobs = [], sorted({knob for knob, arm, ref, *_ in toy if (arm, ref) in CONTRASTS})
    for arm, ref in CONTRASTS:
        for subset in ("hard", "rest"):
            for which in ("pass@1", "largest k"):
                tk, rk = (1, 1) if which == "pass@1" else (toy_k, real_k)
                metric = "pass@1" if which == "pass@1" else f"pass@{tk} / pass@{rk}"
                rows.append([f"{label(arm)} - {label(ref)}", subset, metric,
                             *[_cell(toy.get((knob, arm, ref, subset, tk))) for knob in knobs],
                             _cell(real.get((arm, ref, subset, rk)))])
    return markdown_table(["contrast", "subset", "metric (embedded / real)",
                           *[f"embedded, hard_share {h:g}" for h in knobs], real_name], rows)
