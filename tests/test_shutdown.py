"""tagrpo.trainer.shutdown on a one-process gloo group: what the exit hook releases, and what it cannot."""

from __future__ import annotations

import gc
import logging
import weakref
from types import SimpleNamespace

import pytest
import torch
import torch.distributed as dist

from tagrpo.trainer import shutdown
from tagrpo.trainer.shutdown import _TRAINERS, shutdown_distributed, shutdown_distributed_at_exit


class _Trainer(SimpleNamespace):
    """A trainer's attributes that the hook touches; hashable by identity, as a real trainer is."""

    __hash__ = object.__hash__


class _Accelerator:
    def __init__(self, model):
        self._models = [model]

    def free_memory(self):
        self._models = []


@pytest.fixture
def gloo_group(tmp_path):
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    yield weakref.ref(dist.group.WORLD)
    if dist.is_initialized():
        dist.destroy_process_group()


def _wrapped_trainer():
    model = torch.nn.Linear(2, 2)
    ddp = torch.nn.parallel.DistributedDataParallel(model)  # holds the group (attribute and reducer)
    return _Trainer(model=model, model_wrapped=ddp, accelerator=_Accelerator(ddp))


def test_nothing_to_do_without_a_group():
    assert not dist.is_initialized()
    assert shutdown_distributed() is None


def test_releases_a_live_trainers_wrappers_and_frees_the_group(gloo_group):
    trainer = _wrapped_trainer()
    dist.all_reduce(torch.ones(3))  # a finished collective, as after a training step
    shutdown_distributed_at_exit(trainer)
    assert shutdown_distributed() is True
    assert not dist.is_initialized() and gloo_group() is None  # the object is gone: gloo's threads are joined
    assert trainer.model_wrapped is trainer.model and trainer.accelerator._models == []


def test_warns_when_something_else_keeps_the_group(gloo_group, caplog):
    outside = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))  # not the trainer's: not released
    with caplog.at_level(logging.WARNING, logger="tagrpo.trainer.shutdown"):
        assert shutdown_distributed() is False
    assert "still referenced at exit" in caplog.text and gloo_group() is not None
    del outside
    gc.collect()
    assert gloo_group() is None


def test_registered_once_however_many_trainers(monkeypatch):
    registered = []  # atexit's list, as register / unregister leave it
    fake = SimpleNamespace(register=registered.append, unregister=lambda f: registered.remove(f) if f in registered
                           else None)
    monkeypatch.setattr(shutdown, "atexit", fake)
    held = len(_TRAINERS)
    first, second = _Trainer(), _Trainer()
    shutdown_distributed_at_exit(first)
    shutdown_distributed_at_exit(second)
    assert registered == [shutdown_distributed] and len(_TRAINERS) == held + 2
    del first, second
    gc.collect()
    assert len(_TRAINERS) == held  # held weakly: the hook never keeps a trainer alive
