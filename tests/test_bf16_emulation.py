"""tagrpo.common.bf16: bf16 matrix products through fp32 kernels, rounded as a native kernel rounds them."""

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from tagrpo.common import bf16
from tagrpo.common.bf16 import bf16_context, emulated_bf16

BF = torch.bfloat16


def _row_times_column(a: list[float], b: list[float], dtype=BF) -> torch.Tensor:
    return torch.tensor([a], dtype=dtype) @ torch.tensor([b], dtype=dtype).T  # (1, 1)


class _Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in bf16.PRODUCTS:
            self.seen.append((str(func), [a.dtype for a in args if isinstance(a, torch.Tensor)]))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize(("b", "expected"), [
    # 1 + 2**-8 lies halfway between 1 and the next bf16 (1 + 2**-7): to even, 1
    ([1.0, 2.0**-8], 1.0),
    # 1 + 3 * 2**-8 lies halfway between 1 + 2**-7 (odd significand) and 1 + 2**-6 (even): 1 + 2**-6
    ([1.0, 3 * 2.0**-8], 1.0 + 2.0**-6),
    # exact in bf16: no rounding
    ([7.0, 11.0], 1 * 7.0 + 1 * 11.0),
])
def test_product_is_the_fp32_sum_rounded_to_nearest_even(b, expected):
    recorder = _Recorder()
    with recorder, emulated_bf16():
        got = _row_times_column([1.0, 1.0], b)
    assert recorder.seen == [("aten.mm.default", [torch.float32, torch.float32])]  # computed in fp32, then rounded
    assert got.dtype == BF
    assert got.item() == expected
    assert _row_times_column([1.0, 1.0], b).item() == expected  # what torch's own bf16 kernel gives


def test_fp32_products_pass_untouched():
    with emulated_bf16():
        got = _row_times_column([1.0, 1.0], [1.0, 2.0**-8], dtype=torch.float32)
    assert got.dtype == torch.float32
    assert got.item() == 1.0 + 2.0**-8


def test_linear_forward_and_backward_reach_fp32_kernels():
    """Under autocast a linear layer's forward and both backward products run as fp32 products; its gradients are
    the native kernel's."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(8, 4)
    x = torch.randn(3, 8, requires_grad=True)  # (B, D)

    def run(emulated: bool):
        layer.zero_grad()
        x.grad = None
        recorder = _Recorder()
        with recorder, (emulated_bf16() if emulated else bf16_context("cpu", "native")):
            with torch.autocast("cpu", dtype=BF):
                y = layer(x)  # (B, 4)
            y.float().square().sum().backward()
        return y, layer.weight.grad.clone(), x.grad.clone(), recorder.seen

    y, w_grad, x_grad, seen = run(emulated=True)
    y_native, w_native, x_native, seen_native = run(emulated=False)
    assert y.dtype == BF
    assert len(seen) == 3 and all(dtypes and set(dtypes) == {torch.float32} for _, dtypes in seen)
    assert len(seen_native) == 3 and all(BF in dtypes for _, dtypes in seen_native)
    torch.testing.assert_close(y, y_native, rtol=2**-7, atol=0)  # at most one bf16 step apart
    torch.testing.assert_close(w_grad, w_native, rtol=2**-6, atol=1e-6)
    torch.testing.assert_close(x_grad, x_native, rtol=2**-6, atol=1e-6)


def test_batched_products_run_in_fp32_with_their_scalars_and_round_like_native_ones():
    torch.manual_seed(1)
    a, b = torch.randn(2, 5, 16).to(BF), torch.randn(2, 16, 3).to(BF)  # (B, M, K), (B, K, N)
    bias = torch.randn(2, 5, 3).to(BF)  # (B, M, N)
    recorder = _Recorder()
    with recorder, emulated_bf16():
        got, got_add = a @ b, torch.baddbmm(bias, a, b, beta=0.5, alpha=2.0)
    assert [name for name, _ in recorder.seen] == ["aten.bmm.default", "aten.baddbmm.default"]
    assert all(set(dtypes) == {torch.float32} for _, dtypes in recorder.seen)
    assert got.dtype == got_add.dtype == BF
    exact = (a.double() @ b.double()).to(BF)
    exact_add = (0.5 * bias.double() + 2.0 * (a.double() @ b.double())).to(BF)
    # the fp32 sum may differ from the exact one in its last bits: the results are one bf16 step apart at most
    torch.testing.assert_close(got, exact, rtol=2**-7, atol=0)
    torch.testing.assert_close(got_add, exact_add, rtol=2**-7, atol=2**-7)


def test_mixed_dtypes_are_left_to_the_kernel():
    a, b = torch.ones(2, 3, dtype=BF), torch.ones(3, 2)  # (M, K) bf16, (K, N) fp32
    with emulated_bf16(), pytest.raises(RuntimeError):
        a @ b  # torch's own kernels refuse the pair; the mode does not widen it


def test_path_names_the_machine_and_bad_paths_are_refused(monkeypatch):
    monkeypatch.setattr(bf16, "native_bf16", lambda device: False)
    assert bf16.bf16_path("cpu") == "emulated"
    assert isinstance(bf16_context("cpu"), TorchDispatchMode)
    monkeypatch.setattr(bf16, "native_bf16", lambda device: True)
    assert bf16.bf16_path("cpu") == "native"
    assert not isinstance(bf16_context("cpu"), TorchDispatchMode)
    with pytest.raises(ValueError, match="expected one of native, emulated"):
        bf16_context("cpu", "fast")


def test_a_bf16_cell_runs_inside_its_path_and_records_it(monkeypatch):
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    from tagrpo.toy import smollm_sums

    modes = []

    def fake(spec, out, held, rows, render):
        modes.append(type(_get_current_dispatch_mode()).__name__)
        return {"spec": spec}

    monkeypatch.setattr(smollm_sums, "_compute", fake)
    monkeypatch.setattr(bf16, "native_bf16", lambda device: False)
    assert smollm_sums.compute({"device": "cpu"}, "out")["bf16"] == "emulated"
    monkeypatch.setattr(bf16, "native_bf16", lambda device: True)
    assert smollm_sums.compute({"device": "cpu"}, "out")["bf16"] == "native"
    assert "bf16" not in smollm_sums.compute({"device": "cpu", "precision": "fp32"}, "out")  # a smoke run's fp32
    assert modes == ["EmulatedBF16", "NoneType", "NoneType"]
