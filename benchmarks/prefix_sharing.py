"""What computing the prompts' common prefix once would save in the real study's forwards and backward: a prototype,
measured against the layout TRL scores today (issue 33).

Command (what produced benchmarks/results/prefix_sharing.*):

    .venv/bin/python benchmarks/prefix_sharing.py

Every prompt of the real study begins with the same tokens (the chat template's header, the instruction and the
worked example: 58 of about 85 under the one-example prompt). TRL scores ``[left-padded prompt | completion]``
rows, so each of the R rows runs the shared prefix through the model again, in the old log-prob forward, the policy
forward and its backward (and in generation's prefill). The prototype runs the prefix once (batch 1, with
gradients), repeats its key/value cache over the rows, and runs only ``[left-padded rest of the prompt |
completion]`` against it, with explicit position ids so that every token keeps its position: the same log-probs
(checked in fp32 below) and the same gradients, from fewer tokens. ``--rows`` rows of training questions in q0's
form with 12-token completions, one torch thread, bf16 autocast over fp32 weights (the study's), each variant timed
``--rounds`` times interleaved; CPU seconds are this process's, which other processes on the cores do not inflate.

It measured the idea before the trainer had it. The trainer's version (``TAGRPOConfig.share_prompt_prefix``,
``tagrpo.trainer.prefix``) shares more: each distinct prompt of a chunk once (in a pool anchored to q0, and in a
GRPO group, the rows' prompts are the same), not only the prefix common to all; ``benchmarks/real_throughput.py``
measures it in training. Writes ``prefix_sharing.json`` and ``prefix_sharing.md`` into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from statistics import mean

import torch

from tagrpo.common.machine import machine
from tagrpo.evaluation.tables import markdown_table

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
COMPLETION = 12


def batch(tokenizer, setting: dict, q0: str, rows: int) -> dict:
    """Token ids of ``rows`` training questions' prompts and 12-token worked answers, in both layouts."""
    from tagrpo.data import sum_problems
    from tagrpo.data.prompts import render_prompt

    questions = sum_problems.questions("train", q0, "main", seed=0, count=rows, scheme=setting["scheme"])
    prompts = [tokenizer(render_prompt(r["prompt"], tokenizer, setting["template"], True, setting["system_prompt"]),
                         add_special_tokens=False)["input_ids"] for r in questions]
    answers = [tokenizer(f" {r['a']}+{r['b']}={r['a'] + r['b']}. \\boxed{{{r['a'] + r['b']}}}",
                         add_special_tokens=False)["input_ids"][:COMPLETION] for r in questions]
    shared = 0
    while all(len(p) > shared + 1 and p[shared] == prompts[0][shared] for p in prompts):
        shared += 1
    pad = tokenizer.pad_token_id

    def left(seqs):
        width = max(map(len, seqs))
        return (torch.tensor([[pad] * (width - len(s)) + s for s in seqs]),
                torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in seqs]))

    completion = torch.tensor([a + [pad] * (COMPLETION - len(a)) for a in answers])  # (R, T)
    completion_mask = torch.tensor([[1] * len(a) + [0] * (COMPLETION - len(a)) for a in answers])  # (R, T)
    full_ids, full_mask = left(prompts)  # (R, P)
    rest_ids, rest_mask = left([p[shared:] for p in prompts])  # (R, P - shared)
    return {"full_ids": torch.cat([full_ids, completion], 1), "full_mask": torch.cat([full_mask, completion_mask], 1),
            "rest_ids": torch.cat([rest_ids, completion], 1), "rest_mask": torch.cat([rest_mask, completion_mask], 1),
            "prefix": torch.tensor([prompts[0][:shared]]), "completion": completion, "mask": completion_mask,
            "shared": shared, "prompt_tokens": mean(map(len, prompts))}


def _logps(logits: torch.Tensor, completion: torch.Tensor) -> torch.Tensor:
    """(R, T) log-probs of the completion tokens from the (R, T + 1, V) logits of the positions before them."""
    return torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, completion.unsqueeze(-1)).squeeze(-1)


def as_trl_scores(model, b: dict) -> torch.Tensor:
    out = model(input_ids=b["full_ids"], attention_mask=b["full_mask"], logits_to_keep=COMPLETION + 1)
    return _logps(out.logits, b["completion"])


def with_shared_prefix(model, b: dict) -> torch.Tensor:
    rows, shared = b["rest_ids"].size(0), b["shared"]
    cache = model(input_ids=b["prefix"], use_cache=True).cache  # the prefix once, with gradients
    cache.batch_repeat_interleave(rows)
    mask = torch.cat([torch.ones(rows, shared, dtype=b["rest_mask"].dtype), b["rest_mask"]], 1)  # (R, shared + S)
    positions = (mask.cumsum(1) - 1).clamp(min=0)[:, shared:]  # (R, S): each token's position without the padding
    out = model(input_ids=b["rest_ids"], attention_mask=mask, position_ids=positions, cache=cache,
                logits_to_keep=COMPLETION + 1)
    return _logps(out.logits, b["completion"])


def timed(model, fn, b: dict, backward: bool) -> tuple[float, float]:
    model.zero_grad(set_to_none=True)
    wall, cpu = time.perf_counter(), time.process_time()
    with torch.autocast("cpu", dtype=torch.bfloat16), torch.set_grad_enabled(backward):
        logps = fn(model, b)
    if backward:
        (logps * b["mask"]).sum().backward()
    return time.perf_counter() - wall, time.process_time() - cpu


def measure(setting_name: str, q0: str, rows: int, rounds: int) -> dict:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tagrpo.models import fetch_model
    from tagrpo.toy.smollm_sums import SETTINGS

    torch.set_num_threads(1)
    model_dir = fetch_model("smollm2-135m")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    model.train()
    b = batch(tokenizer, SETTINGS[setting_name], q0, rows)
    with torch.no_grad():  # fp32: the two layouts give the same log-probs
        gap = float(((as_trl_scores(model, b) - with_shared_prefix(model, b)).abs() * b["mask"]).max())
    grads = []
    for fn in (as_trl_scores, with_shared_prefix):
        model.zero_grad(set_to_none=True)
        (fn(model, b) * b["mask"]).sum().backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]))
    grad_gap = float((grads[0] - grads[1]).norm() / grads[0].norm())
    times: dict[str, list] = {}
    for _ in range(rounds):
        for name, fn in (("as TRL scores", as_trl_scores), ("shared prefix", with_shared_prefix)):
            for backward in (False, True):
                times.setdefault(f"{name}, {'forward + backward' if backward else 'forward (no grad)'}", []).append(
                    timed(model, fn, b, backward))
    return {"rows": rows, "shared_prefix_tokens": b["shared"], "mean_prompt_tokens": b["prompt_tokens"],
            "completion_tokens": COMPLETION, "tokens_as_trl": int(b["full_ids"].numel()),
            "tokens_shared": int(b["rest_ids"].numel() + b["shared"]), "fp32_max_logp_gap": gap,
            "fp32_relative_grad_gap": grad_gap,
            "seconds": {k: {"wall": [w for w, _ in v], "cpu": [c for _, c in v]} for k, v in times.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--setting", default="v2", help="a name of tagrpo.toy.smollm_sums.SETTINGS")
    parser.add_argument("--rows", type=int, default=16, help="rows per forward (the study's optimizer batch: 16)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--q0", default="spelled")
    parser.add_argument("--out", default=RESULTS)
    args = parser.parse_args()
    start, load = time.perf_counter(), [round(os.getloadavg()[0], 2)]
    got = measure(args.setting, args.q0, args.rows, args.rounds)
    load.append(round(os.getloadavg()[0], 2))
    saved = {"command": "python benchmarks/prefix_sharing.py " + " ".join(sys.argv[1:]), "machine": machine(),
             "load_average_1m": load, "setting": args.setting, "q0": args.q0, **got,
             "wall_s": time.perf_counter() - start}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "prefix_sharing.json"), "w", encoding="utf-8") as f:
        json.dump(saved, f, indent=1)
    cpu = {k: mean(v["cpu"]) for k, v in got["seconds"].items()}
    rows = [[k, " / ".join(f"{c:.2f}" for c in v["cpu"]), f"{cpu[k]:.2f}", f"{mean(v['wall']):.2f}"]
            for k, v in got["seconds"].items()]
    ratio = {kind: cpu[f"as TRL scores, {kind}"] / cpu[f"shared prefix, {kind}"]
             for kind in ("forward (no grad)", "forward + backward")}
    md = [
        "# Sharing the prompts' common prefix in the real study's forwards and backward: a measured prototype",
        "",
        f"Command: `{saved['command']}`. Machine: {saved['machine']}; 1-minute load average before and after: "
        f"{load}. Wall time {saved['wall_s'] / 60:.1f} min. Setting `{args.setting}`, q0 {args.q0}: {args.rows} "
        f"rows, prompts of {got['mean_prompt_tokens']:.1f} tokens of which {got['shared_prefix_tokens']} are "
        f"common to all, {COMPLETION} completion positions; one torch thread, bf16 autocast over fp32 weights. "
        f"Tokens through the model: {got['tokens_as_trl']:,} as TRL scores, {got['tokens_shared']:,} with the "
        "prefix once.",
        "",
        f"Same numbers (fp32): largest log-prob difference {got['fp32_max_logp_gap']:.1e}, relative gradient "
        f"difference {got['fp32_relative_grad_gap']:.1e}.",
        "",
        markdown_table(["variant", "CPU s per round", "CPU s (mean)", "wall s (mean)"], rows),
        "",
        f"The shared prefix is **{ratio['forward (no grad)']:.2f}x** faster in the no-grad forward (old and "
        f"reference log-probs) and **{ratio['forward + backward']:.2f}x** in the policy's forward + backward (CPU "
        "seconds).",
        "",
    ]
    with open(os.path.join(args.out, "prefix_sharing.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md))


if __name__ == "__main__":
    main()
