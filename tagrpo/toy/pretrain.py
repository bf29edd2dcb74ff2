"""``tagrpo toy pretrain``: supervised pretraining of the embedded world's base model.

The corpus over-represents the symbolic form, so the resulting base model solves symbolic questions more often
than narrative ones. The output is a Hugging Face model directory (weights, config, tokenizer) that
``tagrpo train`` and the evaluation load like any real model; it is cached (a marker file records the settings)
and deterministic given the seed.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field

import torch
from rich.console import Console
from rich.progress import Progress

from tagrpo.toy.model import build_tiny_model
from tagrpo.toy.tokenizer import build_char_tokenizer
from tagrpo.toy.world import corpus

MARKER = "tagrpo_pretrain.json"


@dataclass
class PretrainConfig:
    """Settings of ``tagrpo toy pretrain``."""

    output_dir: str = "outputs/toy_base"
    steps: int = 300
    seed: int = 0
    batch_size: int = 96
    learning_rate: float = 2e-3
    corpus_size: int = 30000
    hidden_size: int = 160
    num_layers: int = 4
    architecture: str = "qwen3"
    mix: dict = field(default_factory=lambda: {"symbolic": 0.86, "narrative": 0.06, "words": 0.04, "reordered": 0.04})


def encode_pairs(tokenizer, pairs):
    """Right-padded ``input_ids`` (S, L), ``attention_mask`` (S, L) and ``labels`` (S, L), -100 off the solution."""
    ids, labels = [], []
    for prompt, completion in pairs:
        p = tokenizer(prompt)["input_ids"]
        c = tokenizer(completion)["input_ids"] + [tokenizer.eos_token_id]
        ids.append(p + c)
        labels.append([-100] * len(p) + c)
    width = max(map(len, ids))
    pad = tokenizer.pad_token_id
    input_ids = torch.tensor([x + [pad] * (width - len(x)) for x in ids])  # (S, L)
    attention = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in ids])  # (S, L)
    target = torch.tensor([y + [-100] * (width - len(y)) for y in labels])  # (S, L)
    return input_ids, attention, target


def pretrain(model, tokenizer, pairs, steps: int, batch_size: int = 96, lr: float = 2e-3, seed: int = 0):
    """AdamW with linear decay over ``steps``; returns the training loss of every step."""
    input_ids, attention, target = encode_pairs(tokenizer, pairs)
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 - s / max(steps, 1))
    model.train()
    losses = []
    with Progress(transient=True) as progress:
        task = progress.add_task("pretraining", total=steps)
        for _ in range(steps):
            idx = torch.randint(0, input_ids.size(0), (batch_size,), generator=gen)  # (S_b,)
            used = int(attention[idx].sum(0).nonzero().max()) + 1
            out = model(
                input_ids=input_ids[idx, :used], attention_mask=attention[idx, :used], labels=target[idx, :used]
            )
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            losses.append(out.loss.item())
            progress.update(task, advance=1, description=f"pretraining, loss {losses[-1]:.3f}")
    model.eval()
    return losses


def pretrain_base(cfg: PretrainConfig, console: Console | None = None) -> str:
    """The base model directory: reused when its marker matches ``cfg``, else pretrained and saved."""
    console = console or Console()
    marker = os.path.join(cfg.output_dir, MARKER)
    settings = asdict(cfg)
    settings.pop("output_dir")
    if os.path.exists(marker):
        with open(marker, encoding="utf-8") as f:
            if json.load(f).get("settings") == settings:
                console.print(f"base model: reusing {cfg.output_dir}")
                return cfg.output_dir
    torch.manual_seed(cfg.seed)
    tok = build_char_tokenizer()
    model = build_tiny_model(
        tok, cfg.architecture, hidden_size=cfg.hidden_size, num_layers=cfg.num_layers, num_heads=4, seed=cfg.seed
    )
    pairs = corpus(cfg.corpus_size, cfg.seed, cfg.mix)
    losses = pretrain(
        model, tok, pairs, steps=cfg.steps, batch_size=cfg.batch_size, lr=cfg.learning_rate, seed=cfg.seed
    )
    model.save_pretrained(cfg.output_dir)
    tok.save_pretrained(cfg.output_dir)
    with open(marker, "w", encoding="utf-8") as f:
        json.dump({"settings": settings, "losses": losses}, f)
    params = sum(p.numel() for p in model.parameters())
    console.print(
        f"base model: {params / 1e6:.2f}M parameters, {cfg.steps} steps, loss {losses[0]:.3f} -> {losses[-1]:.3f}, "
        f"saved to {cfg.output_dir}"
    )
    return cfg.output_dir
