"""Shut torch.distributed down at interpreter exit, while Python is still alive, so that gloo cannot abort the exit.

The cause (seen in core dumps of ``accelerate launch`` runs on CPU): accelerate creates the process group
(``PartialState``) and nobody destroys it; neither transformers' ``Trainer`` nor TRL calls
``Accelerator.end_training()``. A gloo worker thread (``ProcessGroupGloo::runLoop``) destroys each finished
collective after the waiting thread has moved on; when that collective's tensors have Python objects (the step's
last all-gather, say), its destructor takes the GIL to drop them. If the main thread has entered
``Py_FinalizeEx`` by then, taking the GIL ends the worker thread with ``pthread_exit``, whose unwinding through
that ``noexcept`` destructor calls ``std::terminate``: "terminate called without an active exception", SIGABRT,
and the launcher kills the other ranks. The later the worker thread runs, the likelier: issue 17 saw it in 2 of
23 CI runs.

``destroy_process_group()`` alone does not help: gloo has no ``shutdown()``, so its threads live as long as the
``ProcessGroupGloo`` object, which DDP's wrapper and reducer keep alive (measured: the group outlived
``destroy_process_group()`` while the trainer was alive, and the abort still happened). At exit, before
finalization, :func:`shutdown_distributed` therefore drops each registered trainer's distributed wrappers
(``model_wrapped`` back to the bare model, ``Accelerator.free_memory()``), destroys the default group and
collects garbage: the group's destructor then joins gloo's threads with the GIL released, and the finished
collectives are destroyed while Python can still take them.

A model sharded by FSDP2 keeps the group alive past that: its DTensors' device mesh holds it, and torch's DTensor
caches (sharding propagation, redistribution plans) hold the mesh after the model is gone. tagrpo does not clear
torch's private caches, so with FSDP the group outlives this hook (``tests/test_fsdp.py`` records it; the exits
there were clean). The warning below is given only where gloo takes part (CPU, or FSDP's "cuda:nccl,cpu:gloo").
"""

from __future__ import annotations

import atexit
import gc
import logging
import weakref

logger = logging.getLogger(__name__)
_TRAINERS: weakref.WeakSet = weakref.WeakSet()


def shutdown_distributed() -> bool | None:
    """Release the registered trainers' wrappers, destroy the default process group and collect garbage.

    Returns None when no process group is initialized, True when the group object is gone afterwards (its threads
    joined), False when something else still holds it (then a warning says so).
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return None
    group, backend = weakref.ref(dist.group.WORLD), str(dist.get_backend())
    for trainer in list(_TRAINERS):
        trainer.model_wrapped = trainer.model
        trainer.accelerator.free_memory()
    dist.destroy_process_group()
    gc.collect()
    if group() is not None:
        if "gloo" in backend:
            logger.warning(
                "the default process group is still referenced at exit (by a model sharded with FSDP, or one wrapped "
                "for distributed training outside the trainer): gloo's threads may abort the process; drop that "
                "reference or call tagrpo.trainer.shutdown.shutdown_distributed() yourself once it is gone"
            )
        return False
    return True


def shutdown_distributed_at_exit(trainer) -> None:
    """Register ``trainer`` for :func:`shutdown_distributed`, which runs once at exit however many are registered."""
    _TRAINERS.add(trainer)
    atexit.unregister(shutdown_distributed)
    atexit.register(shutdown_distributed)
