"""``tagrpo demo``: pretrain a tiny model on the arithmetic world, train it with TA-GRPO, print the diagnostics.

The same ``run_train`` (TAGRPOTrainer, math reward) as ``tagrpo train`` on a real model; only the model and the
data are built here. The base model is cached in ``output_dir/base`` and reused when its settings match.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import asdict, dataclass

import torch
from rich.console import Console
from rich.table import Table

from tagrpo.rewards import is_correct
from tagrpo.toy.arithmetic import corpus, question_rows
from tagrpo.toy.model import build_tiny_model
from tagrpo.toy.pretrain import pretrain
from tagrpo.toy.tokenizer import build_char_tokenizer

PRETRAIN_MIX = {"symbolic": 0.8, "swapped": 0.1, "words": 0.06, "narrative": 0.04}


@dataclass
class DemoConfig:
    """Settings of ``tagrpo demo``; ``quick`` shrinks every budget for a smoke run."""

    output_dir: str = "outputs/demo"
    seed: int = 0
    quick: bool = False
    pretrain_steps: int = 150
    train_questions: int = 256
    rl_steps: int = 30
    num_rephrasings: int = 3
    num_generations: int = 4
    learning_rate: float = 5e-4
    eval_questions: int = 64
    eval_samples: int = 8

    def __post_init__(self):
        if self.quick:
            self.pretrain_steps = min(self.pretrain_steps, 40)
            self.rl_steps = min(self.rl_steps, 4)
            self.eval_questions = min(self.eval_questions, 16)
            self.eval_samples = min(self.eval_samples, 4)


def base_model(cfg: DemoConfig, console: Console) -> str:
    """Pretrained base checkpoint (HF directory), built once per settings and cached."""
    path = os.path.join(cfg.output_dir, "base")
    marker = os.path.join(path, "tagrpo_pretrain.json")
    settings = {"seed": cfg.seed, "steps": cfg.pretrain_steps, "mix": PRETRAIN_MIX}
    if os.path.exists(marker):
        with open(marker, encoding="utf-8") as f:
            if json.load(f).get("settings") == settings:
                console.print(f"base model: reusing {path}")
                return path
    torch.manual_seed(cfg.seed)
    tok = build_char_tokenizer()
    model = build_tiny_model(tok, hidden_size=128, num_layers=4, num_heads=4, seed=cfg.seed)
    losses = pretrain(model, tok, corpus(20000, cfg.seed, PRETRAIN_MIX), steps=cfg.pretrain_steps, seed=cfg.seed)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    with open(marker, "w", encoding="utf-8") as f:
        json.dump({"settings": settings, "first_loss": losses[0], "last_loss": losses[-1]}, f)
    console.print(f"base model: pretrained {cfg.pretrain_steps} steps, loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    return path


@torch.no_grad()
def sample_accuracy(model_dir: str, rows: list[dict], samples: int, seed: int) -> float:
    """Mean correctness of ``samples`` responses at temperature 1 to each row's original prompt."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    torch.manual_seed(seed)
    enc = tok([r["prompt"] for r in rows], return_tensors="pt", padding=True)
    out = model.generate(
        **enc,
        do_sample=True,
        temperature=1.0,
        top_k=0,
        max_new_tokens=12,
        num_return_sequences=samples,
        pad_token_id=tok.pad_token_id,
    )
    texts = tok.batch_decode(out[:, enc["input_ids"].size(1) :], skip_special_tokens=True)
    answers = [r["answer"] for r in rows for _ in range(samples)]
    return sum(is_correct(t, a) for t, a in zip(texts, answers, strict=True)) / len(texts)


def _mean(records, key, half):
    values = [r[key] for r in records if r.get(key) is not None]
    part = values[len(values) // 2 :] if half == "second" else values[: max(1, len(values) // 2)]
    return sum(part) / len(part) if part else float("nan")


def run_demo(cfg: DemoConfig, console: Console | None = None) -> dict:
    from tagrpo.trainer.config import TAGRPOConfig
    from tagrpo.trainer.run import TrainJob, run_train

    console = console or Console()
    os.makedirs(cfg.output_dir, exist_ok=True)
    base = base_model(cfg, console)
    rng = random.Random(cfg.seed)
    train = question_rows(cfg.train_questions, seed=cfg.seed + 1, num_rephrasings=cfg.num_rephrasings)
    held_out = question_rows(cfg.eval_questions, seed=cfg.seed + 2, num_rephrasings=0)
    rng.shuffle(train)
    data_path = os.path.join(cfg.output_dir, "train.jsonl")
    with open(data_path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in train)
    before = sample_accuracy(base, held_out, cfg.eval_samples, cfg.seed)
    pool = (cfg.num_rephrasings + 1) * cfg.num_generations
    run_dir = os.path.join(cfg.output_dir, "ta_grpo")
    if os.path.exists(os.path.join(run_dir, "metrics.jsonl")):
        os.remove(os.path.join(run_dir, "metrics.jsonl"))
    config = TAGRPOConfig(
        output_dir=run_dir,
        num_rephrasings=cfg.num_rephrasings,
        num_generations=cfg.num_generations,
        per_device_train_batch_size=2 * pool,
        max_completion_length=12,
        max_steps=cfg.rl_steps,
        learning_rate=cfg.learning_rate,
        logging_steps=1,
        report_to=[],
        save_strategy="no",
        seed=cfg.seed,
        temperature=1.0,
        beta=0.0,
        use_cpu=not torch.cuda.is_available(),
        bf16=False,
        disable_tqdm=True,
    )
    run_train(TrainJob(model=base, data=data_path, template="plain"), config)
    after = sample_accuracy(os.path.join(run_dir, "final"), held_out, cfg.eval_samples, cfg.seed)
    with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8") as f:
        records = [r for r in map(json.loads, f) if "tagrpo/rollouts" in r]
    summary = {
        "config": asdict(cfg),
        "held_out_accuracy_before": before,
        "held_out_accuracy_after": after,
        "rollouts": records[-1]["tagrpo/rollouts"] if records else 0,
    }
    table = Table(
        title=f"TA-GRPO on the arithmetic world (N={cfg.num_rephrasings}, G={cfg.num_generations}, seed {cfg.seed})"
    )
    table.add_column("metric")
    table.add_column("first half", justify="right")
    table.add_column("second half", justify="right")
    for key, label in [
        ("tagrpo/pool/zero_std", "uniform-reward share, pool"),
        ("tagrpo/original/zero_std", "uniform-reward share, q0 only (GRPO's view)"),
        ("tagrpo/rescued", "rescued questions (q0 uniform, pool mixed)"),
    ] + [
        (f"tagrpo/reward/variant_{n}", f"mean reward, variant {n}" + (" (q0)" if n == 0 else ""))
        for n in range(cfg.num_rephrasings + 1)
    ]:
        first, second = _mean(records, key, "first"), _mean(records, key, "second")
        summary[key] = {"first_half": first, "second_half": second}
        table.add_row(label, f"{first:.3f}", f"{second:.3f}")
    console.print(table)
    console.print(
        f"held-out accuracy on q0 (narrative form), {cfg.eval_samples} samples at T=1: "
        f"{before:.3f} -> {after:.3f}   rollouts spent: {summary['rollouts']:.0f}"
    )
    with open(os.path.join(cfg.output_dir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
    return summary
