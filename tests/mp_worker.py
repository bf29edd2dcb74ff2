"""Run under ``accelerate launch --num_processes 2 --cpu``: TA-GRPO steps whose pools straddle the processes.

Each rank writes what it saw to ``<out>/rank<k>.json``; tests/test_multiprocess.py checks it.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import sys
import weakref

import torch
from conftest import pool_rows
from trainer_utils import make_trainer, spy

from tagrpo.core import pooled_advantages

PROMPT = re.compile(r"Q(\d+) v(\d+):")


GROUP = []  # a weak reference to the default process group, taken after training
ALIVE = []  # the trainer, kept until exit as a script's global would be (the exit hook must not rely on its collection)


def record_exit_state(out: str) -> None:
    """Registered before the trainer exists, so it runs after the trainer's own exit hook (LIFO)."""
    import torch.distributed as dist

    state = {"initialized": dist.is_initialized(), "group_object_alive": GROUP[0]() is not None}
    with open(f"{out}/rank{os.environ['RANK']}_exit.json", "w") as f:
        json.dump(state, f)


def main(model_dir: str, out: str) -> None:
    atexit.register(record_exit_state, out)
    # 4 rows per micro-batch x 3 micro-batches = 12 rows per process, 24 per generation batch: three pools of 8,
    # the middle one split between the two processes.
    trainer = make_trainer(
        model_dir,
        pool_rows(num_questions=6),
        out,
        per_device_train_batch_size=4,
        gradient_accumulation_steps=3,
        max_steps=2,
    )
    generated, rewards, outputs, losses = [], [], [], []
    spy(trainer, "_generate_single_turn", generated)
    spy(trainer, "_calculate_rewards", rewards)
    spy(trainer, "_generate_and_score_completions", outputs)
    original_loss = trainer._compute_loss

    def loss_spy(model, inputs):
        losses.append(inputs["prompt_ids"][inputs["prompt_mask"].bool()].tolist())
        return original_loss(model, inputs)

    trainer._compute_loss = loss_spy
    trainer.train()
    GROUP.append(weakref.ref(torch.distributed.group.WORLD))
    ALIVE.append(trainer)
    tok = trainer.processing_class
    rank = trainer.accelerator.process_index
    steps = []
    for (gen_args, _, _), (_, _, per_func), (_, _, output) in zip(generated, rewards, outputs, strict=True):
        texts = [tok.decode(ids) for ids in gen_args[0]]
        rows = len(texts)
        all_adv = pooled_advantages(per_func[:, 0].view(-1, 4, 2), eps=1e-4).view(-1)
        steps.append(
            {
                "generated": [PROMPT.match(t).groups() for t in texts],
                "local_rows": rows,
                "advantages_match_core": torch.allclose(output["advantages"], all_adv[rank * rows : (rank + 1) * rows]),
            }
        )
    loss_prompts = [PROMPT.findall(tok.decode(ids)) for ids in losses]
    result = {
        "rank": rank,
        "world": trainer.accelerator.num_processes,
        "steps": steps,
        "loss_prompts": loss_prompts,
        "rollouts": trainer.rollouts,
    }
    with open(f"{out}/rank{rank}.json", "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
