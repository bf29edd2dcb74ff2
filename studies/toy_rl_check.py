"""Does RL work in the regime world at all? Plain GRPO at 8x the study's budget, against the base, every knob.

Command (what produced studies/results/toy_rl_check.*):

    .venv/bin/python studies/toy_rl_check.py --workers 2

Declared after the first regime study (on the first base, without the slip: ``tagrpo/toy/regime_base.py``) found
GRPO and GRPO-long flat on the questions the base can solve at the preset's 12 generation steps. This check asks
the world, not the comparison: plain GRPO (G=4) for ``study.RL_CHECK_STEPS`` generation steps, two
optimizer steps each, its learning rate the best validation pass@1 at h = ``study.RL_CHECK_SWEEP_KNOB`` over
``study.RL_CHECK_LRS`` and the sweep seeds, then the study's ten seeds at every knob on the study's test questions.
Condition (``study.gain_condition``): pass@1 on the rest (held-out questions the base solves at least once on q0)
above the base, 95% interval's lower bound > 0. Also overall pass@1 and pass@64 against the base.

The cells share ``--work-dir`` with the regime study (its test base cells are reused, bit for bit the same spec);
cached per cell, resumable. Writes ``toy_rl_check.json`` and ``toy_rl_check.md`` into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from statistics import mean

from tagrpo.data.jsonl import read_jsonl
from tagrpo.evaluation.stats import interval
from tagrpo.evaluation.tables import markdown_table
from tagrpo.experiments import study
from tagrpo.experiments.cells import Invocation, finished, run_all
from tagrpo.experiments.machine import machine
from tagrpo.experiments.regime_cells import cell_path, compute
from tagrpo.experiments.report import pct
from tagrpo.toy.regime_base import recipe_id

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def _spec(args, kind: str, knob: float, seed: int, split: str, lr: float | None = None) -> tuple[dict, str]:
    samples = study.SWEEP_SAMPLES if split == "validation" else args.samples
    spec = {"kind": kind, "knob": knob, "seed": seed, "split": split, "samples": samples,
            "forms": kind == "base" and split == "test", **args.overrides}
    if kind == "arm":
        spec.update(arm="grpo", learning_rate=lr, rl_steps=args.steps)
    return spec, cell_path(args.work_dir, spec)


def _pc(x: float) -> str:
    return f"{100 * x:.1f}"


def sweep_specs(args) -> list[tuple[dict, str]]:
    out = [_spec(args, "base", study.RL_CHECK_SWEEP_KNOB, s, "validation") for s in study.SWEEP_SEEDS]
    return out + [_spec(args, "arm", study.RL_CHECK_SWEEP_KNOB, s, "validation", lr)
                  for lr in args.lrs for s in study.SWEEP_SEEDS]


def test_specs(args, lr: float) -> list[tuple[dict, str]]:
    return [_spec(args, kind, knob, seed, "test", lr if kind == "arm" else None)
            for seed in args.seeds for knob in study.KNOBS for kind in ("base", "arm")]


def choose(sweep: dict[str, dict]) -> tuple[float, list[list]]:
    """The rate with the best mean validation pass@1 (ties to the smaller), and the sweep's table rows."""
    by_lr: dict[float, list[dict]] = {}
    for r in sweep.values():
        if r["spec"]["kind"] == "arm":
            by_lr.setdefault(r["spec"]["learning_rate"], []).append(r)
    score = {lr: mean(r["pass_at_k"]["1"] for r in rs) for lr, rs in by_lr.items()}
    best = max(score, key=lambda lr: (score[lr], -lr))
    bases = [r for r in sweep.values() if r["spec"]["kind"] == "base"]
    k = str(study.SWEEP_SAMPLES)
    rows = [["base model", "-", len(bases), _pc(mean(b["pass_at_k"]["1"] for b in bases)),
             _pc(mean(b["pass_at_k"][k] for b in bases)), ""]]
    rows += [["GRPO", f"{lr:g}", len(rs), _pc(score[lr]), _pc(mean(r["pass_at_k"][k] for r in rs)),
              "**chosen**" if lr == best else ""] for lr, rs in sorted(by_lr.items())]
    return best, rows


def knob_rows(cells: dict[str, dict], k: int) -> tuple[list[list], list[dict]]:
    runs, bases = {}, {}
    for c in cells.values():
        s = c["spec"]
        if s["kind"] == "base":
            bases[(s["knob"], s["seed"])] = c
        else:
            runs[(s["knob"], s["seed"], "grpo")] = c
    rows, conds = [], []
    for knob in study.KNOBS:
        cs = [c for (h, _, _), c in runs.items() if h == knob]
        if not cs:
            continue
        cond = study.gain_condition(runs, bases, knob, "grpo")
        conds.append(cond)

        def diff(subset, kk, knob=knob):
            return interval(study.paired_values(runs, bases, study.Contrast(knob, "grpo", "base", subset, kk)))

        base_rest = [study.subset_pass(b["counts"], b["samples"], b["counts"], "rest", 1)
                     for (h, _), b in bases.items() if h == knob]
        rows.append([f"{knob:g}", len(cs), f"{mean(c['rollouts'] for c in cs):,.0f}",
                     f"{mean(c['optimizer_updates'] for c in cs):,.0f}",
                     f"{mean(c['completion_tokens'] for c in cs):,.0f}", f"{mean(c['wall_s'] for c in cs):.0f}",
                     _pc(mean(base_rest)), pct(cond, sign=True), cond["status"], pct(diff("all", 1), sign=True),
                     pct(diff("all", k), sign=True)])
    return rows, conds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--work-dir", default="outputs/toy_regime", help="shared with studies/toy_regime.py")
    parser.add_argument("--out", default=RESULTS)
    parser.add_argument("--samples", type=int, default=64, help="samples per held-out test question (largest k)")
    parser.add_argument("--steps", type=int, default=study.RL_CHECK_STEPS, help="GRPO's generation steps")
    parser.add_argument("--lrs", type=float, nargs="+", default=list(study.RL_CHECK_LRS))
    parser.add_argument("--seeds", type=int, nargs="+", default=list(study.SEEDS))
    parser.add_argument("--questions", type=int, default=None, help="held-out questions (a smoke test only)")
    parser.add_argument("--render-only", action="store_true")
    args = parser.parse_args()
    args.overrides = {"questions": args.questions} if args.questions else {}
    args.overrides["base_recipe"] = recipe_id()  # the shipped base's: cells of another base are not reused
    log = os.path.join(args.work_dir, "rl_check_invocations.jsonl")
    invocation = Invocation(log, sys.argv[1:], args.workers, record=not args.render_only)
    specs = sweep_specs(args)
    sweep = finished(specs) if args.render_only else run_all(specs, args.workers, "sweep", compute,
                                                             on_cell=invocation.landed)
    if not sweep:
        raise SystemExit(f"no sweep cells under {args.work_dir}: run without --render-only first")
    lr, sweep_rows = choose(sweep)
    print(f"GRPO's learning rate from the validation sweep: {lr:g}", flush=True)
    specs = test_specs(args, lr)
    cells = finished(specs) if args.render_only else run_all(specs, args.workers, "check", compute,
                                                             on_cell=invocation.landed)
    invocation.finish()
    invocations = read_jsonl(log)
    wall = sum(r["wall_s"] for r in invocations)
    ran = [c for c in [*sweep.values(), *cells.values()] if c["spec"]["kind"] == "arm" or
               c["spec"]["split"] == "validation"]  # the test base cells are the regime study's
    cell_wall = sum(c["cell_wall_s"] for c in ran)
    argv = invocations[-1]["argv"] if invocations else sys.argv[1:]  # the invocation that trained the cells
    command = "python studies/toy_rl_check.py " + " ".join(argv)
    if args.render_only:
        command += "`, redrawn by `python studies/toy_rl_check.py --render-only"
    rows, conds = knob_rows(cells, args.samples)
    saved = {"command": command, "machine": machine(), "wall_s": wall, "cell_wall_s": cell_wall,
             "learning_rate": lr, "sweep": sweep_rows, "rows": rows, "conditions": conds,
             "cells": [{k: v for k, v in c.items() if k not in ("curve", "steps")} for c in cells.values()]}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "toy_rl_check.json"), "w", encoding="utf-8") as f:
        json.dump(saved, f)
    met = sum(c["status"] == "met" for c in conds)
    md = [
        "# Does RL work in the regime world? Plain GRPO at 8x the study's budget (issue 19)",
        "",
        f"Command: `{saved['command']}` (cells under `{args.work_dir}`, shared with the regime study). Machine: "
        f"{saved['machine']}. Wall time {wall / 60:.1f} min over the logged invocations that trained cells; the "
        f"cells this check ran (its sweep and GRPO cells) took {cell_wall / 60:.1f} min of their own wall time, 2 "
        "at a time.",
        "",
        f"Base: the shipped regime checkpoint, recipe {args.overrides['base_recipe']}. Plain GRPO, G=4, "
        f"{args.steps} generation steps x 8 of 64 training questions, two optimizer steps each, no "
        f"KL; learning rate {lr:g}, the best validation pass@1 at h={study.RL_CHECK_SWEEP_KNOB:g} "
        f"(seeds {list(study.SWEEP_SEEDS)}, {study.SWEEP_SAMPLES} samples per question). Test: the regime study's "
        f"held-out questions and base cells, {args.samples} samples each, seeds {args.seeds}. Declared in "
        "`tagrpo/experiments/study.py` (RL_CHECK_*) after the study, not part of its primary family.",
        "",
        "## Sweep (validation, h=0)",
        "",
        markdown_table(["arm", "learning rate", "seeds", "pass@1 %", f"pass@{study.SWEEP_SAMPLES} %", ""], sweep_rows),
        "",
        "## GRPO against the base, paired over seeds (mean [95% CI])",
        "",
        markdown_table(["hard_share", "seeds", "rollouts", "optimizer updates", "completion tokens",
                        "wall s (1 thread)", "base rest pass@1 %", "rest pass@1 gain, pp", "RL works (lower bound > 0)",
                        "all pass@1 gain, pp", f"all pass@{args.samples} change, pp"], rows),
        "",
        f"RL works at {met} of {len(conds)} settings by the issue's condition.",
        "",
    ]
    with open(os.path.join(args.out, "toy_rl_check.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md))


if __name__ == "__main__":
    main()
