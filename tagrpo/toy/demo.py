"""``tagrpo demo``: GRPO, TA-GRPO and equal-sampling GRPO from one pretrained base, on the embedded world.

Every method trains with the same ``run_train`` (TAGRPOTrainer, math reward) that ``tagrpo train`` uses on a real
model, on the same questions, for the same number of steps; what differs is the configuration and so the
rollouts spent, which every table and plot states. A control run gives TA-GRPO rephrasings that only rename the
person and the item, so they do not change the difficulty.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass

import torch
from rich.console import Console
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback

from tagrpo.evaluation import correct_counts, lexical_diversity, pass_at_k_curve, sample_responses
from tagrpo.rewards import is_correct
from tagrpo.toy.pretrain import PretrainConfig, pretrain_base
from tagrpo.toy.world import question_rows

# rephrase: N rephrasings (else N=0); match_rollouts: (N+1)*G generations per question (else G); plan: which
# rephrasings (tagrpo.toy.world.PLANS)
METHODS = {
    "grpo": {"rephrase": False, "match_rollouts": False, "plan": "main"},
    "ta_grpo": {"rephrase": True, "match_rollouts": False, "plan": "main"},
    "equal_sampling": {"rephrase": False, "match_rollouts": True, "plan": "main"},
    "ta_grpo_control": {"rephrase": True, "match_rollouts": False, "plan": "control"},
}
PRESETS = {
    "quick": dict(pretrain_steps=60, rl_steps=6, train_questions=64, eval_questions=32, eval_samples=8, checkpoints=2),
    "default": dict(
        pretrain_steps=300, rl_steps=60, train_questions=512, eval_questions=128, eval_samples=16, checkpoints=4
    ),
}


@dataclass
class DemoConfig:
    """Settings of ``tagrpo demo``. Fields left at None take the preset's value."""

    output_dir: str = "outputs/demo"
    base_dir: str | None = None  # the pretrained base model; default output_dir/base
    preset: str = "default"
    seed: int = 0
    base_seed: int = 0
    methods: str = "grpo,ta_grpo,equal_sampling,ta_grpo_control"
    pretrain_steps: int | None = None
    rl_steps: int | None = None
    train_questions: int | None = None
    eval_questions: int | None = None
    eval_samples: int | None = None
    checkpoints: int | None = None
    num_rephrasings: int = 3
    num_generations: int = 4
    questions_per_step: int = 4
    learning_rate: float = 2e-5
    max_completion_length: int = 32

    def __post_init__(self):
        if self.preset not in PRESETS:
            raise ValueError(f"preset={self.preset!r} is not valid; expected one of: {', '.join(map(repr, PRESETS))}")
        for key, value in PRESETS[self.preset].items():
            if getattr(self, key) is None:
                setattr(self, key, value)
        unknown = [m for m in self.method_list if m not in METHODS]
        if unknown:
            raise ValueError(f"unknown methods {unknown}; expected some of: {', '.join(METHODS)}")

    @property
    def method_list(self) -> list[str]:
        return [m.strip() for m in self.methods.split(",") if m.strip()]


CURVE_QUESTIONS, CURVE_SAMPLES = 64, 8


class HeldOutCurve(TrainerCallback):
    """pass@1 on the first CURVE_QUESTIONS held-out questions (CURVE_SAMPLES samples each) at a few steps, against
    the rollouts spent so far."""

    def __init__(self, held_out: list[dict], steps: set[int], max_new_tokens: int, seed: int):
        self.rows, self.steps = held_out[:CURVE_QUESTIONS], steps
        self.max_new_tokens, self.seed = max_new_tokens, seed
        self.points: list[dict] = []

    def measure(self, model, tokenizer) -> float:
        prompts = [r["prompt"] for r in self.rows]
        responses = sample_responses(
            model, tokenizer, prompts, CURVE_SAMPLES, max_new_tokens=self.max_new_tokens, seed=self.seed, progress=False
        )
        counts = correct_counts(responses, [r["answer"] for r in self.rows], is_correct)
        return float(counts.mean() / CURVE_SAMPLES)

    def on_log(self, args, state, control, logs=None, model=None, processing_class=None, **kwargs):
        if logs and "tagrpo/rollouts" in logs and state.global_step in self.steps:
            point = {"step": state.global_step, "rollouts": logs["tagrpo/rollouts"]}
            self.points.append({**point, "pass@1": self.measure(model, processing_class)})


def evaluate(model, tokenizer, rows, cfg: DemoConfig) -> dict:
    """pass@k for k = 1..eval_samples (unbiased) and lexical diversity on held-out q0 prompts."""
    responses = sample_responses(
        model,
        tokenizer,
        [r["prompt"] for r in rows],
        cfg.eval_samples,
        max_new_tokens=cfg.max_completion_length,
        seed=cfg.seed,
    )
    counts = correct_counts(responses, [r["answer"] for r in rows], is_correct)
    correct = [[t for t in rs if is_correct(t, r["answer"])] for rs, r in zip(responses, rows, strict=True)]
    return {
        "pass_at_k": pass_at_k_curve(counts, cfg.eval_samples, range(1, cfg.eval_samples + 1)),
        "diversity": lexical_diversity(responses),
        "diversity_correct": lexical_diversity([c for c in correct if len(c) > 1]),
        "sample": responses[0][:3],
    }


def train_method(name: str, cfg: DemoConfig, base: str, data_dir: str, held_out: list[dict]) -> dict:
    from tagrpo.trainer.config import TAGRPOConfig
    from tagrpo.trainer.run import TrainJob, run_train

    method = METHODS[name]
    plan = method["plan"]
    n = cfg.num_rephrasings if method["rephrase"] else 0
    g = cfg.num_generations * (cfg.num_rephrasings + 1 if method["match_rollouts"] else 1)
    pool = (n + 1) * g
    run_dir = os.path.join(cfg.output_dir, "runs", name)
    metrics_path = os.path.join(run_dir, "metrics.jsonl")
    if os.path.exists(metrics_path):
        os.remove(metrics_path)
    every = max(1, cfg.rl_steps // cfg.checkpoints)
    steps = set(range(every, cfg.rl_steps + 1, every)) | {cfg.rl_steps}
    curve = HeldOutCurve(held_out, steps, cfg.max_completion_length, cfg.seed)
    config = TAGRPOConfig(
        output_dir=run_dir,
        num_rephrasings=n,
        num_generations=g,
        per_device_train_batch_size=cfg.questions_per_step * pool,
        max_completion_length=cfg.max_completion_length,
        max_steps=cfg.rl_steps,
        learning_rate=cfg.learning_rate,
        lr_scheduler_type="constant",
        logging_steps=1,
        report_to=[],
        save_strategy="no",
        seed=cfg.seed,
        temperature=1.0,
        beta=0.0,
        use_cpu=not torch.cuda.is_available(),
        bf16=False,
        disable_tqdm=False,
        shuffle_dataset=True,
    )
    job = TrainJob(model=base, data=os.path.join(data_dir, f"train_{plan}.jsonl"), template="plain")
    start = time.perf_counter()
    trainer = run_train(job, config, callbacks=[curve])
    wall = time.perf_counter() - start
    with open(metrics_path, encoding="utf-8") as f:
        steps = [r for r in map(json.loads, f) if "tagrpo/rollouts" in r]
    final = evaluate(trainer.model, trainer.processing_class, held_out, cfg)
    return {
        "method": name,
        "num_rephrasings": n,
        "num_generations": g,
        "rephrasing_plan": plan,
        "rollouts": trainer.rollouts,
        "wall_s": wall,
        "steps": steps,
        "curve": curve.points,
        **final,
    }


def run_demo(cfg: DemoConfig, console: Console | None = None) -> dict:
    from tagrpo.toy.report import write_report

    console = console or Console()
    os.makedirs(cfg.output_dir, exist_ok=True)
    base = pretrain_base(
        PretrainConfig(
            output_dir=cfg.base_dir or os.path.join(cfg.output_dir, "base"),
            steps=cfg.pretrain_steps,
            seed=cfg.base_seed,
        ),
        console,
    )
    data_dir = os.path.join(cfg.output_dir, "data")
    os.makedirs(data_dir, exist_ok=True)
    for plan in ("main", "control"):
        rows = question_rows(cfg.train_questions, seed=1000 + cfg.base_seed, plan=plan)
        with open(os.path.join(data_dir, f"train_{plan}.jsonl"), "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    held_out = question_rows(cfg.eval_questions, seed=2000 + cfg.base_seed, num_rephrasings=0)
    tokenizer = AutoTokenizer.from_pretrained(base)
    base_model = AutoModelForCausalLM.from_pretrained(base)
    base_eval = evaluate(base_model, tokenizer, held_out, cfg)
    base_curve = HeldOutCurve(held_out, set(), cfg.max_completion_length, cfg.seed).measure(base_model, tokenizer)
    runs = {"base": {"method": "base", "rollouts": 0, **base_eval}}
    for name in cfg.method_list:
        console.rule(f"[bold]{name}")
        runs[name] = train_method(name, cfg, base, data_dir, held_out)
        runs[name]["curve"].insert(0, {"step": 0, "rollouts": 0, "pass@1": base_curve})
    result = {"config": asdict(cfg), "machine": machine(), "runs": runs}
    with open(os.path.join(cfg.output_dir, "metrics.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
    write_report(cfg.output_dir, [result], console)
    return result


def machine() -> dict:
    import platform

    import transformers
    import trl

    return {
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "trl": trl.__version__,
        "device": "cuda" if torch.cuda.is_available() else "cpu",
    }
