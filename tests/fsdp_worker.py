"""Run under ``accelerate launch --config_file configs/accelerate/<name>.yaml``: ``mp_worker``'s two TA-GRPO steps
(pools straddling two gloo processes), then the final model saved as ``tagrpo train`` saves it, and what the
trainer's model is; each rank writes ``<out>/rank<k>.json``, ``rank<k>_exit.json`` (``mp_worker``) and
``rank<k>_model.json`` for tests/test_fsdp.py.

accelerate 1.16 turns its FSDP plugin on only for accelerator devices: on the CPU, ``AcceleratorState`` keeps
``DistributedType.MULTI_CPU`` and ``Accelerator.prepare`` wraps the model in DDP, silently, with the FSDP config
read and ignored. torch's FSDP2 (``fully_shard``) itself shards over gloo on the CPU, so with ``--fsdp-on-cpu`` this
worker first makes accelerate keep the plugin it was given there (``honour_fsdp_on_cpu``): the test then runs
accelerate's FSDP2 preparation and TRL's FSDP paths, which on GPUs need no such patch.
"""

from __future__ import annotations

import functools
import json
import sys

import mp_worker


def honour_fsdp_on_cpu() -> None:
    """Make ``AcceleratorState`` use the FSDP plugin on the CPU, where accelerate 1.16 falls back to DDP."""
    from accelerate.state import AcceleratorState
    from accelerate.utils import DistributedType

    init = AcceleratorState.__init__

    @functools.wraps(init)
    def patched(self, *args, **kwargs):
        init(self, *args, **kwargs)  # a later call re-reads PartialState's MULTI_CPU: set FSDP again each time
        if kwargs.get("fsdp_plugin") is not None and getattr(self, "fsdp_plugin", None) is None:
            self.fsdp_plugin = kwargs["fsdp_plugin"]
        if getattr(self, "fsdp_plugin", None) is not None and self.distributed_type == DistributedType.MULTI_CPU:
            self.distributed_type = DistributedType.FSDP

    AcceleratorState.__init__ = patched


def describe(trainer) -> dict:
    """The accelerate mode in force and how this rank holds the model's parameters."""
    from torch.distributed.fsdp import FSDPModule
    from torch.distributed.tensor import DTensor

    params = dict(trainer.model.named_parameters())
    sharded = [p for p in params.values() if isinstance(p, DTensor)]
    return {
        "distributed_type": trainer.accelerator.distributed_type.value,
        "fully_sharded": isinstance(trainer.model, FSDPModule),
        "parameters": len(params),
        "sharded_parameters": len(sharded),
        "local_elements": sum(p.to_local().numel() for p in sharded),
        "full_elements": sum(p.numel() for p in sharded),
    }


if __name__ == "__main__":
    model_dir, out, *flags = sys.argv[1:]
    if "--fsdp-on-cpu" in flags:
        honour_fsdp_on_cpu()
    mp_worker.main(model_dir, out)
    trainer = mp_worker.ALIVE[0]
    trainer.save_model(f"{out}/final")  # as `tagrpo train` does at the end: every rank takes part, rank 0 writes
    with open(f"{out}/rank{trainer.accelerator.process_index}_model.json", "w") as f:
        json.dump(describe(trainer), f)
