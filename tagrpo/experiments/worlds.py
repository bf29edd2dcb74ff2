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

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from tagrpo.demo.report import label, pct  # noqa: E402
from tagrpo.evaluation.tables import markdown_table  # noqa: E402

CONTRASTS = (("ta_grpo", "equal_sampling"), ("ta_grpo", "ta_grpo_control"))


def _cell(row: dict | None) -> str:
    if row is None or row["n"] == 0:
        return "-"
    family = "" if row["primary"] else ", uncorrected"
    return f"{pct(row, sign=True)} ({row['n']} seeds; {row['verdict']}{family})"


def _rows(toy: dict, real: dict, subsets: tuple[str, ...], knobs: list[float], real_k: int) -> list[list]:
    """Per contrast, subset and metric (pass@1, then each study's largest k): the contrast, the subset, the metric,
    the embedded world's cell per knob and the real study's. ``toy`` is keyed ``(knob, arm, ref, subset, k)``,
    ``real`` ``(arm, ref, subset, k)``."""
    toy_k = max((k for *_, k in toy), default=1)
    out = []
    for arm, ref in CONTRASTS:
        for subset in subsets:
            for which in ("pass@1", "largest k"):
                tk, rk = (1, 1) if which == "pass@1" else (toy_k, real_k)
                metric = "pass@1" if which == "pass@1" else f"pass@{tk} / pass@{rk}"
                out.append([f"{label(arm)} - {label(ref)}", subset, metric,
                            *[_cell(toy.get((knob, arm, ref, subset, tk))) for knob in knobs],
                            _cell(real.get((arm, ref, subset, rk)))])
    return out


def _keyed(toy_verdicts: list[dict], real_verdicts: list[dict], keep) -> tuple[dict, dict]:
    """The rows ``keep`` accepts, keyed as ``_rows`` reads them (a real row without ``subset`` is on all questions)."""
    toy = {(r["knob"], r["arm"], r["ref"], r["subset"], r["k"]): r for r in toy_verdicts if keep(r)}
    real = {(r["arm"], r["ref"], r.get("subset", "all"), r["k"]): r for r in real_verdicts if keep(r)}
    return toy, real


def side_by_side(toy_verdicts: list[dict], real_verdicts: list[dict], real_name: str, real_k: int) -> str:
    """A markdown table of ``CONTRASTS`` at pass@1 and the largest k: the embedded world's primary rows (``knob``,
    ``arm``, ``ref``, ``subset`` "all", ``k``) per knob beside the real study's primary rows (``arm``, ``ref``,
    ``k``; its largest k is ``real_k``); "-" where a study has no such verdict yet."""
    toy, real = _keyed(toy_verdicts, real_verdicts, lambda r: r["primary"] and r.get("subset", "all") == "all")
    knobs = sorted({knob for knob, *_ in toy})
    rows = [[contrast, *rest] for contrast, _, *rest in _rows(toy, real, ("all",), knobs, real_k)]
    return markdown_table(["contrast", "metric (embedded / real)", *[f"embedded, hard_share {h:g}" for h in knobs],
                           real_name], rows)


def by_difficulty(toy_verdicts: list[dict], real_verdicts: list[dict], real_name: str, real_k: int) -> str:
    """A markdown table of ``CONTRASTS`` on the hard subset and the rest at pass@1 and the largest k: the embedded
    world's rows (``knob``, ``subset``; primary or not) per knob beside the real study's (``subset``); knobs with no
    such row are left out (at hard_share 0 no question is hard); "-" where a study has no such row."""
    toy, real = _keyed(toy_verdicts, real_verdicts, lambda r: r.get("subset", "all") != "all")
    knobs = sorted({knob for knob, arm, ref, *_ in toy if (arm, ref) in CONTRASTS})
    return markdown_table(["contrast", "subset", "metric (embedded / real)",
                           *[f"embedded, hard_share {h:g}" for h in knobs], real_name],
                          _rows(toy, real, ("hard", "rest"), knobs, real_k))


def plot_by_difficulty(toy_verdicts: list[dict], real_verdicts: list[dict], real_name: str, real_k: int,
                       path: str) -> bool:
    """TA-GRPO minus equal-sampling GRPO in pass@1 on the hard subset and the rest, with 95% intervals: one group of
    bars per embedded knob with a hard subset, then the real study. Writes ``path``; False (and no file) when
    neither world has such a row."""
    groups = []
    for knob in sorted({r["knob"] for r in toy_verdicts if r["subset"] == "hard"}):
        rows = {r["subset"]: r for r in toy_verdicts if r["knob"] == knob and r["k"] == 1 and r["arm"] == "ta_grpo"
                and r["ref"] == "equal_sampling"}
        groups.append((f"embedded world,\n{100 * knob:g}% of questions hidden", rows))
    groups.append((real_name, {r["subset"]: r for r in real_verdicts if r["k"] == 1 and r["arm"] == "ta_grpo"
                               and r["ref"] == "equal_sampling"}))
    if not any(sub in rows for _, rows in groups for sub in ("hard", "rest")):
        return False
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for j, (subset, colour) in enumerate((("hard", "tab:purple"), ("rest", "tab:green"))):
        for i, (_, rows) in enumerate(groups):
            r = rows.get(subset)
            if r is None or r["n"] == 0:
                continue
            x, y = i + (j - 0.5) * 0.36, 100 * r["mean"]
            name = "hard questions" if subset == "hard" else "the rest"
            ax.bar(x, y, width=0.34, color=colour, label=name if i == len(groups) - 1 else None)
            ax.errorbar(x, y, yerr=[[y - 100 * r["lo"]], [100 * r["hi"] - y]], color="black", capsize=3)
    ax.axhline(0, color="0.4", lw=0.8)
    seeds = [max((r["n"] for r in rows.values()), default=0) for _, rows in groups]
    ax.set_xticks(range(len(groups)), [f"{name}\n({n} seeds)" for (name, _), n in zip(groups, seeds, strict=True)],
                  fontsize=8)
    ax.set_ylabel("TA-GRPO - equal-sampling GRPO,\npass@1 (pp, 95% CI over seeds)")
    toy_k = max((r["k"] for r in toy_verdicts), default=1)
    ax.set_title(f"Hard questions: the base got none of its samples on q0 right\n({toy_k} per question in the "
                 f"embedded world, {real_k} on the real model); the rest: all others", fontsize=9)
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True
