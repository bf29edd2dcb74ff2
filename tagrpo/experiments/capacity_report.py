"""The capacity point's base (built and recorded) and its report: toy_capacity.json, .md and .png from the cells of
``studies/toy_capacity.py`` (design: ``study_capacity``), with study v2's cells at the same knob beside them."""

from __future__ import annotations

import glob
import hashlib
import json
import math
import os
import time
from statistics import mean

from tagrpo.data.jsonl import read_jsonl
from tagrpo.evaluation.stats import interval, t_test, welch
from tagrpo.evaluation.tables import markdown_table
from tagrpo.evaluation.verdicts import holm_and_verdicts
from tagrpo.experiments import study
from tagrpo.experiments import study_capacity as design
from tagrpo.experiments.machine import machine
from tagrpo.experiments.regime_report import arm_table, index, verdict_table
from tagrpo.experiments.regime_v2_report import (
    ARM_ORDER,
    goal,
    goal_checks,
    plot_map,
    sweep_rows,
    sweep_table,
    with_weighted,
)
from tagrpo.experiments.report import pct
from tagrpo.toy.regime import FORMS

FORMS_SHOWN = (*FORMS, "renamed")


COST_SAYS = {"reproduced": "the cost shrinks on the 4x base (Holm)",
             "refuted": "the cost grows on the 4x base (Holm)",
             "inconclusive": "no change shown (Holm); the interval is what the seeds can exclude"}


def build_base(args) -> dict:
    """The 4x base in ``args.base_dir`` (pretrained unless its marker matches), recorded in ``base.json`` under
    ``args.work_dir``: directory, recipe id, SHA-256 of the weights, parameter count, pretraining wall time. A
    rebuild whose SHA-256 differs from the record is said so (its cells are new: the SHA keys them). With
    ``args.render_only`` the record is read and nothing is built."""
    from tagrpo.toy.regime_base import RegimePretrainConfig, pretrain_regime_base, recipe_id

    record_path = os.path.join(args.work_dir, "base.json")
    old = read_jsonl(record_path)
    if args.render_only:
        if not old:
            raise SystemExit(f"{record_path}: no base record; run the study first")
        return old[-1]
    steps = {"steps": args.base_steps} if args.base_steps else {}
    cfg = RegimePretrainConfig(output_dir=args.base_dir, **design.BASE, **steps)
    start = time.perf_counter()
    path = pretrain_regime_base(cfg)
    wall = time.perf_counter() - start
    with open(os.path.join(path, "model.safetensors"), "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    from transformers import AutoModelForCausalLM

    params = sum(p.numel() for p in AutoModelForCausalLM.from_pretrained(path).parameters())
    record = {"dir": args.base_dir, "recipe": recipe_id(cfg), "sha256": sha, "parameters": params,
              "hidden_size": config["hidden_size"], "num_layers": config["num_hidden_layers"],
              "pretrain_wall_s": wall if old == [] or old[-1]["sha256"] != sha else old[-1]["pretrain_wall_s"]}
    if old and old[-1]["sha256"] != sha:
        print(f"the rebuilt base's SHA-256 {sha[:12]} differs from the record's {old[-1]['sha256'][:12]}: "
              "its cells are computed anew", flush=True)
    if not old or old[-1] != record:
        os.makedirs(args.work_dir, exist_ok=True)
        with open(record_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
    return record


def v2_cells(work: str) -> tuple[dict, dict]:
    """Study v2's test cells at the capacity knob (base, TA-GRPO, equal-sampling GRPO): ``(runs, bases)``."""
    pattern = os.path.join(work, "test", f"h{design.KNOB:g}", "seed*", "*", "result.jsonl")
    keep = ("base", "ta_grpo_lr", "equal_sampling_lr")
    cells = [r for p in sorted(glob.glob(pattern)) if os.path.basename(os.path.dirname(p)).startswith(keep)
             for r in read_jsonl(p)[:1]]
    return index(cells)


def cost_change(runs: dict, bases: dict, small_runs: dict, small_bases: dict) -> dict:
    """Welch on the per-seed ``TA-GRPO - equal-sampling`` rest pass@1 differences: this base's minus v2's."""
    c = study.Contrast(design.KNOB, "ta_grpo", "equal_sampling", "rest", 1)
    here, small = study.paired_values(runs, bases, c), study.paired_values(small_runs, small_bases, c)
    return {**welch(here, small), "values": here, "small_values": small, "small": interval(small)}


def judge(runs: dict, bases: dict, small: tuple[dict, dict], k: int) -> list[dict]:
    rows = []
    for c in design.primary_contrasts(k):
        if c.ref == design.COST:
            r = cost_change(runs, bases, *small)
        else:
            values = study.paired_values(runs, bases, c)
            r = {**interval(values), "values": values,
                 "p": t_test(values, -study.EQUIVALENCE_MARGIN if c.kind == "matches" else 0.0)}
        rows.append({**c.__dict__, "text": c.text, **r, "family": "primary"})
    return holm_and_verdicts(rows)


def premise_rows(bases: dict, label_: str) -> list[list]:
    """The base on its held-out q0 questions (the share it never solves, pass@1 on the rest) and per form its
    pass@1 on the premise's problems: mean and t interval over the seeds measured."""
    bs = list(bases.values())
    if not bs:
        return []
    out = [[label_, len(bs), "q0, share never solved (hard)",
            pct(interval([float(study.hard_mask(b["counts"]).mean()) for b in bs]))],
           [label_, len(bs), "q0, pass@1 on the rest",
            pct(interval([x for b in bs if not math.isnan(x := study.subset_pass(b["counts"], b["samples"],
                                                                                    b["counts"], "rest", 1))]))]]
    with_forms = [b for b in bs if b.get("forms")]
    out += [[label_, len(with_forms), form, pct(interval([b["forms"][form] for b in with_forms]))]
            for form in FORMS_SHOWN if with_forms and form in with_forms[0]["forms"]]
    return [[*r[:3], "-" if "nan" in r[3] else r[3]] for r in out]


def _shown(ci: dict) -> str:
    return "-" if math.isnan(ci["mean"]) else pct(ci, sign=True)


def write(args, base: dict, sweep: list[dict], rates: dict, cells: list[dict], invocations: list[dict]) -> None:
    rows = sweep_rows(sweep)
    runs, bases = index(cells)
    runs = with_weighted(runs, rates)
    small = v2_cells(args.v2_work_dir)
    k = max((c["samples"] for c in cells), default=args.samples)
    verdicts = judge(runs, bases, small, k) if cells else []
    checks = goal_checks(runs, bases, k) if cells else []
    goals = [g for g in goal(checks, len(design.SEEDS)) if g[0] == f"{design.KNOB:g}"]
    cell_wall = sum(c["cell_wall_s"] for c in cells) + sum(r["cell_wall_s"] for r in rows)
    wall = sum(i["wall_s"] for i in invocations)
    saved = {"design": "tagrpo/experiments/study_capacity.py", "machine": machine(), "base": base,
             "invocations": invocations, "wall_s": wall, "cell_wall_s": cell_wall,
             "learning_rates": rates.get(design.KNOB, {}), "sweep": rows, "verdicts": verdicts, "goal": goals,
             "cells": len(cells), "v2_seeds": sorted({s for _, s, _ in small[0]})}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "toy_capacity.json"), "w", encoding="utf-8") as f:
        json.dump(saved, f)
    arm_walls = [r["cell_wall_s"] for r in rows if r["arm"] != "base"]
    md = ["# The capacity point (issue 32, item 3)", "",
          f"Design: `tagrpo/experiments/study_capacity.py`, declared before the runs. Command: `python "
          f"studies/toy_capacity.py --workers 2`. Base: the regime recipe at hidden size {base['hidden_size']} "
          f"({base['num_layers']} layers), {base['parameters']:,} parameters (the shipped base: 0.96M), SHA-256 "
          f"`{base['sha256']}`, pretrained in {base['pretrain_wall_s'] / 60:.1f} min on one thread into "
          f"`{base['dir']}` (not committed; the command rebuilds it). Wall time {wall / 60:.1f} min over "
          f"{len(invocations)} invocation(s); cells' own {cell_wall / 60:.1f} min"
          + (f" (a sweep cell {mean(arm_walls):.0f} s on average)" if arm_walls else "") + f". Rendered on: "
          f"{saved['machine']}.", "", f"Progress: {len(rows)} sweep cells, {len(cells)} study cells on disk."]
    md += ["", "## The base's premise (test problems)", "",
           markdown_table(["base", "seeds", "measure", "% [95% CI]"],
                          premise_rows(bases, "4x") + premise_rows(small[1], "shipped (v2)"))]
    if cells:
        plot_map(runs, bases, k, os.path.join(args.out, "toy_capacity.png"),
                 f"The 4x base at hard_share {design.KNOB:g}: rest pass@1 against hard pass@{k} (95% intervals)")
        cost = next(r for r in verdicts if r["ref"] == design.COST)
        md += ["", "![the 4x base](toy_capacity.png)", "", "## Primary contrasts (Holm over the family)", "",
               verdict_table(verdicts), "",
               f"The cost change: TA-GRPO minus equal-sampling GRPO on the rest at pass@1 is "
               f"{_shown(interval(cost['values']))} pp on the 4x base ({len(cost['values'])} seeds) and "
               f"{_shown(cost['small'])} pp on the shipped base ({len(cost['small_values'])} seeds of v2); the "
               f"difference, 4x minus shipped (Welch, unpaired), is {_shown(cost)} pp (above 0: the cost shrinks "
               f"with capacity): {COST_SAYS[cost['verdict']]}.",
               "", "## Issue 32's goal on the 4x base", "",
               markdown_table(["hard_share", "candidate", "criterion", "pp [95% CI]", "seeds", "status"], goals),
               "", "## Every arm", "", arm_table(runs, bases, design.KNOB, ARM_ORDER)]
    if rows:
        md += ["", "## Learning-rate sweep (validation problems)", "", sweep_table(rows, rates, design.KNOB)]
    with open(os.path.join(args.out, "toy_capacity.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md) + "\n")
