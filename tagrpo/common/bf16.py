"""bf16 matrix products on a CPU without native bf16: the same arithmetic, through fp32 kernels.

A native bf16 matrix product on a CPU (oneDNN on AVX512-BF16 or AMX) multiplies bf16 operands, sums the products in
fp32 and rounds the result to bf16. On an AVX2-only CPU torch has no such kernel and falls back to a reference loop:
a bf16 matmul measured 35x and 53x slower than fp32 on two AMD EPYC machines (torch 2.13), and one forward and
backward pass of SmolLM2-135M over 16 x 120 tokens took more than 800 s against 24 s in fp32.

``emulated_bf16()`` runs every bf16 ``mm``, ``addmm``, ``bmm`` and ``baddbmm`` (what linear layers and ``matmul``
reach, forward and backward) as the fp32 product of its operands, upcast, rounded back to bf16 (to nearest even, as
oneDNN rounds). Upcasting is exact (bf16 is fp32 with the low 16 bits of the significand zero), and so is each
product of two bf16 numbers in fp32 (8 + 8 significand bits fit in 24) short of underflow, so the emulated product
differs from a native one in the order of its fp32 sums, as native kernels differ among themselves (AVX512-BF16
against AMX, or another blocking). Deviations from a native run:

* attention (``scaled_dot_product_attention``) and elementwise bf16 ops run in torch's own bf16 CPU kernels, which
  also compute in fp32 and round; they are not intercepted (they are not the slow part);
* the native kernels flush subnormal results to zero, fp32 kernels keep them (far below anything a model uses);
* an op whose tensors are not all bf16 runs as it is (the native kernel refuses mixed dtypes, and so does this);
* under the mode every aten op passes through a Python call (a few microseconds), and each intercepted one makes an
  fp32 copy of its operands: one forward and backward pass took 1.35x fp32's time (``studies/bf16_equivalence.md``).

A GPU counts as native (``bf16_path``): cuBLAS sums bf16 products on tensor cores, by default allowed to reduce in
reduced precision (``torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction``); that is assumed, not
measured, to be the same precision. ``bf16_path(device)`` says which a run gets: ``"native"`` or ``"emulated"``;
``studies/bf16_equivalence.py`` measures the emulated path against torch's native kernel.
"""

from __future__ import annotations

import contextlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from tagrpo.common.machine import native_bf16

_aten = torch.ops.aten
PRODUCTS = frozenset({_aten.mm.default, _aten.addmm.default, _aten.bmm.default, _aten.baddbmm.default})
PATHS = ("native", "emulated")


class EmulatedBF16(TorchDispatchMode):
    """Intercepts the matrix products (``PRODUCTS``) whose tensors are all bf16 and computes them with ``product``;
    every other op runs as it is."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if func in PRODUCTS and tensors and all(a.dtype == torch.bfloat16 for a in tensors):
            wide = [a.float() if isinstance(a, torch.Tensor) else a for a in args]
            return self.product(func, wide, kwargs).to(torch.bfloat16)
        return func(*args, **kwargs)

    def product(self, func, wide: list, kwargs: dict) -> torch.Tensor:
        """The fp32 product of the upcast operands (``wide``); a measurement overrides it to sum in another order."""
        return func(*wide, **kwargs)


def emulated_bf16() -> EmulatedBF16:
    """A context in which bf16 matrix products run as rounded fp32 ones (see the module doc); thread-local, like
    autocast: enter it on the thread that runs the forward and backward passes."""
    return EmulatedBF16()


def bf16_path(device: str) -> str:
    """``"native"`` where bf16 matrix products have a native kernel (``machine.native_bf16``), else ``"emulated"``."""
    return "native" if native_bf16(device) else "emulated"


def bf16_context(device: str, path: str | None = None):
    """The context a bf16 run on ``device`` needs: nothing where native, ``emulated_bf16()`` elsewhere; ``path``
    (one of ``PATHS``) overrides the machine's."""
    path = path or bf16_path(device)
    if path not in PATHS:
        raise ValueError(f"bf16 path {path!r}: expected one of {', '.join(PATHS)}")
    return emulated_bf16() if path == "emulated" else contextlib.nullcontext()
