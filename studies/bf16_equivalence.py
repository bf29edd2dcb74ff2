"""Is emulated bf16 (``tagrpo.common.bf16``) the precision a native bf16 machine computes? Measured before any cell of
``real_v3`` is computed with it.

    .venv/bin/python studies/bf16_equivalence.py            # resumable: each recomputed cell is kept
    .venv/bin/python studies/bf16_equivalence.py --render-only

Declared before running (2026-12-08), on a CPU without native bf16:

1. Products. SmolLM2-135M-Instruct's own bf16 weights (layer 0's ``q_proj``, ``k_proj``, ``gate_proj``,
   ``down_proj`` and the ``lm_head``), times seeded activations of 64 tokens, forward (``x W^T``), the input's
   gradient (``g W``) and the weight's (``g^T x``): each emulated product against torch's own bf16 kernel on this
   machine (the slow reference loop, which sums in fp32 and rounds as oneDNN does). Passed if every output is within
   ``MAX_STEPS`` bf16 step of the kernel's (the two differ only in the order of their fp32 sums).
2. Cells. The reasoning regime's base cells of test seeds ``SEEDS`` (committed, computed with native bf16 on an
   AVX512-BF16 EPYC) recomputed here with the emulated path: the same spec, model, questions and sampling seeds.
   Sampling diverges where a logit's last bit differs, so a cell is a new draw, not a copy: the primary measure is
   the paired difference of q0's pass@1 (emulated - native, one value per seed), passed if a TOST puts it within
   +-``MARGIN`` (5 pp, the study's own margin) at ``ALPHA``. Reported beside it: every form's accuracy and pass@8.

Decision rule: both pass, and ``real_v3``'s remaining cells may be computed with the emulated path (each cell
records its path). The JSON and ``studies/results/bf16_equivalence.md`` hold the numbers, the machine and the wall
time.

Amended after the first run (2026-12-08), which met part 2 and failed part 1: 99.9-100% of the outputs were
identical, but some lay up to 25,760 steps from the kernel's. The criterion was wrong, not the product: where a
sum cancels to near zero, two fp32 orders differ by an amount set by the terms, not by the small result, so a
distance in steps of the result has no bound. Part 1 now (a) takes the criterion that two fp32 orders must meet, the
textbook bound ``|a - b| <= 2 gamma_K sum_k |l_k r_k| + one bf16 step`` (``gamma_K = K u / (1 - K u)``, ``u =
2**-24``), passed if every emulated output is within it (two outputs one step apart score just under 1 of it), and
(b) reports beside it the native kernel against itself with the inner dimension permuted (a permutation drawn from
its own generator, so the operands are the first run's), which the first criterion rejects as well. The declared
criterion's verdict on the same operands stays in the JSON (``products_passed_as_declared``).

Added after a review (2026-12-08, before the runner-up cells' results): part 2 was about evaluation only (a bf16
model sampling), while the cells it admits are trained arms, and its pass@8 was reported, not tested. Now also
reported: pass@8's paired difference and its TOST at the same margin (not a criterion: 25 questions move pass@8 in
4 pp steps), and 3. Gradient: one forward and backward pass of SmolLM2-135M-Instruct under bf16 autocast over fp32
weights, as training runs it, on ``GRADIENT_BATCH`` seeded token rows: the whole gradient's relative distance from the
native kernel's, emulated and in fp32 (no autocast), and each pass's time (beside whatever else runs: the machine
record's load). Not a criterion either. Emulated was expected to lie far closer to native than fp32; the first run
put it at 2.0e-2 against fp32's 2.4e-2, and a check showed why: emulated with its sums reversed lies as far from the
emulated gradient (2.2e-2), because one rounding flip moves every later rounding, so the part now reports that
reversed order beside the others, the distance any other order of the same arithmetic has.
"""

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import time
from concurrent.futures import ProcessPoolExecutor
from statistics import mean

import torch

from tagrpo.common.bf16 import EmulatedBF16, emulated_bf16
from tagrpo.common.machine import machine
from tagrpo.evaluation.stats import equivalence, interval
from tagrpo.evaluation.tables import markdown_table

ROOT = os.path.dirname(os.path.abspath(__file__))
CELLS = os.path.join(ROOT, "results", "real_study_v3_cells", "test")
OUT = os.path.join(ROOT, "results", "bf16_equivalence")
SEEDS = (0, 1, 2, 3, 4)
MARGIN, ALPHA, MAX_STEPS = 0.05, 0.05, 1
TOKENS = 64
GRADIENT_BATCH = (2, 64)  # (rows, tokens)
LAYERS = ("model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj", "model.layers.0.mlp.gate_proj",
          "model.layers.0.mlp.down_proj", "lm_head")


def _ordered(x: torch.Tensor) -> torch.Tensor:
    """bf16 values as integers in the order of the values: neighbours differ by one."""
    bits = x.contiguous().view(torch.int16).int()
    return torch.where(bits < 0, -(bits & 0x7FFF), bits)


def _compare(native: torch.Tensor, other: torch.Tensor, bound: torch.Tensor) -> dict:
    """Share of ``other``'s outputs identical to ``native``'s, the largest distance in bf16 steps, and the largest
    difference as a share of the summation-order bound (``bound``, elementwise)."""
    steps = (_ordered(native) - _ordered(other)).abs()
    gap = (native.double() - other.double()).abs()
    return {"identical": float((steps == 0).double().mean()), "max_steps": int(steps.max()),
            "bound_share": float((gap / bound).max())}


def products() -> list[dict]:
    """Part 1: each product's outputs against the native kernel's: the emulated product, and (the reference added
    after the first run) the native kernel with the sum taken in another order (the inner dimension permuted)."""
    from transformers import AutoModelForCausalLM

    from tagrpo.models import fetch_model

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(fetch_model("smollm2-135m"), dtype=torch.bfloat16)
    weights = dict(model.named_modules())
    shuffle = torch.Generator().manual_seed(1)
    rows = []
    for name in LAYERS:
        w = weights[name].weight.detach()  # (O, I)
        x = torch.randn(TOKENS, w.shape[1]).to(torch.bfloat16)  # (T, I)
        g = (torch.randn(TOKENS, w.shape[0]) * 1e-2).to(torch.bfloat16)  # (T, O)
        for product, left, right in (("forward", x, w.T), ("input gradient", g, w), ("weight gradient", g.T, x)):
            native = left @ right  # (M, N)
            with emulated_bf16():
                emulated = left @ right  # (M, N)
            order = torch.randperm(left.shape[1], generator=shuffle)  # (K,)
            reordered = left[:, order] @ right[order, :]  # (M, N)
            rows.append({"layer": name, "product": product, "outputs": native.numel(), "terms": left.shape[1],
                         "emulated": _compare(native, emulated, _bound(left, right, native, emulated)),
                         "reordered": _compare(native, reordered, _bound(left, right, native, reordered))})
    return rows


def _bound(left: torch.Tensor, right: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """How far two bf16 products of ``left`` and ``right`` summed in fp32 in any two orders may lie apart: each fp32
    sum of K terms is within gamma_K * sum |l_k r_k| of the exact one (gamma_K = K u / (1 - K u), u = 2**-24), and
    each is then rounded to bf16 (half a step each, at most one step of the larger)."""
    k, u = left.shape[1], 2.0**-24
    gamma = k * u / (1 - k * u)
    terms = left.double().abs() @ right.double().abs()  # (M, N): sum_k |l_k r_k|
    larger = torch.maximum(a.double().abs(), b.double().abs())  # (M, N)
    step = torch.ldexp(torch.ones_like(larger), torch.frexp(larger).exponent - 8)  # (M, N): bf16 spacing there
    return 2 * gamma * terms + step


class _Reversed(EmulatedBF16):
    """Emulated bf16 products with the inner dimension summed in reverse: another order of the same arithmetic."""

    def product(self, func, wide: list, kwargs: dict) -> torch.Tensor:
        *bias, left, right = wide  # (..., M, K), (..., K, N)
        back = torch.arange(left.shape[-1] - 1, -1, -1)  # (K,)
        return func(*bias, left[..., back], right[..., back, :], **kwargs)


def gradient() -> dict:
    """Part 3: one forward and backward pass under bf16 autocast over fp32 weights (native, emulated, and emulated with
    its sums reversed) and in fp32: each whole gradient's relative distance from the native one, and each pass's
    seconds (one thread)."""
    from transformers import AutoModelForCausalLM

    from tagrpo.models import fetch_model

    torch.set_num_threads(1)
    model = AutoModelForCausalLM.from_pretrained(fetch_model("smollm2-135m"), dtype=torch.float32)
    rows = torch.Generator().manual_seed(2)
    ids = torch.randint(0, model.config.vocab_size, GRADIENT_BATCH, generator=rows)  # (B, T)
    grads, seconds = {}, {}
    modes = {"emulated": emulated_bf16, "reversed": _Reversed}
    for path in ("native", "emulated", "reversed", "fp32"):
        model.zero_grad()
        start = time.perf_counter()
        with modes[path]() if path in modes else contextlib.nullcontext():
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=path != "fp32"):
                loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
        seconds[path] = time.perf_counter() - start
        grads[path] = torch.cat([q.grad.flatten() for q in model.parameters() if q.grad is not None])  # (P,)
    native = grads["native"]
    return {"batch": list(GRADIENT_BATCH), "seconds": seconds,
            "distance": {p: float((grads[p] - native).norm() / native.norm())
                         for p in ("emulated", "reversed", "fp32")}}


def recompute(seed: int) -> dict:
    """Part 2: one committed base cell recomputed with the emulated path (a worker process, one thread)."""
    import tempfile

    from tagrpo.experiments.tasks import real_regimes

    torch.set_num_threads(1)
    with open(os.path.join(CELLS, f"seed{seed}", "minus_five", "base", "result.jsonl"), encoding="utf-8") as f:
        native = json.loads(f.readline())
    start = time.perf_counter()
    with emulated_bf16(), tempfile.TemporaryDirectory() as out:
        emulated = real_regimes.compute(native["spec"], out)
    keep = ("counts", "pass_at_k", "forms")
    return {"seed": seed, "native": {k: native[k] for k in keep}, "emulated": {k: emulated[k] for k in keep},
            "wall_s": time.perf_counter() - start}


def cells(workers: int) -> list[dict]:
    os.makedirs(OUT, exist_ok=True)
    path = {s: os.path.join(OUT, f"seed{s}.json") for s in SEEDS}
    todo = [s for s in SEEDS if not os.path.exists(path[s])]
    print(f"cells: {len(SEEDS)}, {len(SEEDS) - len(todo)} done before, {len(todo)} to run", flush=True)
    with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as pool:
        for row in pool.map(recompute, todo):
            with open(path[row["seed"]], "w", encoding="utf-8") as f:
                json.dump(row, f, indent=1)
            print(f"seed {row['seed']}: {row['wall_s']:.0f} s", flush=True)
    out = []
    for s in SEEDS:
        with open(path[s], encoding="utf-8") as f:
            out.append(json.load(f))
    return out


def verdict(ops: list[dict], rows: list[dict]) -> dict:
    diffs = [r["emulated"]["pass_at_k"]["1"] - r["native"]["pass_at_k"]["1"] for r in rows]
    tost = equivalence(diffs, MARGIN)
    diffs8 = [r["emulated"]["pass_at_k"]["8"] - r["native"]["pass_at_k"]["8"] for r in rows]
    worst = max(r["emulated"]["max_steps"] for r in ops)
    within = max(r["emulated"]["bound_share"] for r in ops)
    return {"products_passed_as_declared": worst <= MAX_STEPS, "max_steps": worst,
            "reordered_max_steps": max(r["reordered"]["max_steps"] for r in ops),
            "products_passed": within <= 1, "bound_share": within,
            "reordered_bound_share": max(r["reordered"]["bound_share"] for r in ops),
            "pass1_differences": diffs, "pass1_difference": interval(diffs), "tost": tost,
            "cells_passed": tost["p"] < ALPHA, "equivalent": within <= 1 and tost["p"] < ALPHA,
            "pass8_differences": diffs8, "pass8_difference": interval(diffs8),
            "pass8_tost": equivalence(diffs8, MARGIN)}


def render(result: dict) -> str:
    v, g = result["verdict"], result["gradient"]
    ci, ci8 = v["pass1_difference"], v["pass8_difference"]
    native = "native bf16" if result["machine"]["native_bf16"] else "no native bf16"
    lines = ["# Emulated against native bf16", "",
             f"Machine: {result['machine']['cpu']} ({result['machine']['cpus']} cores, {native}, load "
             f"{result['machine']['load_average_1m']}); "
             f"{result['wall_s']:.0f} s this run; written by `studies/bf16_equivalence.py` (its docstring declares "
             "the test and its amendment).", "",
             f"**{'Equivalent' if v['equivalent'] else 'Not shown equivalent'}.** Products: the largest difference "
             f"from torch's own kernel is {v['bound_share']:.3f} of the summation-order bound (criterion: at most 1; "
             f"the native kernel with its sum reordered: {v['reordered_bound_share']:.3f}). The criterion declared "
             f"first, every output within {MAX_STEPS} bf16 step, is "
             f"{'met' if v['products_passed_as_declared'] else 'not met'} ({v['max_steps']} steps at most) and "
             f"would reject the native kernel against itself too ({v['reordered_max_steps']} steps): where a sum "
             "cancels to near zero, any two orders differ by many steps of the small result. Cells: q0 pass@1 "
             f"emulated - native {100 * ci['mean']:+.1f} pp [{100 * ci['lo']:.1f}, {100 * ci['hi']:.1f}] over "
             f"{len(SEEDS)} seeds, TOST at +-{100 * MARGIN:.0f} pp p = {v['tost']['p']:.4f} "
             f"({'met' if v['cells_passed'] else 'not met'}); reported, not a criterion: pass@8 "
             f"{100 * ci8['mean']:+.1f} pp [{100 * ci8['lo']:.1f}, {100 * ci8['hi']:.1f}], TOST p = "
             f"{v['pass8_tost']['p']:.2f} ({'' if v['pass8_tost']['p'] < ALPHA else 'not shown '}equivalent at "
             f"+-{100 * MARGIN:.0f} pp).", "",
             f"Gradient (one forward and backward pass under bf16 autocast, {g['batch'][0]} x {g['batch'][1]} "
             f"tokens, one thread): relative distance from the native kernel's gradient "
             f"{g['distance']['emulated']:.2e} emulated, {g['distance']['reversed']:.2e} emulated with every sum "
             f"reversed (another order of the same arithmetic), {g['distance']['fp32']:.2e} in fp32: one bf16 pass "
             "is a draw of bf16's rounding noise, which another summation order draws afresh, so a single pass tells "
             "the orders apart no better than it tells bf16 from fp32; "
             f"{g['seconds']['native']:.1f} s native, "
             f"{g['seconds']['emulated']:.1f} s emulated, {g['seconds']['fp32']:.1f} s fp32 (emulated / fp32 "
             f"{g['seconds']['emulated'] / g['seconds']['fp32']:.2f}x).", "", "## Products", "",
             "Each product of 64 tokens against torch's own bf16 kernel on this machine: the emulated product, and the "
             "same kernel summing in another order. Identical: share of outputs with the same bits; steps: largest "
             "distance in bf16 steps; bound: largest difference as a share of the summation-order bound.", "",
             markdown_table(["layer", "product", "terms", "outputs", "emulated identical", "steps", "bound",
                             "reordered identical", "steps", "bound"],
                            [[r["layer"], r["product"], r["terms"], r["outputs"],
                              *(x for path in ("emulated", "reordered") for x in (
                                  f"{100 * r[path]['identical']:.3f}%", r[path]["max_steps"],
                                  f"{r[path]['bound_share']:.3f}"))] for r in result["products"]]),
             "", "## Base cells", "",
             "pass@1 and pass@8 on q0 (25 questions x 8 samples), accuracy in every form; native: the committed "
             "cell, emulated: this machine.", ""]
    table = []
    for r in result["cells"]:
        for path in ("native", "emulated"):
            c = r[path]
            table.append([r["seed"], path, f"{100 * c['pass_at_k']['1']:.1f}", f"{100 * c['pass_at_k']['8']:.0f}",
                          *(f"{100 * c['forms'][f]:.1f}" for f in sorted(c["forms"])),
                          f"{r['wall_s']:.0f}" if path == "emulated" else ""])
    forms = sorted(result["cells"][0]["native"]["forms"])
    lines += [markdown_table(["seed", "bf16", "pass@1", "pass@8", *forms, "wall s"], table), ""]
    means = {p: mean(r[p]["pass_at_k"]["1"] for r in result["cells"]) for p in ("native", "emulated")}
    lines.append(f"Mean q0 pass@1: native {100 * means['native']:.1f}%, emulated {100 * means['emulated']:.1f}%.")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--render-only", action="store_true", help="the table from the saved JSON")
    args = parser.parse_args()
    json_path = os.path.join(ROOT, "results", "bf16_equivalence.json")
    if args.render_only:
        with open(json_path, encoding="utf-8") as f:
            result = json.load(f)
    else:
        start = time.perf_counter()
        ops = products()
        rows = cells(args.workers)
        grad = gradient()
        result = {"machine": machine(), "seeds": list(SEEDS), "products": ops, "cells": rows, "gradient": grad,
                  "verdict": verdict(ops, rows), "wall_s": time.perf_counter() - start}
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    with open(os.path.join(ROOT, "results", "bf16_equivalence.md"), "w", encoding="utf-8") as f:
        f.write(render(result))
    print(render(result))


if __name__ == "__main__":
    main()
