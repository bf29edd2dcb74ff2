"""The embedded regime world as a study's task: a cell is a demo run of one arm (``tagrpo.demo.config``) at one
share of hard questions (the setting, ``knob``), seed and rate, or the base model's evaluation; with ``forms`` the
model's pass@1 in every form of the premise's questions too.

``task_options``: ``base`` (``RegimePretrainConfig`` fields, e.g. ``{"hidden_size": 328}``): the study's base is
pretrained bit for bit with them into ``args.base_dir`` (not committed), recorded in ``base.json`` under the work
directory (directory, recipe id, SHA-256 of the weights, parameter count, pretraining wall time), and its recipe
and SHA-256 key every cell; without it, the shipped base (its recipe id keys the cells).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import time

from tagrpo.data.jsonl import read_jsonl
from tagrpo.toy.regime import FORMS as REGIME_FORMS

FORMS = (*REGIME_FORMS, "renamed")  # the premise's forms: q0 is "spelled"; "renamed" is the control's rephrasing
KNOB_NAME = "hard_share"


def cell_path(work: str, spec: dict) -> str:
    name = "base" if spec["kind"] == "base" else f"{spec['arm']}_lr{spec['learning_rate']:g}"
    if spec["kind"] != "base" and spec.get("rl_steps"):
        name += f"_steps{spec['rl_steps']}"  # a longer run than the preset's, or a smoke test's
    root = os.path.join(work, os.path.basename(spec["base"].rstrip("/"))) if spec.get("base") else work
    return os.path.join(root, spec["split"], f"h{spec['knob']:g}", f"seed{spec['seed']}", name, "result.jsonl")


def prepare(study, args) -> tuple[dict, dict | None]:
    """``(overrides, record)``: what enters every cell's spec (the smoke tests' step and question counts, the base's
    recipe id and, for a study's own base, its directory and SHA-256), and the base's record (None: the shipped
    base)."""
    from tagrpo.toy.regime_base import recipe_id

    overrides = {k: v for k, v in (("rl_steps", args.rl_steps), ("questions", args.questions)) if v}
    if "base" not in study.task_options:
        return {**overrides, "base_recipe": recipe_id()}, None
    record = build_base(study.task_options["base"], args)
    own = {"base": args.base_dir, "base_recipe": record["recipe"], "base_sha256": record["sha256"]}
    return {**overrides, **own}, record


def build_base(fields: dict, args) -> dict:
    """The study's base in ``args.base_dir`` (pretrained unless its marker matches), recorded in ``base.json`` under
    ``args.work_dir``. A rebuild whose SHA-256 differs from the record is said so (its cells are new: the SHA keys
    them). With ``args.render_only`` the record is read and nothing is built."""
    from tagrpo.toy.regime_base import RegimePretrainConfig, pretrain_regime_base, recipe_id

    record_path = os.path.join(args.work_dir, "base.json")
    old = read_jsonl(record_path)
    if args.render_only:
        if not old:
            raise SystemExit(f"{record_path}: no base record; run the study first")
        return old[-1]
    steps = {"steps": args.base_steps} if args.base_steps else {}
    cfg = RegimePretrainConfig(output_dir=args.base_dir, **fields, **steps)
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


def cell(study, args, kind: str, split: str, setting: float, seed: int, arm: str | None = None,
         lr: float | None = None, forms: bool = False, q0: str | None = None) -> tuple[dict, str]:
    """One cell ``(spec, path)``: validation cells draw ``study.sweep.samples`` per question, test cells
    ``args.samples``; ``args.overrides`` enter the spec, so a result is never reused for other settings."""
    samples = study.sweep.samples if split == "validation" else args.samples
    spec = {"kind": kind, "knob": setting, "seed": seed, "split": split, "samples": samples, "forms": forms,
            **args.overrides}
    if arm:
        spec.update(arm=arm, learning_rate=lr)
    return spec, cell_path(args.work_dir, spec)


def premise_cells(study, args) -> list:
    """The regime world has no premise phase (q0 is its spelled form)."""
    return []


def q0_of(study, premises: list[dict], render_only: bool = False) -> tuple[None, str]:
    return None, "spelled"


def config(spec: dict, out: str):
    from tagrpo.demo.config import DemoConfig

    return DemoConfig(
        output_dir=out, world="regime", hard_share=spec["knob"], preset="regime", seed=spec["seed"],
        arms=spec.get("arm") or "grpo", learning_rate=spec.get("learning_rate", 0.0), learning_rates="",
        held_out_split=spec["split"], eval_samples=spec["samples"], rl_steps=spec.get("rl_steps"),
        eval_questions=spec.get("questions"),
    )


def compute(spec: dict, out: str) -> dict:
    """One cell (a module-level function: the process pool's workers import it)."""
    import logging

    import transformers
    from rich.console import Console
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tagrpo.demo.config import PREMISE_QUESTIONS, held_out_rows
    from tagrpo.demo.run import evaluate, premise, train_arm
    from tagrpo.toy.worlds import resolve_world_base

    transformers.utils.logging.disable_progress_bar()
    logging.getLogger("tagrpo.trainer.run").setLevel(logging.WARNING)
    start = time.perf_counter()
    cfg, console = config(spec, out), Console(file=sys.stdout, width=120)
    forms_questions = spec.get("questions") or PREMISE_QUESTIONS  # a smoke test's override shrinks the premise too
    base = resolve_world_base("regime", spec.get("base"), os.path.join(out, "base_model"), console)
    held_out = held_out_rows(cfg)
    tokenizer = AutoTokenizer.from_pretrained(base)
    if spec["kind"] == "base":
        model = AutoModelForCausalLM.from_pretrained(base)
        result = evaluate(model, tokenizer, held_out, cfg.eval_samples, cfg.max_completion_length, cfg.seed)
        result["forms"] = premise(model, tokenizer, cfg, forms_questions) if spec["forms"] else None
        result["hard"] = [bool(r["hard"]) for r in held_out]
    else:
        after = (lambda m, t: premise(m, t, cfg, forms_questions)) if spec["forms"] else None
        result = train_arm(spec["arm"], cfg, base, held_out, console, after=after)
        result.pop("example", None)
    return {"spec": spec, **result, "cell_wall_s": time.perf_counter() - start}


def _uniform_pools_2nd_half(cell: dict) -> float:
    steps = cell["steps"][len(cell["steps"]) // 2:]
    return sum(s["tagrpo/pool/zero_std"] for s in steps) / len(steps)


def arm_columns() -> list[tuple[str, object, str]]:
    """The every-arm table's columns of this task: (header, the cell's number, format)."""
    return [("uniform pools %, 2nd half", lambda c: 100 * _uniform_pools_2nd_half(c), "{:.0f}"),
            ("strategy entropy (bits)", lambda c: c["strategy_entropy"], "{:.2f}")]


def describe(study, args, data: dict) -> str:
    """The task's line under the report's title: the world, its settings and the base."""
    record = data["record"]
    knobs = ", ".join(f"{s:g}" for s in study.settings)
    text = (f"Task: the embedded regime world (`tagrpo/toy/regime.py`) at hard_share {knobs}; {args.samples} "
            f"samples per test question, {study.sweep.samples} per validation question.")
    if record is None:
        return text + " Base: the shipped regime base (`tagrpo/toy/regime_checkpoint`)."
    return (text + f" Base: the regime recipe at hidden size {record['hidden_size']} ({record['num_layers']} layers), "
            f"{record['parameters']:,} parameters (the shipped base: 0.96M), SHA-256 `{record['sha256']}`, pretrained "
            f"in {record['pretrain_wall_s'] / 60:.1f} min on one thread into `{record['dir']}` (not committed; the "
            "command rebuilds it).")


def premise_rows(bases: dict, setting, name: str) -> list[list]:
    """The base on its held-out q0 questions at ``setting`` (the share it never solves, pass@1 on the rest) and per
    form its pass@1 on the premise's problems: mean and t interval over the seeds measured."""
    from tagrpo.demo.metrics import hard_mask
    from tagrpo.demo.report import pct
    from tagrpo.evaluation.stats import interval
    from tagrpo.experiments.judge import subset_pass

    bs = [b for (h, _), b in sorted(bases.items(), key=lambda x: x[0][1]) if h == setting]
    if not bs:
        return []
    rest = [subset_pass(b["counts"], b["samples"], b["counts"], "rest", 1) for b in bs]
    rest = [x for x in rest if not math.isnan(x)]
    out = [[name, f"{setting:g}", len(bs), "q0, share never solved (hard)",
            pct(interval([float(hard_mask(b["counts"]).mean()) for b in bs]))],
           [name, f"{setting:g}", len(bs), "q0, pass@1 on the rest", pct(interval(rest))]]
    with_forms = [b for b in bs if b.get("forms")]
    out += [[name, f"{setting:g}", len(with_forms), form, pct(interval([b["forms"][form] for b in with_forms]))]
            for form in FORMS if with_forms and form in with_forms[0]["forms"]]
    return [[*r[:4], "-" if "nan" in r[4] else r[4]] for r in out]


def premise_section(study, data: dict, bases: dict, versus: dict) -> list[str]:
    from tagrpo.evaluation.tables import markdown_table

    rows = [r for s in study.settings for r in premise_rows(bases, s, "this study's base")]
    rows += [r for name, (_, vb) in versus.items() for s in study.settings for r in premise_rows(vb, s, name)]
    if not rows:
        return []
    return ["## The base's premise (test problems)", "",
            markdown_table(["base", "hard_share", "seeds", "measure", "% [95% CI]"], rows), ""]
