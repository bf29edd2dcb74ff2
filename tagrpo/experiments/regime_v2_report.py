"""toy_regime_v2.json and toy_regime_v2.md from the cells of ``studies/toy_regime_v2.py`` (design: ``study_v2``).

Written from whatever cells exist: a partial study renders its sweep and says how many cells of each phase are
done; the verdicts and issue 32's goal appear once both sides of a contrast have seeds.
"""

from __future__ import annotations

import json
import math
import os
import textwrap
from statistics import mean

from tagrpo.evaluation.stats import interval
from tagrpo.evaluation.tables import markdown_table
from tagrpo.experiments import study
from tagrpo.experiments import study_v2 as design
from tagrpo.experiments.machine import machine
from tagrpo.experiments.regime_report import arm_table, index, verdict_table
from tagrpo.experiments.report import label, pct

ARM_ORDER = (*design.PRIMARY_ARMS, *design.WEIGHTED, *design.EXPLORATORY_ARMS, *design.PILOT_ARMS)


def pilot_by_rate(cells: list[dict]) -> list[dict]:
    """The cells with each pilot cell's arm renamed ``arm@rate`` (``design.PILOT_ARMS``): the pilot runs one arm at
    two fixed rates, which would otherwise share one (knob, seed, arm) key of ``index``."""
    return [{**c, "spec": {**c["spec"], "arm": design.pilot_arm(c["spec"]["learning_rate"])}}
            if c["spec"].get("arm") == design.PILOT["arm"] else c for c in cells]


def sweep_rows(cells) -> list[dict]:
    """One row per sweep cell: arm (``base`` for the base model), knob, rate, seed, objective, validation pass@1."""
    return [{"arm": c["spec"].get("arm", "base"), "knob": c["spec"]["knob"],
             "learning_rate": c["spec"].get("learning_rate", 0.0), "seed": c["spec"]["seed"],
             "objective": design.OBJECTIVE(c["pass_at_k"]), "pass1": c["pass_at_k"]["1"],
             "cell_wall_s": c["cell_wall_s"]} for c in cells]


def sweep_table(rows: list[dict], rates: dict, knob: float) -> str:
    """Every arm x rate at one knob: seeds, mean objective and validation pass@1, the chosen rate marked."""
    out = []
    chosen = rates.get(knob, {})
    for arm in sorted(dict.fromkeys(r["arm"] for r in rows if r["knob"] == knob), key=lambda a: a != "base"):
        for lr in sorted({r["learning_rate"] for r in rows if r["knob"] == knob and r["arm"] == arm}):
            rs = [r for r in rows if r["knob"] == knob and r["arm"] == arm and r["learning_rate"] == lr]
            mark = "**chosen**" if arm != "base" and chosen.get(arm) == lr else ""
            if arm in design.WEIGHTED and chosen.get("weighted_arm") == arm and chosen.get("weighted") == lr:
                mark += " (weighted)"
            out.append([label(arm) if arm != "base" else "base model", "-" if arm == "base" else f"{lr:g}",
                        len(rs), f"{100 * mean(r['objective'] for r in rs):.1f}",
                        f"{100 * mean(r['pass1'] for r in rs):.1f}", mark])
    return markdown_table(["arm", "learning rate", "seeds", "objective (pass@1 + pass@16), %",
                           "validation pass@1 %", ""], out)


def with_weighted(runs: dict, rates: dict) -> dict:
    """The runs with the chosen lambda arm of each knob also filed under ``weighted``."""
    out = dict(runs)
    for (knob, seed, arm), cell in runs.items():
        if arm == rates.get(knob, {}).get("weighted_arm"):
            out[(knob, seed, "weighted")] = cell
    return out


def _status(ci: dict, met: bool, declared: int) -> str:
    """met; not met once the declared seeds are in; else undecided so far."""
    return "met" if met else ("not met" if ci["n"] >= declared else f"undecided ({ci['n']} of {declared} seeds)")


def _seeds(n: int) -> str:
    return f"{n} seed{'s' * (n != 1)}"


def _shown(ci: dict) -> str:
    return "-" if math.isnan(ci["mean"]) else pct(ci, sign=True)


def goal_checks(runs: dict, bases: dict, k: int) -> list[dict]:
    """Issue 32's goal per candidate and knob: at 0.6 and 0.9, rest pass@1 against equal-sampling GRPO with its
    lower bound above -2 pp, and the candidate's hard pass@k gain over equal-sampling at least 80% of TA-GRPO's
    (paired per seed: ``(cand - eq) - 0.8 (ta - eq)``, lower bound above 0); at 0, pass@1 about equal (TOST +-2 pp)
    to the better of equal-sampling GRPO and GRPO-long. Each check: knob, arm, criterion, ci (an interval), met,
    and ``shortfall``: by how much (a fraction) the 95% bound misses the criterion (<= 0 where it does not; for
    TOST the larger of the bounds' distances beyond the margin)."""
    checks = []
    for arm in design.CANDIDATES:
        for knob in design.KNOBS:
            def values(subset, kk, ref, knob=knob, arm=arm):
                return study.paired_values(runs, bases, study.Contrast(knob, arm, ref, subset, kk))

            if knob == 0:
                refs = [r for r in ("equal_sampling", "grpo_long") if any(x[2] == r and x[0] == knob for x in runs)]
                if not refs:
                    continue
                best = max(refs, key=lambda r: mean(values("all", 1, r)) if values("all", 1, r) else -1)
                eq = study.about_equal(values("all", 1, best))
                short = max(eq["hi"] - study.EQUIVALENCE_MARGIN, -study.EQUIVALENCE_MARGIN - eq["lo"])
                checks.append({"knob": knob, "arm": arm, "criterion": f"pass@1 about equal to {label(best)}",
                               "ci": eq, "met": eq["equivalent"], "shortfall": short})
                continue
            rest = interval(values("rest", 1, "equal_sampling"))
            keep = interval(kept_gain(runs, bases, knob, arm, k))
            checks.append({"knob": knob, "arm": arm, "criterion": "rest pass@1 minus equal-sampling", "ci": rest,
                           "met": not math.isnan(rest["lo"]) and rest["lo"] > -design.NON_INFERIORITY,
                           "shortfall": -design.NON_INFERIORITY - rest["lo"]})
            checks.append({"knob": knob, "arm": arm, "criterion": f"hard pass@{k}: gain minus 80% of TA-GRPO's",
                           "ci": keep, "met": not math.isnan(keep["lo"]) and keep["lo"] > 0,
                           "shortfall": -keep["lo"]})
    return checks


def goal(checks: list[dict], declared: int = len(design.SEEDS)) -> list[list]:
    """The goal's table rows; a criterion not met is "not met" once ``declared`` seeds are in, "undecided"
    before."""
    return [[f"{c['knob']:g}", label(c["arm"]), c["criterion"], _shown(c["ci"]), c["ci"]["n"],
             _status(c["ci"], c["met"], declared)] for c in checks]


def closest(checks: list[dict]) -> list[list]:
    """Per candidate, its criteria met and its largest shortfall (pp, and where): the candidate with the smallest
    largest shortfall came closest. A summary of the declared criteria, ranked after the runs."""
    rows = []
    for arm in dict.fromkeys(c["arm"] for c in checks):
        own = [c for c in checks if c["arm"] == arm and not math.isnan(c["shortfall"])]
        if not own:
            continue
        worst = max(own, key=lambda c: c["shortfall"])
        rows.append([label(arm), f"{sum(c['met'] for c in own)} of {len(own)}",
                     f"{100 * max(worst['shortfall'], 0):.1f}", f"{worst['criterion']} at {worst['knob']:g}"])
    return sorted(rows, key=lambda r: float(r[2]))


def kept_gain(runs: dict, bases: dict, knob: float, arm: str, k: int) -> list[float]:
    """Per seed with every cell: ``(arm - eq) - KEEP_GAIN (ta - eq)`` on the hard subset at pass@k, where eq is
    equal-sampling GRPO and ta TA-GRPO (above 0: the arm keeps more than that share of TA-GRPO's gain)."""
    contrast = study.Contrast(knob, arm, "equal_sampling", "hard", k)
    out = []
    for seed in sorted(s for h, s, a in runs if h == knob and a == arm):
        if all((knob, seed, a) in runs for a in ("equal_sampling", "ta_grpo")) and (knob, seed) in bases:
            x, eq, ta = (study.cell_value(runs, bases, contrast, name, seed, k)
                         for name in (arm, "equal_sampling", "ta_grpo"))
            if not any(math.isnan(v) for v in (x, eq, ta)):
                out.append((x - eq) - design.KEEP_GAIN * (ta - eq))
    return out


def arm_points(runs: dict, bases: dict, knob: float, k: int) -> dict[str, tuple[dict, dict]]:
    """Per arm at ``knob``: rest pass@1 and hard pass@k, each a t interval over the seeds with a base cell."""
    out = {}
    for arm in (a for a in ARM_ORDER if any(h == knob and x == a for h, _, x in runs)):
        cs = [(s, c) for (h, s, a), c in sorted(runs.items()) if h == knob and a == arm and (h, s) in bases]
        vals = {}
        for subset, kk in (("rest", 1), ("hard", k)):
            xs = [study.subset_pass(c["counts"], c["samples"], bases[(knob, s)]["counts"], subset, kk) for s, c in cs]
            vals[subset] = interval([x for x in xs if not math.isnan(x)])
        out[arm] = (vals["rest"], vals["hard"])
    return out


def plot_map(runs: dict, bases: dict, k: int, path: str, title: str) -> None:
    """One panel per knob with cells: every arm at (rest pass@1, hard pass@k) with its 95% intervals over seeds;
    the goal of issue 32 sits to the right of equal-sampling GRPO and near TA-GRPO's height."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    knobs = [h for h in design.KNOBS if any(x == h for x, _ in bases)]
    if not knobs:
        return
    fig, axes = plt.subplots(1, len(knobs), figsize=(5.4 * len(knobs), 6.4), squeeze=False)
    drawn = [a for a in ARM_ORDER if a != "weighted"]  # the chosen lambda arm is drawn under its own name
    palette = [*plt.get_cmap("tab10").colors, "black", "0.6", "gold"]  # tab10's ten, then three more distinct ones
    colours = dict(zip(drawn, palette, strict=False))
    for ax, knob in zip(axes[0], knobs, strict=True):
        for arm, (rest, hard) in arm_points(runs, bases, knob, k).items():
            if math.isnan(rest["mean"]) or arm == "weighted":
                continue
            xerr = [[100 * (rest["mean"] - rest["lo"])], [100 * (rest["hi"] - rest["mean"])]] if rest["n"] > 1 else None
            if math.isnan(hard["mean"]):
                ax.errorbar([100 * rest["mean"]], [0], xerr=xerr, fmt="o", mfc="white", color=colours[arm],
                            capsize=3, label=f"{label(arm)} ({_seeds(rest['n'])}; no hard questions)")
                continue
            yerr = [[100 * (hard["mean"] - hard["lo"])], [100 * (hard["hi"] - hard["mean"])]] if hard["n"] > 1 else None
            ax.errorbar([100 * rest["mean"]], [100 * hard["mean"]], xerr=xerr, yerr=yerr, fmt="o", capsize=3,
                        color=colours[arm], label=f"{label(arm)} ({_seeds(rest['n'])})")
        ax.set_xlabel("rest pass@1 (%): questions the base solves at least once")
        ax.set_ylabel(f"hard pass@{k} (%): questions the base never solves")
        ax.set_title(f"hard_share = {knob:g}" + (" (no hard questions: drawn at 0)" if knob == 0 else ""))
        ax.set_xlim(-3, 103)  # a t interval over few seeds can pass 0 or 100: the axes stay on what can happen
        ax.set_ylim(-3, 103)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)
    lines = textwrap.wrap(title, width=55 * len(knobs))  # about 55 characters fit above one panel
    fig.suptitle("\n".join(lines))
    fig.tight_layout(rect=(0, 0, 1, 0.96 - 0.03 * len(lines)))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(args, sweep: list[dict], rates: dict, cells: list[dict], invocations: list[dict]) -> None:
    rows = sweep_rows(sweep)
    runs, bases = index(pilot_by_rate(cells))
    runs = with_weighted(runs, rates)
    k = max((c["samples"] for c in cells), default=args.samples)
    contrasts = design.v2_primary_contrasts(k) + design.v2_exploratory_contrasts(k)
    verdicts = study.judge(runs, bases, contrasts) if cells else []
    checks = goal_checks(runs, bases, k) if cells else []
    cell_wall = sum(c["cell_wall_s"] for c in cells) + sum(r["cell_wall_s"] for r in rows)
    wall = sum(i["wall_s"] for i in invocations)
    saved = {"design": "tagrpo/experiments/study_v2.py", "machine": machine(), "invocations": invocations,
             "wall_s": wall, "cell_wall_s": cell_wall, "learning_rates": {str(h): r for h, r in rates.items()},
             "sweep": rows, "verdicts": verdicts, "goal": goal(checks), "closest": closest(checks),
             "cells": len(cells)}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "toy_regime_v2.json"), "w", encoding="utf-8") as f:
        json.dump(saved, f, indent=None)
    md = ["# The regime map, second version (issue 32)", "",
          f"Design: `tagrpo/experiments/study_v2.py`, declared before the runs. Command: `python "
          f"studies/toy_regime_v2.py --workers 2` (cells under `{os.path.relpath(args.work_dir)}`, resumable). "
          f"Wall time {wall / 60:.1f} min over {len(invocations)} invocation(s); the cells' own "
          f"{cell_wall / 60:.1f} min. Rendered on: {saved['machine']}.", "",
          f"Progress: {len(rows)} sweep cells, {len(cells)} study cells on disk."]
    if not cells:
        md += ["", "**The study has not run yet**: no verdict, no goal; only the sweep below."]
    else:
        primary = [r for r in verdicts if r["primary"]]
        plot_map(runs, bases, k, os.path.join(args.out, "toy_regime_v2.png"),
                 "Every arm per knob: rest pass@1 against hard pass@k (95% intervals over seeds, test problems)")
        md += ["", "![the map, per knob](toy_regime_v2.png)", "",
               "## Issue 32's goal (per knob, from the primary cells)", "",
               markdown_table(["hard_share", "candidate", "criterion", "pp [95% CI]", "seeds", "status"],
                              saved["goal"]),
               "", "Closest to the goal (a ranking of the declared criteria made after the runs: each candidate's "
               "largest shortfall, by how much its 95% bound misses a criterion, 0 where it meets them all):", "",
               markdown_table(["candidate", "criteria met", "largest shortfall, pp", "where"], saved["closest"]),
               "", "## Primary contrasts (Holm over the family)", "", verdict_table(primary),
               "", "## Exploratory contrasts (uncorrected)", "",
               "The last rows (TA-GRPO against equal-sampling GRPO and the control on the rest) were added after "
               "the runs, to set this world beside the real model by difficulty (`rest_contrasts`, issue 33).", "",
               verdict_table([r for r in verdicts if not r["primary"]])]
        for knob in design.KNOBS:
            if any(h == knob for h, _ in bases):
                md += ["", f"### Every arm at hard_share = {knob:g}", "", arm_table(runs, bases, knob, ARM_ORDER)]
    md += ["", "## Learning-rate sweep (validation problems, per knob)", "",
           f"Seeds {list(design.SWEEP_SEEDS)}; rates {list(design.SWEEP_LRS)} and {design.EDGE_LR:g} where an arm's "
           "best is the grid's top; objective for every arm: validation pass@1 + pass@16 on q0."]
    for knob in design.KNOBS:
        if any(r["knob"] == knob for r in rows):
            md += ["", f"### hard_share = {knob:g}", "", sweep_table(rows, rates, knob)]
    with open(os.path.join(args.out, "toy_regime_v2.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md) + "\n")
