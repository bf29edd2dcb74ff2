"""The regime study's cells: where each lives on disk and how one is computed (a demo run of one arm, or the base
model's evaluation), for ``studies/toy_regime.py``, ``studies/toy_rl_check.py`` and ``studies/regime_mix_probe.py``.
"""

from __future__ import annotations

import os
import sys
import time


def cell_path(work: str, spec: dict) -> str:
    name = "base" if spec["kind"] == "base" else f"{spec['arm']}_lr{spec['learning_rate']:g}"
    if spec["kind"] != "base" and spec.get("rl_steps"):
        name += f"_steps{spec['rl_steps']}"  # a longer run than the preset's (the RL check) or a smoke test's
    root = os.path.join(work, os.path.basename(spec["base"].rstrip("/"))) if spec.get("base") else work
    return os.path.join(root, spec["split"], f"h{spec['knob']:g}", f"seed{spec['seed']}", name, "result.jsonl")


def cell_spec(work: str, overrides: dict, kind: str, knob: float, seed: int, split: str, samples: int,
              arm: str | None = None, lr: float | None = None, forms: bool = False) -> tuple[dict, str]:
    """One cell ``(spec, path)`` of a regime study: the base model's evaluation (``kind="base"``) or ``arm`` trained
    at rate ``lr``; ``overrides`` (the smoke tests' step and question counts, ``base_recipe``, a ``base`` directory)
    enter the spec, so a result is never reused for other settings."""
    spec = {"kind": kind, "knob": knob, "seed": seed, "split": split, "samples": samples, "forms": forms, **overrides}
    if arm:
        spec.update(arm=arm, learning_rate=lr)
    return spec, cell_path(work, spec)


def config(spec: dict, out: str):
    from tagrpo.experiments.demo import DemoConfig

    return DemoConfig(
        output_dir=out, world="regime", hard_share=spec["knob"], preset="regime", seed=spec["seed"],
        arms=spec.get("arm") or "grpo", learning_rate=spec.get("learning_rate", 0.0), learning_rates="",
        held_out_split=spec["split"], eval_samples=spec["samples"], rl_steps=spec.get("rl_steps"),
        eval_questions=spec.get("questions"),
    )


def compute(spec: dict, out: str) -> dict:
    import logging

    import transformers
    from rich.console import Console
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tagrpo.experiments.demo import PREMISE_QUESTIONS, evaluate, held_out_rows, premise, train_arm
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
