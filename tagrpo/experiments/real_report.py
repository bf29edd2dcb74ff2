"""real_study.json and real_study.md from the cells of ``studies/real_study.py``: verdicts, arms, mechanism."""

from __future__ import annotations

import json
import math
import os
import sys
from statistics import mean

import numpy as np

from tagrpo.core import pass_at_k
from tagrpo.evaluation.stats import interval, t_test
from tagrpo.evaluation.tables import markdown_table
from tagrpo.evaluation.verdicts import holm_and_verdicts
from tagrpo.experiments import study
from tagrpo.experiments.machine import machine
from tagrpo.experiments.real_study import ARMS, FORM_SAMPLES, STUDY, real_task
from tagrpo.experiments.regime_report import rescue_share
from tagrpo.experiments.report import label, pct
from tagrpo.experiments.verdicts import quarter_mean

REFS = {"equal_sampling": True, "ta_grpo_control": True, "pooled_no_anchor": False, "grpo": False}  # ref: primary


def objective(cell: dict) -> float:
    """The sweep's objective, the same for every arm: validation pass@1 + pass@n on q0."""
    return cell["pass_at_k"]["1"] + cell["pass_at_k"][str(cell["samples"])]


def choose_learning_rates(sweep: list[dict]) -> dict[str, float]:
    rows = [{"arm": c["spec"]["arm"], "learning_rate": c["spec"]["learning_rate"], "seed": c["spec"]["seed"],
             "objective": objective(c)} for c in sweep]
    return study.choose_learning_rates(rows)


def pass_rate(cell: dict, k: int) -> float:
    """A cell's unbiased pass@k, the mean over its questions."""
    counts = np.asarray(cell["counts"])  # (Q,)
    return float(pass_at_k(np.full(len(counts), cell["samples"]), counts, k).mean())


def index(cells: list[dict]) -> tuple[dict, dict]:
    runs, bases = {}, {}
    for c in cells:
        s = c["spec"]
        if s["kind"] == "base":
            bases[s["seed"]] = c
        else:
            runs[(s["seed"], s["arm"])] = c
    return runs, bases


def verdicts(runs: dict, bases: dict, k: int) -> list[dict]:
    """Paired per-seed differences on test q0: TA-GRPO minus each reference (primary: equal-sampling GRPO and the
    control, Holm over the four), and every arm minus the base at pass@1 (exploratory)."""
    rows = []
    seeds = sorted({s for s, a in runs if a == "ta_grpo"})
    for ref, primary in REFS.items():
        for kk in (1, k):
            values = [pass_rate(runs[(s, "ta_grpo")], kk) - pass_rate(runs[(s, ref)], kk)
                      for s in seeds if (s, ref) in runs]
            rows.append({"arm": "ta_grpo", "ref": ref, "k": kk, "kind": "greater", "primary": primary,
                         **interval(values), "values": values, "p": t_test(values)})
    for arm in dict.fromkeys(a for _, a in runs):
        values = [pass_rate(runs[(s, arm)], 1) - pass_rate(bases[s], 1) for s in sorted(bases) if (s, arm) in runs]
        rows.append({"arm": arm, "ref": "base", "k": 1, "kind": "greater", "primary": False, **interval(values),
                     "values": values, "p": t_test(values)})
    return holm_and_verdicts(rows)


def _ci(values: list[float]) -> str:
    values = [v for v in values if v is not None and not math.isnan(v)]
    return pct(interval(values)) if values else "-"


def _plain(values: list[float]) -> str:
    """A mean [95% CI] of unitless values (three decimals)."""
    values = [v for v in values if v is not None and not math.isnan(v)]
    if not values:
        return "-"
    ci = interval(values)
    return f"{ci['mean']:.3f}" + ("" if math.isnan(ci["lo"]) else f" [{ci['lo']:.3f}, {ci['hi']:.3f}]")


def arm_rows(runs: dict, bases: dict, k: int) -> list[list]:
    out = [["base model", len(bases), "-", 0, 0, 0, "-", _ci([pass_rate(b, 1) for b in bases.values()]),
            _ci([pass_rate(b, k) for b in bases.values()]), "-", "-", "-", "-",
            _plain([b.get("diversity_correct") for b in bases.values()])]]
    for arm in dict.fromkeys(a for _, a in runs):
        cs = [c for (_, a), c in sorted(runs.items()) if a == arm]
        out.append([
            label(arm), len(cs), f"{cs[0]['spec']['learning_rate']:g}", f"{mean(c['rollouts'] for c in cs):,.0f}",
            f"{mean(c['optimizer_updates'] for c in cs):,.0f}", f"{mean(c['completion_tokens'] for c in cs):,.0f}",
            f"{mean(c['wall_s'] for c in cs):.0f}", _ci([pass_rate(c, 1) for c in cs]),
            _ci([pass_rate(c, k) for c in cs]),
            f"{100 * mean(max(c['clip_fraction'], default=0) for c in cs):.1f}",
            f"{100 * mean(quarter_mean(c['steps'], 'tagrpo/original/zero_std', False) for c in cs):.0f} -> "
            f"{100 * mean(quarter_mean(c['steps'], 'tagrpo/original/zero_std', True) for c in cs):.0f}",
            f"{100 * mean(rescue_share(c, 'zero') for c in cs):.1f}",
            f"{100 * mean(rescue_share(c, 'one') for c in cs):.1f}",
            _plain([c.get("diversity_correct") for c in cs]),
        ])
    return out


def form_rows(runs: dict, bases: dict, forms: tuple[str, ...]) -> list[list]:
    groups = [("base model", list(bases.values()))]
    arms = dict.fromkeys(a for _, a in runs)
    groups += [(label(a), [c for (_, x), c in sorted(runs.items()) if x == a]) for a in arms]
    return [[name, len(cs), *[_ci([c["forms"][f] for c in cs]) for f in forms]] for name, cs in groups]


def verdict_rows(rows: list[dict]) -> list[list]:
    return [[f"{label(r['arm'])} - {label(r['ref'])}", f"pass@{r['k']}", pct(r, sign=True), r["n"],
             p_text(r["p"]), p_text(r["p_holm"]) if "p_holm" in r else "", f"**{r['verdict']}**"] for r in rows]


def p_text(p: float) -> str:
    """A p-value as a table shows it: two significant digits, "-" where undefined."""
    return "-" if math.isnan(p) else f"{p:.2g}"


def summary(rows: list[dict]) -> str:
    """One plain sentence per primary contrast, from its verdict."""
    say = {"reproduced": "TA-GRPO is better", "refuted": "TA-GRPO is worse",
           "inconclusive": "undecided, neither a difference nor equivalence shown",
           "no difference": "no difference (equivalent within the declared margin)"}

    def evidence(r: dict) -> str:
        if r["n"] < 2:
            return f"{pct(r, sign=True)} pp on one seed: no interval, no test"
        if r["verdict"] == "no difference":
            p = p_text(r["p_equivalence_holm"])
            return f"{pct(r, sign=True)} pp, equivalence test's Holm p {p}, {r['n']} seeds"
        return f"{pct(r, sign=True)} pp, Holm p {p_text(r['p_holm'])}, {r['n']} seeds"

    return " ".join(f"Against {label(r['ref'])} at pass@{r['k']}: {say[r['verdict']]} ({evidence(r)})."
                    for r in rows if r["primary"])


def write(args, premise: dict, q0: str, sweep: list[dict], lrs: dict, cells: list[dict], invocations: list) -> None:

    runs, bases = index(cells)
    k = args.samples
    judged = verdicts(runs, bases, k) if runs and bases else []
    wall = sum(i["wall_s"] for i in invocations)
    argv = invocations[-1]["argv"] if invocations else sys.argv[1:]  # no finished invocation: this rendering's
    saved = {"command": "python studies/real_study.py " + " ".join(argv),
             "machine": machine(), "study": STUDY, "arms": ARMS, "premise": premise, "q0": q0,
             "learning_rates": lrs, "wall_s": wall, "invocations": invocations, "verdicts": judged,
             "sweep": [{"arm": c["spec"]["arm"], "learning_rate": c["spec"]["learning_rate"],
                        "seed": c["spec"]["seed"], "objective": objective(c), "pass_at_k": c["pass_at_k"],
                        "cell_wall_s": c["cell_wall_s"]} for c in sweep],
             "cells": cells}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "real_study.json"), "w", encoding="utf-8") as f:
        json.dump(saved, f)
    sweep_rows = [[label(c["spec"]["arm"]), f"{c['spec']['learning_rate']:g}", c["spec"]["seed"],
                   f"{100 * objective(c):.1f}", f"{100 * c['pass_at_k']['1']:.1f}",
                   "**chosen**" if lrs.get(c["spec"]["arm"]) == c["spec"]["learning_rate"] else ""]
                  for c in sorted(sweep, key=lambda c: (list(ARMS).index(c["spec"]["arm"]),
                                                        c["spec"]["learning_rate"]))]
    seeds = sorted(bases)
    md = [
        "# A real LLM: TA-GRPO against equal-sampling GRPO on SmolLM2-135M-Instruct (issue 20)",
        "",
        f"Command: `{saved['command']}` (cells under `{args.work_dir}`, resumable). Rendered on: {saved['machine']}. "
        + (f"Wall time {wall / 60:.1f} min over {len(invocations)} invocation(s)" if invocations else
         "No invocation has finished yet (this is a rendering of the cached cells), so no wall time")
        + f"; sum of the cells' own {sum(c['cell_wall_s'] for c in cells + sweep) / 60:.1f} min.",
        "",
        f"Task: sums a+b, operands 0..{real_task.SIZE - 1}, problems split train / validation / test "
        f"{'/'.join(str(v) for v in real_task.SPLIT_SIZES.values())} (disjoint). Settings: {STUDY}; "
        f"{args.steps} generation steps; reward `boxed_or_last_number`; evaluation at temperature 0.6, top-p 0.95 "
        + (f"on {len(next(iter(bases.values()))['counts'])} test questions x {k} samples, seeds {seeds}." if bases else
           "on test questions: not run yet."),
        "",
        "## Premise (base model, validation problems)",
        "",
        markdown_table(["form", "accuracy %"], [[f, f"{100 * v:.1f}"] for f, v in premise["accuracy"].items()]),
        "",
        f"q0's form: **{q0}** (the hardest in 10-70%).",
        "",
        "## Verdicts (paired over seeds; primary Holm-corrected, the rest exploratory)",
        "",
        summary(judged) or "No study cells yet.",
        "",
        markdown_table(["contrast", "metric", "mean, pp [95% CI]", "seeds", "p", "p (Holm)", "verdict"],
                       verdict_rows(judged)),
        "",
        "## Every arm (mean [95% CI] over seeds)",
        "",
        markdown_table(["arm", "seeds", "learning rate", "rollouts", "optimizer updates", "completion tokens",
                        "train wall s", "pass@1 %", f"pass@{k} %", "clip fraction % (max)",
                        "q0 uniform %, first -> last quarter", "rescued from all-wrong %", "rescued from all-right %",
                        "embedding diversity, correct"], arm_rows(runs, bases, k)) if bases else "",
        "",
        "Rescue: share of questions per step whose q0 group (G=2) was all wrong / all right and whose pool was "
        "mixed; for equal-sampling GRPO its first 2 of 8 samples against all 8 (the same sample size, no "
        "rephrasing). Embedding diversity: mean pairwise cosine distance (all-MiniLM-L6-v2) among a question's "
        "correct responses, averaged over questions with two or more.",
        "",
        f"## Per-form accuracy after training (test problems x {FORM_SAMPLES} samples per form, q0's form from its "
        f"{k}, %)",
        "",
        markdown_table(["arm", "seeds", *real_task.FORMS], form_rows(runs, bases, real_task.FORMS)) if bases else "",
        "",
        f"## Learning-rate sweep (validation problems, {args.sweep_steps} generation steps; objective pass@1 + "
        f"pass@{args.samples} on q0, the same for every arm; ties to the smaller rate)",
        "",
        markdown_table(["arm", "learning rate", "seed", "objective %", "pass@1 %", ""], sweep_rows),
        "",
    ]
    with open(os.path.join(args.out, "real_study.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md))
