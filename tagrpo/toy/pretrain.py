"""``tagrpo toy pretrain``: supervised pretraining of the embedded world's base model.

The corpus over-represents the symbolic form and holds only a trace (1.5%) of the spelled-out narrative that is
q0's form, so the resulting base model solves symbolic questions far more often than q0 (about 0.8 against 0.4
on held-out problems). The output is a Hugging Face model directory (weights, config, tokenizer) that
``tagrpo train`` and the evaluation load like any real model; it is cached (a marker file records the settings)
and deterministic given the seed: pretraining runs on one thread, because the base's quality is sensitive to the
order of float sums (1.5% and 2% of spelled questions gave q0 accuracies of 0.15 and 0.65).

The default recipe's result is shipped in ``tagrpo/toy/checkpoint`` (3.9 MB), so that the demo starts at once;
``tagrpo toy pretrain --output-dir DIR`` rebuilds it bit for bit on this machine (about two minutes) and
``resolve_base`` uses the shipped copy only while its marker matches ``PretrainConfig()``.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import transformers
from rich.console import Console
from rich.progress import Progress

from tagrpo.common.fields import helped
from tagrpo.toy.model import build_tiny_model
from tagrpo.toy.tokenizer import build_world_tokenizer
from tagrpo.toy.world import corpus, tokenizer_texts

MARKER = "tagrpo_pretrain.json"
RECIPE = 2  # bump when the world, the tokenizer or the training loop changes what a PretrainConfig produces
SHIPPED = Path(__file__).parent / "checkpoint"


@dataclass
class PretrainConfig:
    """Settings of ``tagrpo toy pretrain``."""

    output_dir: str = helped("outputs/toy_base", "the model directory (reused when its marker matches)")
    steps: int = helped(300, "optimizer steps")
    seed: int = helped(0, "fixes the corpus, the initialisation and the batches")
    batch_size: int = helped(96, "sequences per step")
    learning_rate: float = helped(2e-3, "AdamW, decayed linearly to 0")
    corpus_size: int = helped(30000, "question-solution pairs drawn from the train triples")
    hidden_size: int = helped(160, "model width")
    num_layers: int = helped(4, "transformer layers")
    architecture: str = helped("qwen3", "qwen3 or llama")
    mix: dict = field(
        default_factory=lambda: {
            "symbolic": 0.775, "narrative": 0.05, "words": 0.12, "reordered": 0.04, "spelled": 0.015
        },
        metadata={"help": "share of each surface form in the corpus, as JSON"},
    )


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
            idx = torch.randint(0, input_ids.size(0), (batch_size,), generator=gen)  # (S,)
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


def recipe_settings(cfg, recipe: int = RECIPE) -> dict:
    settings = asdict(cfg)
    settings.pop("output_dir")
    return {**settings, "recipe": recipe}


def marker_matches(directory, cfg, recipe: int = RECIPE) -> bool:
    marker = os.path.join(directory, MARKER)
    if not os.path.exists(marker):
        return False
    with open(marker, encoding="utf-8") as f:
        return json.load(f).get("settings") == recipe_settings(cfg, recipe)


def resolve_base(base_dir: str | None, fallback_dir: str, console: Console | None = None) -> str:
    """The base model for the demo: ``base_dir`` (reused or pretrained there with the default recipe), else the
    shipped checkpoint while it matches the default recipe, else one pretrained into ``fallback_dir``."""
    console = console or Console()
    if base_dir is None and marker_matches(SHIPPED, PretrainConfig()):
        console.print(f"base model: the shipped checkpoint {SHIPPED} (rebuild: tagrpo toy pretrain)")
        return str(SHIPPED)
    if base_dir is None:
        console.print("base model: the shipped checkpoint does not match the pretraining recipe; pretraining")
    return pretrain_base(PretrainConfig(output_dir=base_dir or fallback_dir), console)


def pretrain_base(cfg: PretrainConfig, console: Console | None = None) -> str:
    """The base model directory: reused when its marker matches ``cfg``, else pretrained and saved."""
    return build_base(cfg, RECIPE, lambda: corpus(cfg.corpus_size, cfg.seed, cfg.mix), tokenizer_texts, console)


def build_base(cfg, recipe: int, make_pairs, make_texts, console: Console | None = None) -> str:
    """Pretrain ``cfg`` (a ``PretrainConfig``-like dataclass) on ``make_pairs()`` with a tokenizer learned on
    ``make_texts()``; reused when the marker in ``cfg.output_dir`` records the same settings and ``recipe``."""
    console = console or Console()
    settings = recipe_settings(cfg, recipe)
    if marker_matches(cfg.output_dir, cfg, recipe):
        console.print(f"base model: reusing {cfg.output_dir}")
        return cfg.output_dir
    marker = os.path.join(cfg.output_dir, MARKER)
    console.print(f"base model: pretraining {cfg.steps} steps into {cfg.output_dir} (one thread, reproducible)")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the base's quality is sensitive to float summation order: keep it fixed
    try:
        torch.manual_seed(cfg.seed)
        tok = build_world_tokenizer(make_texts())
        model = build_tiny_model(
            tok, cfg.architecture, hidden_size=cfg.hidden_size, num_layers=cfg.num_layers, num_heads=4, seed=cfg.seed
        )
        losses = pretrain(
            model, tok, make_pairs(), steps=cfg.steps, batch_size=cfg.batch_size, lr=cfg.learning_rate, seed=cfg.seed
        )
    finally:
        torch.set_num_threads(threads)
    transformers.utils.logging.disable_progress_bar()
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
