"""``tagrpo demo``: the arms of ``tagrpo.experiments.arms`` from one pretrained base, on an embedded world.

``--world basic`` (the default) is ``tagrpo.toy.world`` with its shipped base; ``--world regime`` is
``tagrpo.toy.regime``, where ``--hard-share`` of the questions carry a tens word the base has never read
(``tagrpo.toy.worlds``). ``--num-iterations 2`` takes two optimizer steps per generation batch at the same
rollouts, so that the importance ratio and the clip act; the report adds the hard subset (held-out questions whose
base samples on q0 were all wrong) beside the rest.

Every arm trains with the same ``run_train`` (TAGRPOTrainer, math reward) that ``tagrpo train`` uses on a real
model, with the same learning rate, questions per step, completion length and seed; what differs is the arm's
configuration and so the rollouts spent, which every table and plot states. A seed fixes the training questions,
the held-out questions, the RL sampling and the evaluation sampling, so two arms of one seed are paired.

Evaluation is on held-out q0 prompts (spelled-out narratives of number triples never seen in pretraining or
training): pass@k for k = 1..``eval_samples`` (unbiased), the per-question correct counts (for intervals) and the
lexical diversity of the responses. The base model is also scored on every surface form of the same held-out
problems, which is the premise of the method: q0's form is hard, some rephrased forms are easy.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
import transformers
from rich.console import Console
from transformers import TrainerCallback

from tagrpo.common.fields import helped
from tagrpo.common.modes import check_mode
from tagrpo.data.jsonl import write_jsonl
from tagrpo.evaluation import lexical_diversity, pass_at_k_curve
from tagrpo.experiments.arms import ARMS, RECOMMENDED, arm_settings
from tagrpo.experiments.machine import machine
from tagrpo.generation import load_causal_lm, sample_responses
from tagrpo.rewards import is_correct
from tagrpo.toy.regime import strategy_entropy, strategy_of
from tagrpo.toy.worlds import MAX_COMPLETION, WORLDS, premise_prompts, question_rows, resolve_world_base

DEMO_ARMS = ("grpo", "augmentation", "equal_sampling", "ta_grpo")
REGIME_LEARNING_RATES = (  # each arm's best on validation problems at hard_share 0.9: studies/results/toy_regime_v2.md,
    # "sweep" (per knob); the arms study v2 did not sweep keep the first study's (toy_regime.md, swept at 0.6)
    "grpo=3e-5,grpo_long=1e-5,equal_sampling=3e-5,ta_grpo=1e-4,ta_grpo_control=1e-5,ta_grpo_gated=1e-4,"
    "ta_grpo_w25=3e-4,ta_grpo_w50=1e-4,ta_grpo_kl=1e-4,ta_grpo_adaptive=1e-4,ta_grpo_behavior=3e-5,"
    "pooled_no_anchor=3e-5,ta_grpo_history=1e-4"
)
PRESETS = {
    "quick": dict(
        rl_steps=6, train_questions=16, questions_per_step=4, eval_questions=32, eval_samples=8, checkpoints=2,
        num_iterations=1, learning_rates="", world="basic", hard_share=0.6, arms=",".join(DEMO_ARMS),
    ),
    "default": dict(
        rl_steps=100, train_questions=128, questions_per_step=8, eval_questions=128, eval_samples=16, checkpoints=4,
        num_iterations=1, learning_rates="", world="basic", hard_share=0.6, arms=",".join(DEMO_ARMS),
    ),
    "regime": dict(
        rl_steps=12, train_questions=64, questions_per_step=8, eval_questions=64, eval_samples=64, checkpoints=1,
        num_iterations=2, learning_rates=REGIME_LEARNING_RATES, world="regime", hard_share=0.9,
        arms=f"grpo,equal_sampling,ta_grpo,ta_grpo_control,{RECOMMENDED}",
    ),
}
CURVE_QUESTIONS, CURVE_SAMPLES = 64, 8
PREMISE_QUESTIONS, PREMISE_SAMPLES = 64, 8
STEP_KEYS = (
    "step",
    "reward",
    "completions/mean_length",
    "tagrpo/rollouts",
    "tagrpo/original/all_zero",
    "tagrpo/original/all_one",
    "tagrpo/original/zero_std",
    "tagrpo/pool/all_zero",
    "tagrpo/pool/all_one",
    "tagrpo/pool/zero_std",
    "tagrpo/variant/zero_std",
    "tagrpo/rescued",
    "tagrpo/expanded",
    "tagrpo/rescued/from_zero",
    "tagrpo/rescued/from_one",
    "tagrpo/reference/rescued/from_zero",
    "tagrpo/reference/rescued/from_one",
)


@dataclass
class DemoConfig:
    """Settings of ``tagrpo demo``. Fields left at None take the preset's value."""

    output_dir: str = helped("outputs/demo", "where metrics.json, report.md, the plots and the runs go")
    base_dir: str | None = helped(None, "the base model (default: the world's shipped checkpoint, "
                                  "tagrpo/toy/regime_checkpoint or tagrpo/toy/checkpoint)")
    world: str | None = helped(None, f"embedded world: {' or '.join(WORLDS)} (default: the preset's)")
    hard_share: float | None = helped(None, "regime world: share of questions with a tens word the base never read")
    preset: str = helped(
        "regime", "regime (the default; make demo, a few minutes: the regime world at hard_share 0.9, learning "
        "rates from studies/results/toy_regime_v2.md's validation sweep), default (the basic world's five-seed "
        "benchmark) or quick (a smoke test)"
    )
    seed: int = helped(0, "fixes the training and held-out questions and all sampling; arms of a seed are paired")
    arms: str | None = helped(None, f"comma-separated arms of tagrpo.experiments.arms: {', '.join(ARMS)}")
    rl_steps: int | None = helped(None, "GRPO's optimizer steps (default: the preset's)")
    train_questions: int | None = helped(None, "questions to train on (default: the preset's)")
    questions_per_step: int | None = helped(None, "questions per step (default: the preset's)")
    eval_questions: int | None = helped(None, "held-out questions (default: the preset's)")
    eval_samples: int | None = helped(None, "samples per held-out question, the largest k (default: the preset's)")
    checkpoints: int | None = helped(None, "held-out measurements during training, 0: none (default: the preset's)")
    num_rephrasings: int = helped(3, "N, rephrasings per question")
    num_generations: int = helped(4, "G, samples per prompt")
    learning_rate: float = helped(3e-5, "the learning rate of every arm not in --learning-rates")
    learning_rates: str | None = helped(None, "per-arm learning rates, arm=lr,arm=lr (default: the preset's)")
    num_iterations: int | None = helped(None, "optimizer steps per generation batch (2+: the ratio and clip act)")
    held_out_split: str = helped("test", "problems of the held-out questions: test, or validation (for tuning)")
    max_completion_length: int | None = helped(None, "tokens per completion (default: 28 basic, 36 regime)")

    def __post_init__(self):
        check_mode("preset", self.preset, tuple(PRESETS))
        for key, value in PRESETS[self.preset].items():
            if getattr(self, key) is None:
                setattr(self, key, value)
        check_mode("world", self.world, WORLDS)
        if self.max_completion_length is None:
            self.max_completion_length = MAX_COMPLETION[self.world]
        check_mode("held_out_split", self.held_out_split, ("test", "validation"))
        for name in self.arm_list:
            check_mode("arm", name, tuple(ARMS))
        self.lr_of = {}  # arm: learning rate, from --learning-rates
        for item in filter(None, (x.strip() for x in self.learning_rates.split(","))):
            arm, _, value = item.partition("=")
            try:
                lr = float(value)
            except ValueError:
                raise ValueError(f"learning_rates: {item!r} is not arm=number") from None
            self.lr_of[check_mode("arm", arm.strip(), tuple(ARMS))] = lr

    @property
    def arm_list(self) -> list[str]:
        return [m.strip() for m in self.arms.split(",") if m.strip()]

    def learning_rate_of(self, arm: str) -> float:
        return self.lr_of.get(arm, self.learning_rate)

    def settings(self, arm: str) -> dict:
        return arm_settings(arm, self.num_rephrasings, self.num_generations, self.rl_steps, self.train_questions)


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


def held_out_rows(cfg: DemoConfig) -> list[dict]:
    """The held-out q0 questions of ``cfg``'s seed, from its ``held_out_split``."""
    return question_rows(
        cfg.world, cfg.eval_questions, 2000 + cfg.seed, 0, split=cfg.held_out_split, hard_share=cfg.hard_share
    )


def run_demo(cfg: DemoConfig, console: Console | None = None) -> dict:
    """Train every arm of ``cfg`` from the base, evaluate, write metrics.json, report.md and the plots."""
    from tagrpo.experiments.report import write_report

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

