"""real_study_v2.json and real_study_v2.md from the cells of ``studies/real_study_v2.py`` (design: ``real_study_v2``).

Written from whatever cells exist: a partial study renders its sweep, the cells done per phase, and the verdicts
whose both sides have seeds; every invocation's wall time and the cell time it computed are listed.
"""

from __future__ import annotations

import json
import os
import sys
from statistics import mean

from tagrpo.evaluation.stats import equivalence, holm, interval, t_test
from tagrpo.evaluation.tables import markdown_table
from tagrpo.evaluation.verdicts import ALPHA, holm_and_verdicts
from tagrpo.experiments import real_report, real_task, study
from tagrpo.experiments import real_study_v2 as design
from tagrpo.experiments.machine import machine
from tagrpo.experiments.report import label
from tagrpo.experiments.worlds import by_difficulty, plot_by_difficulty, side_by_side

TOY = "toy_regime_v2.json"  # the embedded world's study v2, read from --out for the side-by-side table
PLOT = "real_study_v2_difficulty.png"  # both worlds by difficulty, written into --out


def sweep_rows(cells) -> list[dict]:
    """One row per sweep cell: arm, rate, seed, the objective (the same for every arm) and validation pass@1."""
    return [{"arm": c["spec"]["arm"], "learning_rate": c["spec"]["learning_rate"], "seed": c["spec"]["seed"],
             "objective": real_report.objective(c), "pass1": c["pass_at_k"]["1"], "cell_wall_s": c["cell_wall_s"]}
            for c in cells]


def choose(rows: list[dict]) -> dict[str, float]:
    """Each arm's rate: the best mean objective over the sweep seeds, ties to the smaller rate."""
    return study.choose_learning_rates(rows)


def contrast(runs: dict, bases: dict, arm: str, ref: str, k: int, seeds, primary: bool, subset: str = "all") -> dict:
    """The paired per-seed difference ``arm - ref`` in pass@k on test q0 over the ``seeds`` where both ran (and the
    base, which defines ``subset``: ``study.subset_pass``)."""
    other = {s: bases[s] for s in bases} if ref == "base" else {s: c for (s, a), c in runs.items() if a == ref}

    def rate(cell: dict, s: int) -> float:
        return study.subset_pass(cell["counts"], cell["samples"], bases[s]["counts"], subset, k)

    values = [rate(runs[(s, arm)], s) - rate(other[s], s) for s in seeds
              if (s, arm) in runs and s in other and s in bases]
    return {"arm": arm, "ref": ref, "subset": subset, "k": k, "kind": "greater", "primary": primary,
            **interval(values), "values": values, "p": t_test(values)}


def verdicts(runs: dict, bases: dict) -> list[dict]:
    """The primary family on ``SEEDS`` (Holm-corrected together; an undecided one is "no difference" when its TOST
    at +-``EQUIVALENCE_MARGIN``, Holm over the four, rejects) and the exploratory contrasts on ``EXPLORATORY_SEEDS``
    (arm against base: on every seed both have), then the post hoc subset contrasts (``design.subset_contrasts``,
    uncorrected, on ``SEEDS``)."""
    rows = [contrast(runs, bases, a, r, k, design.SEEDS, True) for a, r, k in design.primary_contrasts()]
    for a, r, k in design.exploratory_contrasts():
        seeds = design.SEEDS if r == "base" else design.EXPLORATORY_SEEDS
        rows.append(contrast(runs, bases, a, r, k, seeds, False))
    rows += [contrast(runs, bases, a, r, k, design.SEEDS, False, subset)
             for a, r, subset, k in design.subset_contrasts()]
    rows = holm_and_verdicts(rows)
    primary = [r for r in rows if r["primary"]]
    tost = holm([equivalence(r["values"], design.EQUIVALENCE_MARGIN)["p"] for r in primary])
    for r, p in zip(primary, tost, strict=True):
        r["p_equivalence_holm"] = p
        if r["verdict"] == "inconclusive" and p < ALPHA:
            r["verdict"] = "no difference"
    return rows


def sweep_table(rows: list[dict], rates: dict[str, float]) -> str:
    out = []
    for arm in dict.fromkeys(r["arm"] for r in rows):
        for lr in sorted({r["learning_rate"] for r in rows if r["arm"] == arm}):
            rs = [r for r in rows if r["arm"] == arm and r["learning_rate"] == lr]
            out.append([label(arm), f"{lr:g}", len(rs), f"{100 * mean(r['objective'] for r in rs):.1f}",
                        f"{100 * mean(r['pass1'] for r in rs):.1f}", "**chosen**" if rates.get(arm) == lr else ""])
    return markdown_table(["arm", "learning rate", "seeds", f"objective (pass@1 + pass@{design.EVAL_SAMPLES}), %",
                           "validation pass@1 %", ""], out)


def invocation_table(invocations: list[dict]) -> str:
    """One row per invocation; one not finished (killed with its session, or still running) counts to its last
    cell."""
    rows = [[i + 1, inv.get("started", "-")[:19], "`" + " ".join(inv["argv"]) + "`", inv["workers"],
             f"{inv['wall_s'] / 60:.1f}", inv.get("cells_run", "-"),
             f"{inv['cell_s'] / 60:.1f}" if "cell_s" in inv else "-", inv.get("machine", {}).get("cpu", "not recorded"),
             ended(inv)]
            for i, inv in enumerate(invocations)]
    return markdown_table(["invocation", "started (UTC)", "arguments", "workers", "wall min", "cells computed",
                           "their cell min", "CPU", "ended"], rows)


def ended(invocation: dict) -> str:
    """How an invocation ended: finished, or not (stopped or still running: its wall time runs to its last cell)."""
    how = "finished" if invocation.get("finished", True) else "not finished (stopped or running); wall to its last cell"
    return how + (f" ({invocation['source']})" if "source" in invocation else "")


def wall_sentence(invocations: list[dict]) -> str:
    if not invocations:
        return "No invocation recorded yet, so no wall time"
    stopped = sum(not i.get("finished", True) for i in invocations)
    return (f"Wall time {sum(i['wall_s'] for i in invocations) / 60:.1f} min over {len(invocations)} invocation(s)"
            + (f", {stopped} of them not finished (stopped or still running) and counted to their last cell" if stopped
               else ""))


def progress(args, sweep: list[dict], cells: list[dict]) -> str:
    """Cells done per phase against the declared design."""
    runs, bases = real_report.index(cells)
    declared = len(args.arms) * len(args.sweep_lrs) * len(design.SWEEP_SEEDS)
    primary = [a for a in design.PRIMARY_ARMS if a in args.arms]
    exploratory = [a for a in design.EXPLORATORY_ARMS if a in args.arms]
    return (f"Cells done: sweep {len(sweep)} (grid {declared}, plus the edge rule's); base {len(bases)} of "
            f"{len(args.seeds)}; primary arms {sum(a in primary for _, a in runs)} of {len(primary) * len(args.seeds)};"
            f" exploratory arms {sum(a in exploratory for _, a in runs)} of "
            f"{len(exploratory) * len(args.exploratory_seeds)}.")


def verdict_rows(judged: list[dict]) -> list[list]:
    """The first study's verdict rows with the TOST p-value (Holm over the primary four) before the verdict."""
    return [[*row[:-1], real_report.p_text(r["p_equivalence_holm"]) if "p_equivalence_holm" in r else "", row[-1]]
            for r, row in zip(judged, real_report.verdict_rows(judged), strict=True)]


def beside_the_toy(out: str, judged: list[dict]) -> tuple[str, str]:
    """The side-by-side table and the by-difficulty table (with its plot, ``PLOT`` in ``out``) of the embedded
    world's study v2 (``TOY`` in ``out``) and this study's ``judged`` rows; each says why when ``TOY`` is missing."""
    path = os.path.join(out, TOY)
    if not os.path.exists(path):
        missing = f"No `{TOY}` in `{out}`: run `python studies/toy_regime_v2.py --render-only` there."
        return missing, missing
    with open(path, encoding="utf-8") as f:
        toy = json.load(f)["verdicts"]
    name = "SmolLM2-135M, q0's form (this study)"
    split = by_difficulty(toy, judged, name, design.EVAL_SAMPLES)
    if plot_by_difficulty(toy, judged, "SmolLM2-135M,\nsums (post hoc)", design.EVAL_SAMPLES,
                          os.path.join(out, PLOT)):
        split += f"\n\n![TA-GRPO minus equal-sampling GRPO by difficulty, both worlds]({PLOT})"
    return side_by_side(toy, judged, name, design.EVAL_SAMPLES), split


def write(args, premise: dict, q0: str, sweep: list[dict], rates: dict, cells: list[dict], invocations: list) -> None:
    runs, bases = real_report.index(cells)
    k = args.samples
    judged = verdicts(runs, bases) if runs and bases else []
    together, split = beside_the_toy(args.out, judged)
    wall = sum(i["wall_s"] for i in invocations)
    argv = invocations[-1]["argv"] if invocations else sys.argv[1:]
    rows = sweep_rows(sweep)
    saved = {"command": "python studies/real_study_v2.py " + " ".join(argv), "machine": machine(),
             "study": design.STUDY, "arms": design.ARMS, "issue32_variant": design.ISSUE32_VARIANT,
             "premise": premise, "q0": q0, "learning_rates": rates, "wall_s": wall, "invocations": invocations,
             "verdicts": judged, "sweep": rows, "cells": cells}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "real_study_v2.json"), "w", encoding="utf-8") as f:
        json.dump(saved, f)
    cell_min = sum(c["cell_wall_s"] for c in [premise, *cells, *sweep]) / 60
    rel = os.path.relpath(args.work_dir)
    where = args.work_dir if rel.startswith("..") else rel
    md = [
        "# A real LLM, second version: TA-GRPO on SmolLM2-135M-Instruct, clean splits, 10 seeds (issue 33)",
        "",
        f"Command: `{saved['command']}` (cells under `{where}`, resumable). Rendered on: {saved['machine']} "
        "(each invocation's CPU is in its table). "
        + wall_sentence(invocations) + f"; sum of the cells' own {cell_min:.1f} min.",
        "",
        progress(args, sweep, cells),
        "",
        f"Task: sums a+b, operands 0..{real_task.SIZE - 1}, split by unordered pair (a sum and its swap in one "
        f"split; pairs train / validation / test {'/'.join(str(v) for v in real_task.PAIR_SPLIT_SIZES.values())}), "
        f"the prompts' worked examples {list(real_task.EXAMPLES)} in no split. Settings: {design.STUDY}; "
        f"{args.steps} generation steps; design in `tagrpo/experiments/real_study_v2.py`. Issue 32's variant: "
        f"`{design.ISSUE32_VARIANT}`.",
        "",
        "## Premise (base model, validation problems)",
        "",
        markdown_table(["form", "accuracy %"], [[f, f"{100 * v:.1f}"] for f, v in premise["accuracy"].items()]),
        "",
        f"q0's form: **{q0}** (the hardest in 10-70%).",
        "",
        "## Verdicts (paired over seeds; primary Holm-corrected over its four, the rest exploratory)",
        "",
        real_report.summary(judged) or "No study cells yet.",
        "",
        markdown_table(["contrast", "metric", "mean, pp [95% CI]", "seeds", "p", "p (Holm)",
                        f"TOST +-{100 * design.EQUIVALENCE_MARGIN:g} pp, p (Holm)", "verdict"], verdict_rows(
                           [r for r in judged if r["subset"] == "all"])),
        "",
        "## Beside the embedded world (the same contrasts; each Holm-corrected within its own study)",
        "",
        together,
        "",
        "## By difficulty, beside the embedded world (post hoc on the real model)",
        "",
        f"Hard: test questions the same seed's base model got 0 of its {k} samples right on q0 (the embedded world's "
        "definition); rest: the others. The real model's rows were added after its primary verdicts "
        "(`subset_contrasts`, uncorrected); the embedded world's hard rows are its primary contrasts (Holm), its rest "
        "rows exploratory (uncorrected).",
        "",
        split,
        "",
        "## Every arm (mean [95% CI] over seeds)",
        "",
        markdown_table(["arm", "seeds", "learning rate", "rollouts", "optimizer updates", "completion tokens",
                        "train wall s", "pass@1 %", f"pass@{k} %", "clip fraction % (max)",
                        "q0 uniform %, first -> last quarter", "rescued from all-wrong %", "rescued from all-right %",
                        "embedding diversity, correct"], real_report.arm_rows(runs, bases, k)) if bases else "",
        "",
        f"## Per-form accuracy after training (test problems x {design.FORM_SAMPLES} samples per form, q0's form "
        f"from its {k}, %)",
        "",
        markdown_table(["arm", "seeds", *real_task.FORMS],
                       real_report.form_rows(runs, bases, real_task.FORMS)) if bases else "",
        "",
        f"## Learning-rate sweep (validation problems, seeds {list(design.SWEEP_SEEDS)}, {args.steps} generation "
        f"steps; one objective for every arm, ties to the smaller rate; edge rule {design.LOW_EDGE_LR:g} / "
        f"{design.HIGH_EDGE_LR:g})",
        "",
        sweep_table(rows, rates),
        "",
        "## Invocations",
        "",
        invocation_table(invocations),
        "",
    ]
    with open(os.path.join(args.out, "real_study_v2.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md))
