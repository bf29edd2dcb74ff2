"""A CPU platform for verl 0.9.1, loaded through verl's plugin API: the end-to-end tier only (``make test-verl-e2e``).

Stock verl has no CPU platform: NCCL, a CUDA device and Ray GPU resources are wired in, ``trainer.device=cpu`` is
rewritten to the detected platform, and the FSDP engines are registered for cuda and npu only. This module is
imported by ``import verl`` in every process (``VERL_USE_EXTERNAL_MODULES=verl_cpu_platform``; ``VERL_PLATFORM=cpu``
selects it) and, without editing verl, supplies what a CPU run needs:

- ``PlatformCPU`` registered as ``cpu``: device ``cpu`` (its module ``torch.cpu`` plus the memory and RNG calls
  verl makes of ``torch.cuda``), ``current_device()`` is ``"cpu"`` (verl builds
  ``torch.device(current_device())``), gloo, no IPC, no profiler; Ray's resource stays ``GPU``, which the test
  declares in ``ray.init`` (verl asks for one per worker);
- verl's FSDP engines registered under device ``cpu`` as well;
- a process-group backend torch accepts: verl asks for ``"cpu:gloo,{device}:{backend}"``, here
  ``"cpu:gloo,cpu:gloo"``, which torch rejects; it becomes ``"gloo"``;
- FSDP2's CPU offload (the reference model) without pinned memory, which needs an accelerator.

vLLM's side (plain ``F.linear`` so weight sync works) is ``vllm_cpu_patch``, a vLLM general plugin.
"""

from __future__ import annotations

import contextlib
import os
from types import ModuleType
from typing import Any

import torch
import torch.distributed
from verl.plugin.platform.platform_base import PlatformBase
from verl.plugin.platform.platform_manager import PlatformRegistry


def _cpu_device_module() -> ModuleType:
    """``torch.cpu`` with the ``torch.cuda`` calls verl makes: memory statistics (0 or the machine's), RNG state."""
    module = ModuleType("verl_cpu_device")
    module.__dict__.update({k: getattr(torch.cpu, k) for k in dir(torch.cpu) if not k.startswith("_")})
    zero = lambda *args, **kwargs: 0  # noqa: E731
    nothing = lambda *args, **kwargs: None  # noqa: E731
    for name in ("memory_reserved", "memory_allocated", "max_memory_reserved", "max_memory_allocated"):
        setattr(module, name, zero)
    nothing_names = ("empty_cache", "ipc_collect", "set_per_process_memory_fraction", "set_device")
    for name in (*nothing_names, "reset_peak_memory_stats"):
        setattr(module, name, nothing)
    pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    module.mem_get_info = lambda *args: (os.sysconf("SC_AVPHYS_PAGES") * size, pages * size)
    module.get_rng_state = lambda *args: torch.get_rng_state()
    module.set_rng_state = lambda state, *args: torch.set_rng_state(state)
    module.get_device_name = lambda *args: "cpu"
    module.device_count = lambda: 1
    return module


_DEVICE_MODULE = _cpu_device_module()


@PlatformRegistry.register(platform="cpu")
class PlatformCPU(PlatformBase):
    """verl's platform interface on the CPU: every device call is a no-op or the CPU's answer."""

    @property
    def device_name(self) -> str:
        return "cpu"

    @property
    def vendor_name(self) -> str:
        return "cpu"

    @property
    def device_module(self) -> ModuleType:
        return _DEVICE_MODULE

    def is_available(self) -> bool:
        return True

    def current_device(self) -> str:
        return "cpu"

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None

    def synchronize(self, device_index: int | None = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple[int | None, int | None]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        return "CUDA_VISIBLE_DEVICES"

    @contextlib.contextmanager
    def nvtx_range(self, msg: str):
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        return "GPU"

    def ray_noset_envvars(self) -> list[str]:
        return ["RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES"]

    def is_ipc_supported(self) -> bool:
        return False

    def cudart(self) -> Any:
        return None


def _gloo_only(init_process_group):
    def init(*args, backend: str | None = None, **kwargs):
        if backend and {part.split(":")[-1] for part in backend.split(",")} == {"gloo"}:
            backend = "gloo"
        return init_process_group(*args, backend=backend, **kwargs)

    init.gloo_only = True
    return init


def _register_engines() -> None:
    from torch.distributed.fsdp import CPUOffloadPolicy
    from verl.workers.engine.base import EngineRegistry
    from verl.workers.engine.fsdp import transformer_impl

    class UnpinnedCPUOffloadPolicy(CPUOffloadPolicy):
        def __init__(self, pin_memory: bool = False):
            super().__init__(pin_memory=False)

    transformer_impl.CPUOffloadPolicy = UnpinnedCPUOffloadPolicy
    engines = EngineRegistry._engines
    for model_type, cls in (
        ("language_model", transformer_impl.FSDPEngineWithLMHead),
        ("value_model", transformer_impl.FSDPEngineWithValueHead),
    ):
        for backend in ("fsdp", "fsdp2"):
            if "cpu" not in engines.get(model_type, {}).get(backend, {}):
                EngineRegistry.register(model_type=model_type, backend=backend, device="cpu")(cls)


if not getattr(torch.distributed.init_process_group, "gloo_only", False):
    torch.distributed.init_process_group = _gloo_only(torch.distributed.init_process_group)
_register_engines()
