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

Both passed: ``real_v3``'s remaining cells may be computed with the emulated path (each cell records its path). The
JSON and ``studies/results/bf16_equivalence.md`` hold the numbers, the machine and the wall time.
"""

import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from statistics import mean

import torch

from tagrpo.common.bf16 import emulated_bf16
from tagrpo.common.machine import machine
from tagrpo.evaluation.stats import equivalence, interval
from tagrpo.evaluation.tables import markdown_table

ROOT = os.path.dirname(os.path.abspath(__file__))
CELLS = os.path.join(ROOT, "results", "real_study_v3_cells", "test")
OUT = os.path.join(ROOT, "results", "bf16_equivalence")
SEEDS = (0, 1, 2, 3, 4)
MARGIN, ALPHA, MAX_STEPS = 0.05, 0.05, 1
TOKENS = 64
LAYERS = ("model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj", "model.layers.0.mlp.gate_proj",
          "model.layers.0.mlp.down_proj", "lm_head")


def _ordered(x: torch.Tensor) -> torch.Tensor:
    """bf16 values as integers in the order of the values: neighbours differ by one."""
    bits = x.contiguous().view(torch.int16).int()
    return torch.where(bits < 0, -(bits & 0x7FFF), bits)


def products() -> list[dict]:
    """Part 1: each product's outputs, their share identical to the native kernel's and the largest distance."""
    from transformers import AutoModelForCausalLM

    from tagrpo.models import fetch_model

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(fetch_model("smollm2-135m"), dtype=torch.bfloat16)
    weights = dict(model.named_modules())
    rows = []
    for name in LAYERS:
        w = weights[name].weight.detach()  # (O, I)
        x = torch.randn(TOKENS, w.shape[1]).to(torch.bfloat16)  # (T, I)
        g = (torch.randn(TOKENS, w.shape[0]) * 1e-2).to(torch.bfloat16)  # (T, O)
        for product, left, right in (("forward", x, w.T), ("input gradient", g, w), ("weight gradient", g.T, x)):
            native = left @ right
            with emulated_bf16():
                emulated = left @ right
            steps = (_ordered(native) - _ordered(emulated)).abs()
            rows.append({"layer": name, "product": product, "outputs": native.numel(),
                         "identical": float((steps == 0).float().mean()), "max_steps": int(steps.max())})
    return rows


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
    with ProcessPoolExecutor(workers) as pool:
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
    worst = max(r["max_steps"] for r in ops)
    return {"products_passed": worst <= MAX_STEPS, "max_steps": worst, "pass1_differences": diffs,
            "pass1_difference": interval(diffs), "tost": tost, "cells_passed": tost["p"] < ALPHA,
            "equivalent": worst <= MAX_STEPS and tost["p"] < ALPHA}


def render(result: dict) -> str:
    v = result["verdict"]
    ci = v["pass1_difference"]
    lines = ["# Emulated against native bf16", "",
             f"Machine: {result['machine']['cpu']} ({result['machine']['cpus']} cores, no native bf16); "
             f"{result['wall_s']:.0f} s this run; written by `studies/bf16_equivalence.py` (its docstring declares "
             "the test).", "",
             f"**{'Equivalent' if v['equivalent'] else 'Not shown equivalent'}.** Products: every output within "
             f"{v['max_steps']} bf16 step of torch's own kernel (criterion: {MAX_STEPS}). Cells: q0 pass@1 emulated - "
             f"native {100 * ci['mean']:+.1f} pp [{100 * ci['lo']:.1f}, {100 * ci['hi']:.1f}] over {len(SEEDS)} "
             f"seeds, TOST at +-{100 * MARGIN:.0f} pp p = {v['tost']['p']:.3f}.", "", "## Products", "",
             markdown_table(["layer", "product", "outputs", "identical", "max steps"],
                            [[r["layer"], r["product"], r["outputs"], f"{100 * r['identical']:.1f}%",
                              r["max_steps"]] for r in result["products"]]), "", "## Base cells", "",
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
        result = {"machine": machine(), "seeds": list(SEEDS), "products": ops, "cells": rows,
                  "verdict": verdict(ops, rows), "wall_s": time.perf_counter() - start}
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    with open(os.path.join(ROOT, "results", "bf16_equivalence.md"), "w", encoding="utf-8") as f:
        f.write(render(result))
    print(render(result))


if __name__ == "__main__":
    main()
