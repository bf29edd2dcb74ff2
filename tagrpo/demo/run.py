"""``tagrpo demo``'s training and evaluation (its configuration: ``tagrpo.demo.config``): the base's
premise and evaluation, each arm trained with ``run_train`` and evaluated on held-out q0 prompts, the held-out curve
during training, and the run that writes metrics.json, report.md and the plots."""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict

import numpy as np
import torch
import transformers
from rich.console import Console
from transformers import TrainerCallback

from tagrpo.common.machine import machine
from tagrpo.data.jsonl import write_jsonl
from tagrpo.demo.arms import ARMS
from tagrpo.demo.config import (
    CURVE_QUESTIONS,
    CURVE_SAMPLES,
    PREMISE_QUESTIONS,
    PREMISE_SAMPLES,
    STEP_KEYS,
    DemoConfig,
    held_out_rows,
)
from tagrpo.evaluation import lexical_diversity, pass_at_k_curve
from tagrpo.generation import load_causal_lm, sample_responses
from tagrpo.rewards import is_correct
from tagrpo.toy.regime import strategy_entropy, strategy_of
from tagrpo.toy.worlds import premise_prompts, question_rows, resolve_world_base


def evaluate(model, tokenizer, rows: list[dict], samples: int, max_new_tokens: int, seed: int) -> dict:
    """pass@k for k = 1..samples, per-question correct counts and lexical diversity on ``rows``' prompts."""
    responses = sample_responses(
        model, tokenizer, [r["prompt"] for r in rows], samples, max_new_tokens=max_new_tokens, seed=seed, progress=False
    )
    flags = [[is_correct(x, r["answer"]) for x in rs] for rs, r in zip(responses, rows, strict=True)]
    counts = np.array([sum(f) for f in flags])  # (Q,)
    right = [x for rs, fs in zip(responses, flags, strict=True) for x, ok in zip(rs, fs, strict=True) if ok]
    return {
        "pass_at_k": pass_at_k_curve(counts, samples, range(1, samples + 1)),
        "counts": counts.tolist(),
        "samples": samples,
        "diversity": lexical_diversity(responses),
        "strategy_entropy": strategy_entropy([strategy_of(x) for x in right]),  # bits, among correct responses
        "example": responses[0][:3],
    }


class HeldOutCurve(TrainerCallback):
    """pass@1 and pass@CURVE_SAMPLES on the first CURVE_QUESTIONS held-out questions at a few steps, against the
    rollouts spent so far."""

    def __init__(self, held_out: list[dict], steps: set[int], max_new_tokens: int, seed: int):
        self.rows, self.steps = held_out[:CURVE_QUESTIONS], steps
        self.max_new_tokens, self.seed = max_new_tokens, seed
        self.points: list[dict] = []
        self.generations = 0  # generation steps so far; ``steps`` counts these, not optimizer updates

    def measure(self, model, tokenizer) -> dict:
        result = evaluate(model, tokenizer, self.rows, CURVE_SAMPLES, self.max_new_tokens, self.seed)
        return {"pass@1": result["pass_at_k"]["1"], f"pass@{CURVE_SAMPLES}": result["pass_at_k"][str(CURVE_SAMPLES)]}

    def on_log(self, args, state, control, logs=None, model=None, processing_class=None, **kwargs):
        if not logs or "tagrpo/rollouts" not in logs:  # not a generation step (num_iterations > 1)
            return
        self.generations += 1
        if self.generations in self.steps:
            point = {"step": self.generations, "rollouts": logs["tagrpo/rollouts"]}
            self.points.append({**point, **self.measure(model, processing_class)})


def premise(model, tokenizer, cfg: DemoConfig, questions: int = PREMISE_QUESTIONS) -> dict:
    """The base model's pass@1 on ``questions`` held-out problems in every form, and in the control's renamed q0."""
    answers, prompts = premise_prompts(cfg.world, questions, 3000 + cfg.seed, cfg.hard_share)
    seed, max_new_tokens = cfg.seed, cfg.max_completion_length
    out = {}
    for form, texts in prompts.items():
        rows = [{"prompt": t, "answer": a} for t, a in zip(texts, answers, strict=True)]
        out[form] = evaluate(model, tokenizer, rows, PREMISE_SAMPLES, max_new_tokens, seed)["pass_at_k"]["1"]
    return out


def _trainer_config(cfg: DemoConfig, name: str, s: dict, run_dir: str, pool: int):
    """The arm's ``TAGRPOConfig``: its settings ``s`` and what every arm shares."""
    from tagrpo.trainer.config import TAGRPOConfig

    return TAGRPOConfig(
        output_dir=run_dir,
        num_rephrasings=s["num_rephrasings"],
        num_generations=s["num_generations"],
        advantage_scope=s["advantage_scope"],
        anchor=s["anchor"],
        pool_mode=s["pool_mode"],
        pool_gate=s["pool_gate"],
        rephrased_weight=s["rephrased_weight"],
        reference_group_size=cfg.num_generations if ARMS[name].wide else None,
        per_device_train_batch_size=cfg.questions_per_step * pool,
        max_completion_length=cfg.max_completion_length,
        max_steps=s["max_steps"] * cfg.num_iterations,  # the same rollouts for any num_iterations
        num_iterations=cfg.num_iterations,
        learning_rate=cfg.learning_rate_of(name),
        lr_scheduler_type="constant",
        logging_steps=1,
        console_every=0,
        report_to=[],
        save_strategy="no",
        seed=cfg.seed,
        temperature=1.0,
        beta=s["beta"],
        use_cpu=not torch.cuda.is_available(),
        bf16=False,
        disable_tqdm=False,
        shuffle_dataset=True,
    )


def train_arm(name: str, cfg: DemoConfig, base: str, held_out: list[dict], console: Console, after=None) -> dict:
    """Train arm ``name`` from ``base``, evaluate it on ``held_out``; ``after(model, tokenizer)``, when given, adds
    its result under ``forms`` (the benchmark's per-form accuracy after training)."""
    from tagrpo.trainer.run import TrainJob, run_train

    s = cfg.settings(name)
    run_dir = os.path.join(cfg.output_dir, "runs", name)
    os.makedirs(run_dir, exist_ok=True)
    rows = question_rows(
        cfg.world, s["train_questions"], 1000 + cfg.seed, cfg.num_rephrasings, s["plan"], hard_share=cfg.hard_share
    )
    data = write_jsonl(os.path.join(run_dir, "train.jsonl"), rows)
    metrics_path = os.path.join(run_dir, "metrics.jsonl")
    if os.path.exists(metrics_path):
        os.remove(metrics_path)
    every = max(1, s["max_steps"] // max(cfg.checkpoints, 1))
    points = set(range(every, s["max_steps"] + 1, every)) if cfg.checkpoints else set()
    curve = HeldOutCurve(held_out, points, cfg.max_completion_length, cfg.seed)
    pool = (s["num_rephrasings"] + 1) * s["num_generations"]
    config = _trainer_config(cfg, name, s, run_dir, pool)
    what = ""
    if s["num_rephrasings"]:
        what = f"N={s['num_rephrasings']} ({s['plan']}), scope={s['advantage_scope']}, anchor={s['anchor']}, "
    console.print(
        f"[bold]{ARMS[name].label}[/bold]: {what}G={s['num_generations']}, {s['max_steps']} generations x "
        f"{cfg.questions_per_step} of {s['train_questions']} questions, learning rate {cfg.learning_rate_of(name):g}"
    )
    start = time.perf_counter()
    trainer = run_train(TrainJob(model=base, data=data, template="plain"), config, callbacks=[curve])
    wall = time.perf_counter() - start
    with open(metrics_path, encoding="utf-8") as f:
        logged = [json.loads(line) for line in f]
    steps = [{k: r[k] for k in STEP_KEYS if k in r} for r in logged if "tagrpo/rollouts" in r]
    clip = [r["clip_ratio/region_mean"] for r in logged if "clip_ratio/region_mean" in r]  # per optimizer update
    rows_per_step = cfg.questions_per_step * pool
    final = evaluate(
        trainer.model, trainer.processing_class, held_out, cfg.eval_samples, cfg.max_completion_length, cfg.seed
    )
    forms = after(trainer.model, trainer.processing_class) if after else None
    return {
        "arm": name,
        **s,
        "forms": forms,
        "rollouts": trainer.rollouts,
        "optimizer_updates": trainer.state.global_step,
        "learning_rate": cfg.learning_rate_of(name),
        "completion_tokens": round(sum(st["completions/mean_length"] * rows_per_step for st in steps)),
        "wall_s": wall,
        "steps": steps,
        "clip_fraction": clip,
        "curve": curve.points,
        "curve_questions": len(curve.rows),
        **final,
    }


def run_demo(cfg: DemoConfig, console: Console | None = None) -> dict:
    """Train every arm of ``cfg`` from the base, evaluate, write metrics.json, report.md and the plots."""
    from tagrpo.demo.report import write_report

    console = console or Console()
    start = time.perf_counter()
    transformers.utils.logging.disable_progress_bar()
    logging.getLogger("tagrpo.trainer.run").setLevel(logging.WARNING)  # the rephrasing counts of every arm
    os.makedirs(cfg.output_dir, exist_ok=True)
    fallback = os.path.join(cfg.output_dir, "base" if cfg.world == "basic" else "base_regime")
    base = resolve_world_base(cfg.world, cfg.base_dir, fallback, console)
    held_out = held_out_rows(cfg)
    base_model, tokenizer = load_causal_lm(base, device="cpu")
    console.print(f"evaluating the base model on {cfg.eval_questions} held-out questions x {cfg.eval_samples} samples")
    base_eval = evaluate(base_model, tokenizer, held_out, cfg.eval_samples, cfg.max_completion_length, cfg.seed)
    base_curve = HeldOutCurve(held_out, set(), cfg.max_completion_length, cfg.seed).measure(base_model, tokenizer)
    base_premise = premise(base_model, tokenizer, cfg)
    runs = {"base": {"arm": "base", "rollouts": 0, "completion_tokens": 0, **base_eval}}
    for name in cfg.arm_list:
        console.rule(f"[bold]{name}")
        runs[name] = train_arm(name, cfg, base, held_out, console)
        runs[name]["curve"].insert(0, {"step": 0, "rollouts": 0, **base_curve})
    result = {
        "config": asdict(cfg),
        "base_dir": base,
        "machine": machine(),
        "premise": base_premise,
        "runs": runs,
        "wall_s": time.perf_counter() - start,
    }
    with open(os.path.join(cfg.output_dir, "metrics.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
    write_report(cfg.output_dir, [result], console)
    return result

