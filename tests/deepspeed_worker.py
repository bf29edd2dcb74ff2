"""Run under ``accelerate launch --config_file configs/accelerate/zero<2|3>.yaml``: ``mp_worker``'s two TA-GRPO
steps under DeepSpeed ZeRO on two CPU processes, then the final model saved as ``tagrpo train`` saves it.

Each rank writes ``<out>/rank<k>.json``, ``rank<k>_exit.json`` (``mp_worker``) and ``rank<k>_model.json`` (the
accelerate mode and the ZeRO stage in force, how this rank holds the parameters) for tests/test_deepspeed.py.
"""

from __future__ import annotations

import functools
import json
import sys

import mp_worker
from trainer_utils import make_trainer

# accelerate runs DeepSpeed only when the Trainer does not ask for the CPU (``use_cpu`` drops the plugin); on a machine
# without an accelerator it finds no distributed backend of its own (``ddp_backend="gloo"`` gives it one), and
# transformers refuses TRL's default bf16 there without ``use_cpu`` ("Your setup doesn't support bf16/gpu").
mp_worker.make_trainer = functools.partial(make_trainer, use_cpu=False, ddp_backend="gloo", bf16=False)


def describe(trainer) -> dict:
    """The accelerate mode and ZeRO stage in force, how this rank holds the parameters (ZeRO-3 partitions them:
    ``ds_tensor`` is this rank's part) and how much of the fp32 optimizer copy it holds (ZeRO-2 and -3 partition it)."""
    engine = trainer.model_wrapped
    params = list(engine.module.parameters())
    partitioned = [p for p in params if hasattr(p, "ds_tensor")]
    optimizer = engine.optimizer
    fp32 = getattr(optimizer, "single_partition_of_fp32_groups", None) or optimizer.fp32_partitioned_groups_flat
    return {
        "distributed_type": trainer.accelerator.distributed_type.value,
        "engine": type(engine).__name__,
        "zero_stage": engine.zero_optimization_stage(),
        "parameters": len(params),
        "elements": sum(p.ds_numel if hasattr(p, "ds_numel") else p.numel() for p in params),
        "partitioned_parameters": len(partitioned),
        "local_parameter_elements": sum(p.ds_tensor.numel() for p in partitioned),
        "local_optimizer_elements": sum(t.numel() for t in fp32),
    }


if __name__ == "__main__":
    model_dir, out = sys.argv[1:]
    mp_worker.main(model_dir, out)
    trainer = mp_worker.ALIVE[0]
    trainer.save_model(f"{out}/final")
    with open(f"{out}/rank{trainer.accelerator.process_index}_model.json", "w") as f:
        json.dump(describe(trainer), f)
