"""Supervised pretraining of a tiny causal LM on (prompt, completion) pairs; loss on completion tokens only."""

from __future__ import annotations

import torch
from rich.progress import Progress


def encode_pairs(tokenizer, pairs):
    """Right-padded ``input_ids`` (S, L), ``attention_mask`` (S, L) and ``labels`` (S, L) with -100 off-target."""
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
    """AdamW with linear decay over ``steps``; returns the list of training losses (one per step)."""
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
            out = model(input_ids=input_ids[idx], attention_mask=attention[idx], labels=target[idx])
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            losses.append(out.loss.item())
            progress.update(task, advance=1, description=f"pretraining loss {losses[-1]:.3f}")
    model.eval()
    return losses
