"""The renderer of every study: ``<outputs>.json`` and ``<outputs>.md`` (and its plots) from the cells on disk.

Written from whatever cells exist: a partial study renders its sweep and the cells done per phase, and the verdicts
whose both sides have seeds. The report's sections, each where the declaration has it: the premise, the verdicts
(primary with Holm, exploratory, post hoc), issue 32's goal, the map of every arm (regime task), the embedded world
beside this study by difficulty (``Study.beside``), every arm's cost and accuracy, per-form accuracy, the sweep per
setting, every invocation.
"""

from __future__ import annotations

import glob
import json
import os

from tagrpo.common.machine import machine
from tagrpo.data.jsonl import read_jsonl
from tagrpo.demo.report import label, pct
from tagrpo.evaluation.tables import markdown_table
from tagrpo.experiments import judge, tables
from tagrpo.experiments.plots import plot_contrasts, plot_map
from tagrpo.experiments.study import Study, declared
from tagrpo.experiments.tasks import task_module


def setting_key(setting) -> str:
    """A setting as the JSON keys it: ``0.6`` as "0.6", no knob as "-"."""
    return "-" if setting is None else str(setting)


def load_cells(study: Study, work_dir: str) -> tuple[dict, dict]:
    """Every test cell under ``work_dir`` (another study's, for a cost change), indexed as ``judge.index`` does."""
    paths = sorted(glob.glob(os.path.join(work_dir, "**", "result.jsonl"), recursive=True))
    cells = [r for p in paths for r in read_jsonl(p)[:1] if r["spec"].get("split") == "test"]
    return judge.index(study, cells)


def arm_order(study: Study) -> tuple[str, ...]:
    options = tuple(o for opts in study.choices.values() for o in opts)
    return (*study.primary_arms, *options, *study.exploratory_arms, *(f.name(r) for f in study.fixed for r in f.rates))


def progress(study: Study, args, data: dict, runs: dict, bases: dict) -> str:
    """Cells done per phase against the declared design."""
    primary = [a for a in study.primary_arms if a in args.arms]
    exploratory = [a for a in study.exploratory_arms if a in args.arms]
    n = len(study.settings)
    per_setting = {s for (s, _, a) in runs if a in primary}
    return (f"Cells done: sweep {len(data['sweep'])} (the grid and the edge rule's); base {len(bases)} of "
            f"{len(args.seeds) * n}; primary arms {sum(a in primary for _, _, a in runs)} of "
            f"{len(primary) * len(args.seeds) * n} (settings with any: {len(per_setting)}); exploratory arms "
            f"{sum(a in exploratory for _, _, a in runs)} of {len(exploratory) * len(args.exploratory_seeds) * n}; "
            f"fixed-rate arms {sum('@' in a for _, _, a in runs)}.")


def summary(rows: list[dict], study: Study) -> str:
    """One plain sentence per primary contrast, from its verdict."""
    say = {"reproduced": "the first is better", "refuted": "the first is worse",
           "inconclusive": "undecided" + (", neither a difference nor equivalence shown" if study.tost else ""),
           "no difference": "no difference (equivalent within the declared margin)"}
    out = []
    for r in (r for r in rows if r["primary"]):
        where = "" if r["knob"] is None else f" at {study.knob} {study.show(r['knob'])}"
        what = f"{label(r['arm'])} - {label(r['ref'])}, pass@{r['k']} on {r['subset']} questions{where}"
        if r["versus"]:
            what += f", this study minus {r['versus']}"
        if r["n"] == 0:
            out.append(f"{what}: {tables.no_cells(r, study)}.")
            continue
        if r["n"] < 2:
            out.append(f"{what}: {pct(r, sign=True)} pp on one seed, no interval, no test.")
            continue
        p = f"Holm p {tables.p_text(r['p_holm'])}"
        if r["verdict"] == "no difference":
            p = f"equivalence test's Holm p {tables.p_text(r['p_equivalence_holm'])}"
            if "tost_lo" in r:
                p += f", its 90% interval [{100 * r['tost_lo']:+.1f}, {100 * r['tost_hi']:+.1f}]"
        out.append(f"{what}: {say[r['verdict']]} ({pct(r, sign=True)} pp, {p}, {r['n']} seeds).")
    return "\n".join(f"- {s}" for s in out)


def beside(study: Study, out: str, judged: list[dict]) -> list[str]:
    """The side-by-side and by-difficulty tables (with their plot) of ``study.beside``'s verdicts and this study's."""
    from tagrpo.experiments.worlds import by_difficulty, plot_by_difficulty, side_by_side

    path = os.path.join(out, f"{study.beside}.json")
    if not os.path.exists(path):
        return [f"No `{study.beside}.json` in `{out}`: render that study there first."]
    with open(path, encoding="utf-8") as f:
        toy = json.load(f)["verdicts"]
    name, k = "SmolLM2-135M, q0's form (this study)", study.samples
    plot = f"{study.outputs}_difficulty.png"
    split = by_difficulty(toy, judged, name, k)
    if plot_by_difficulty(toy, judged, "SmolLM2-135M,\nsums (post hoc)", k, os.path.join(out, plot)):
        split += f"\n\n![this study minus the embedded world by difficulty]({plot})"
    return ["## Beside the embedded world (the same contrasts; each Holm-corrected within its own study)", "",
            side_by_side(toy, judged, name, k), "",
            "## By difficulty, beside the embedded world", "",
            "Hard: test questions the same seed's base model got 0 of its samples right on q0; rest: the others. "
            "This study's subset rows are post hoc (uncorrected); the embedded world's hard rows are its primary "
            "contrasts (Holm), its rest rows added after its runs (uncorrected).", "", split, ""]


def write(study: Study, args, data: dict) -> dict:
    """Write ``<outputs>.json`` and ``.md`` (and plots) into ``args.out``; returns what the JSON holds."""
    task = task_module(study.task)
    cells, invocations = data["cells"], data["invocations"]
    runs, bases = judge.index(study, cells, data["rates"])
    k = max((c["samples"] for c in cells), default=args.samples)
    versus = {name: load_cells(declared(name), path) for name, path in args.versus_dirs.items()}
    judged = judge.verdicts(study, runs, bases, k, versus) if cells else []
    checks = judge.goal_checks(study, runs, bases, k) if cells and study.goal else []
    rows = judge.sweep_rows(data["sweep"])
    premise = data["premise"] or {}
    premises = [premise] if "spec" in premise else list(premise.values())  # one cell, or one per group
    cell_wall = sum(c["cell_wall_s"] for c in [*cells, *data["sweep"], *premises])
    wall = sum(i["wall_s"] for i in invocations)
    argv = invocations[-1]["argv"] if invocations else data["argv"]
    saved = {"study": study.name, "design": f"tagrpo/experiments/declarations/{study.name}.py",
             "command": " ".join(["python", study.script, *argv]), "machine": machine(), "invocations": invocations,
             "wall_s": wall, "cell_wall_s": cell_wall, "arms": study.arms, "task_options": study.task_options,
             "premise": data["premise"], "q0": data["q0"], "base": data["record"],
             "learning_rates": {setting_key(s): r for s, r in data["rates"].items()}, "sweep": rows,
             "verdicts": judged, "goal": tables.goal_rows(checks, len(study.seeds)), "closest": tables.closest(checks),
             "cells": len(cells), "results": cells if study.task == "sums" else None}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"{study.outputs}.json"), "w", encoding="utf-8") as f:
        json.dump(saved, f)
    rel = os.path.relpath(args.work_dir)
    md = [f"# {study.title}", "",
          f"Design: `{saved['design']}`, declared before the runs. Command: `{saved['command']}` (cells under "
          f"`{args.work_dir if rel.startswith('..') else rel}`, resumable). {tables.wall_sentence(invocations)}; the "
          f"cells' own {cell_wall / 60:.1f} min. Rendered on: {saved['machine']} (each invocation's CPU is in its "
          "table).", "", task.describe(study, args, data), "", progress(study, args, data, runs, bases), ""]
    md += task.premise_section(study, data, bases, versus)
    if not judged:
        md += ["**No study cells yet**: no verdict; only the sweep below.", ""]
    else:
        if study.task == "regime":
            plot_map(runs, bases, k, os.path.join(args.out, f"{study.outputs}.png"),
                     f"{study.title}: every arm, rest pass@1 against hard pass@k (95% intervals over seeds, test "
                     "problems)",
                     study.settings, arm_order(study))
            md += [f"![every arm: rest pass@1 against hard pass@{k}]({study.outputs}.png)", ""]
        primary = [r for r in judged if r["primary"]]
        md += ["## Primary contrasts (Holm over the family)", "", summary(judged, study), "",
               tables.verdict_table(primary, study), ""]
        forest = f"{study.outputs}_contrasts.png"
        if study.task != "regime" and plot_contrasts(
                primary, os.path.join(args.out, forest), f"{study.title}: primary contrasts", study.show,
                study.margin if study.tost else None):
            md += [f"![the primary contrasts, 95% intervals over paired seeds]({forest})", ""]
        if checks:
            md += ["## Issue 32's goal (per knob, from the primary cells)", "",
                   markdown_table(["hard_share", "candidate", "criterion", "pp [95% CI]", "seeds", "status"],
                                  saved["goal"]), "",
                   "Closest to the goal (a ranking of the declared criteria made after the runs: each candidate's "
                   "largest shortfall, by how much its 95% bound misses a criterion, 0 where it meets them all):", "",
                   markdown_table(["candidate", "criteria met", "largest shortfall, pp", "where"], saved["closest"]),
                   ""]
        for family, title in (("exploratory", "Exploratory contrasts (uncorrected)"),
                              ("post hoc", "Post hoc contrasts (added after the verdicts were seen; uncorrected)")):
            if family_rows := [r for r in judged if r["family"] == family]:
                md += [f"## {title}", "", tables.verdict_table(family_rows, study), ""]
        if study.beside:
            md += beside(study, args.out, judged)
    for setting in study.settings:
        if any(h == setting for h, _ in bases):
            where = "" if setting is None else f" at {study.knob} = {study.show(setting)}"
            md += [f"## Every arm{where} (mean [95% CI] over seeds)", "",
                   tables.arm_table(runs, bases, setting, arm_order(study), task.arm_columns()), ""]
    if forms := tables.forms_table(study, runs, bases, task.FORMS):
        md += ["## Per-form pass@1 (test problems; the base's and each arm's after training, %)", "", forms, ""]
    if study.per_seed and (seeds := tables.seed_table(study, runs, bases)):
        md += ["## Seed by seed (test problems; pass@1 on q0 %, a trained arm's completion tokens in thousands)", "",
               seeds, ""]
    sweep = study.sweep
    md += ["## Learning-rate sweep (validation problems)", "",
           f"Seeds {list(sweep.seeds)}; rates {list(args.sweep_lrs)}, edge rule "
           f"{sweep.low_edge if sweep.low_edge is not None else '-'} / "
           f"{sweep.high_edge if sweep.high_edge is not None else '-'}; objective for every arm: validation pass@1 + "
           f"pass@{sweep.samples} on q0, ties to the smaller rate.", ""]
    for setting in study.settings:
        if any(r["knob"] == setting for r in rows):
            md += [f"### {study.knob} = {study.show(setting)}" if setting is not None else "", "",
                   tables.sweep_table(rows, data["rates"], setting, study, sweep.samples), ""]
    md += ["## Invocations", "", tables.invocation_table(invocations), ""]
    with open(os.path.join(args.out, f"{study.outputs}.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md))
    return saved

