"""Seconds per training step: TA-GRPO (N=3, G=4, anchor="original") against TRL's GRPO with G=16, on CPU.

Both methods spend (N+1)*G = 16 completions per question on the same tiny random Qwen3 checkpoint, the same
rows (TRL's prompt is q0), batch sizes, completion length, seeds and beta. Runs alternate (a, b, a, b, ...),
each a fresh trainer; the first step of each run is warm-up and discarded. Every completion is forced to
exactly ``--max-completion-length`` tokens (``generation_kwargs={"min_new_tokens": L}``), so both sides
generate the same number of tokens; seconds per 1k completion tokens is reported as well. The machine's load
average is recorded per run: other processes on the CPUs inflate and scatter the times.

Command (from the repository root):

    .venv/bin/python benchmarks/step_overhead.py

Writes benchmarks/results/step_overhead.json and benchmarks/results/step_overhead.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
import transformers  # noqa: E402
import trl  # noqa: E402
from datasets import Dataset  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from tagrpo.toy import build_char_tokenizer, build_tiny_model  # noqa: E402
from tagrpo.trainer import TAGRPOConfig, TAGRPOTrainer  # noqa: E402
from tagrpo.trainer.timing import StepTimer, hash_reward, make_rows  # noqa: E402

COMMAND = ".venv/bin/python benchmarks/step_overhead.py"
TARGET = 1.10
METHODS = ("tagrpo", "grpo")


def run_once(method: str, model_dir: str, rows: list[dict], args, seed: int) -> dict:
    common = dict(
        per_device_train_batch_size=args.batch_size,
        gradient_accumulation_steps=args.grad_accum,
        max_completion_length=args.max_completion_length,
        max_steps=args.steps,
        seed=seed,
        beta=args.beta,
        learning_rate=1e-5,
        logging_steps=1,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        disable_tqdm=True,
        generation_kwargs={"min_new_tokens": args.max_completion_length} if args.fixed_length else None,
    )
    tok = AutoTokenizer.from_pretrained(model_dir)
    with tempfile.TemporaryDirectory() as out:
        if method == "tagrpo":
            config = TAGRPOConfig(
                output_dir=out, num_rephrasings=args.n, num_generations=args.g, anchor="original", **common
            )
            cls = TAGRPOTrainer
        else:
            config = GRPOConfig(output_dir=out, num_generations=(args.n + 1) * args.g, **common)
            cls = GRPOTrainer
        trainer = cls(
            model_dir, [hash_reward], args=config, train_dataset=Dataset.from_list(rows), processing_class=tok
        )
        timer = StepTimer()
        trainer.add_callback(timer)
        t0 = time.perf_counter()
        trainer.train()
        wall = time.perf_counter() - t0
    logs = [h for h in trainer.state.log_history if "completions/mean_length" in h]
    per_step_completions = args.batch_size * args.grad_accum  # one process: rows per optimizer step
    tokens = [h["completions/mean_length"] * per_step_completions for h in logs]
    assert len(tokens) == len(timer.steps) == args.steps, (len(tokens), len(timer.steps))
    rollouts = getattr(trainer, "rollouts", per_step_completions * args.steps)
    return {
        "method": method,
        "seed": seed,
        "wall_s": wall,
        "step_s": timer.steps,
        "cycle_s": timer.cycles,
        "cpu_s": timer.cpu,
        "completion_tokens": tokens,
        "completions_per_step": per_step_completions,
        "rollouts": rollouts,
        "s_per_1k_tokens": [1000 * s / t for s, t in zip(timer.steps, tokens, strict=True)],
    }


def summarise(runs: list[dict], rounds: int) -> dict:
    """Medians over the measured (non-warm-up) steps; TA-GRPO / GRPO ratios pooled and per round."""
    out = {}
    for key in ("step_s", "s_per_1k_tokens", "cycle_s", "cpu_s"):
        med = {}
        for m in METHODS:
            vals = [v for r in runs if r["method"] == m for v in r[key][1:] if v is not None]
            med[m] = statistics.median(vals)
        per_round = []
        for k in range(rounds):
            a, b = (next(r for r in runs if r["method"] == m and r["round"] == k) for m in METHODS)
            va, vb = ([v for v in r[key][1:] if v is not None] for r in (a, b))
            per_round.append(statistics.median(va) / statistics.median(vb))
        out[key] = {
            "median_tagrpo": med["tagrpo"],
            "median_grpo": med["grpo"],
            "ratio_of_medians": med["tagrpo"] / med["grpo"],
            "ratio_per_round": per_round,
            "ratio_mean": statistics.mean(per_round),
            "ratio_std": statistics.stdev(per_round) if len(per_round) > 1 else 0.0,
        }
    return out


def write_markdown(path: Path, result: dict) -> None:
    s, m, md = result["summary"], result["machine"], result["model"]
    names = {
        "step_s": "s / step",
        "s_per_1k_tokens": "s / 1k completion tokens",
        "cycle_s": "s / step incl. logging",
        "cpu_s": "CPU s / step (this process, all threads)",
    }
    lines = [
        "# Step overhead: TA-GRPO vs TRL GRPO at equal completions",
        "",
        f"Machine: {m['platform']}, {m['cpu_count']} CPUs (torch threads {m['torch_threads']}), "
        f"torch {m['torch']}, transformers {m['transformers']}, trl {m['trl']}",
        "",
        f"Command: `{result['command']}`",
        "",
        f"Model: tiny random Qwen3 (hidden {md['hidden_size']}, {md['num_layers']} layers, "
        f"{md['parameters'] / 1e6:.2f}M parameters). {result['completions_per_step']} completions "
        f"per step for both; {result['rounds']} alternating rounds x {result['steps']} steps, first step of "
        f"each run discarded. {result['length_note']}",
        "",
        "| metric | TA-GRPO (N=3, G=4) | GRPO (G=16) | ratio of medians | ratio per round (mean ± std) |",
        "|---|---|---|---|---|",
    ]
    for key, name in names.items():
        r = s[key]
        lines.append(
            f"| {name} | {r['median_tagrpo']:.3f} | {r['median_grpo']:.3f} | "
            f"{r['ratio_of_medians']:.3f}x | {r['ratio_mean']:.3f} ± {r['ratio_std']:.3f}x |"
        )
    verdict = "met" if result["target_met"] else "NOT met"
    lines += [
        "",
        f"Target: <= {TARGET:.2f}x at equal completions (s / step, ratio of medians): "
        f"**{verdict}** ({s['step_s']['ratio_of_medians']:.3f}x). Load average (1 min) after each run: "
        f"{min(result['loadavg_1min'])}-{max(result['loadavg_1min'])}.",
        "",
    ]
    path.write_text("\n".join(lines))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=3, help="alternating rounds (a, b) of fresh trainers")
    p.add_argument("--steps", type=int, default=5, help="optimizer steps per run; the first is warm-up")
    p.add_argument("--n", type=int, default=3, help="TA-GRPO rephrasings N")
    p.add_argument("--g", type=int, default=4, help="TA-GRPO generations per variant G")
    p.add_argument("--batch-size", type=int, default=16, help="per_device_train_batch_size")
    p.add_argument("--grad-accum", type=int, default=2, help="gradient_accumulation_steps")
    p.add_argument("--max-completion-length", type=int, default=32)
    p.add_argument("--beta", type=float, default=0.04, help="KL weight (a reference model is loaded if != 0)")
    p.add_argument("--seed", type=int, default=0, help="round k uses seed + k for both methods")
    p.add_argument("--hidden-size", type=int, default=128)
    p.add_argument("--num-layers", type=int, default=4)
    p.add_argument(
        "--free-length",
        dest="fixed_length",
        action="store_false",
        help="let EOS end completions (default: min_new_tokens = max_completion_length)",
    )
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_error()

    with tempfile.TemporaryDirectory() as tmp:
        tok = build_char_tokenizer()
        model = build_tiny_model(tok, hidden_size=args.hidden_size, num_layers=args.num_layers, seed=args.seed)
        n_params = sum(p.numel() for p in model.parameters())
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        rows = make_rows(num_questions=64, num_rephrasings=args.n)
        runs, t0 = [], time.perf_counter()
        for k in range(args.repeats):
            for method in METHODS:
                run = run_once(method, tmp, rows, args, seed=args.seed + k)
                run["round"], run["loadavg_1min"] = k, round(os.getloadavg()[0], 2)
                runs.append(run)
                print(
                    f"round {k} {method:6s}: step_s={[round(x, 3) for x in run['step_s']]} "
                    f"tokens={[round(x) for x in run['completion_tokens']]} wall={run['wall_s']:.1f}s "
                    f"load={run['loadavg_1min']}",
                    flush=True,
                )
        total = time.perf_counter() - t0

    summary = summarise(runs, args.repeats)
    length_note = (
        f"Completions forced to exactly {args.max_completion_length} tokens via "
        f"GRPOConfig(generation_kwargs={{'min_new_tokens': {args.max_completion_length}}})."
        if args.fixed_length
        else "Completion lengths free (EOS may be sampled)."
    )
    result = {
        "command": " ".join([COMMAND, *(sys.argv[1:] if argv is None else argv)]),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "trl": trl.__version__,
        },
        "model": {
            "architecture": "qwen3",
            "hidden_size": args.hidden_size,
            "num_layers": args.num_layers,
            "parameters": n_params,
        },
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "seeds": [args.seed + k for k in range(args.repeats)],
        "rounds": args.repeats,
        "steps": args.steps,
        "warmup_steps_discarded": 1,
        "completions_per_step": runs[0]["completions_per_step"],
        "length_note": length_note,
        "rollouts_per_method": {m: sum(r["rollouts"] for r in runs if r["method"] == m) for m in METHODS},
        "wall_s_per_method": {m: sum(r["wall_s"] for r in runs if r["method"] == m) for m in METHODS},
        "loadavg_1min": [r["loadavg_1min"] for r in runs],
        "total_wall_s": total,
        "runs": runs,
        "summary": summary,
        "target": f"<= {TARGET:.2f}x at equal completions",
        "target_met": summary["step_s"]["ratio_of_medians"] <= TARGET,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "step_overhead.json").write_text(json.dumps(result, indent=2) + "\n")
    write_markdown(args.out / "step_overhead.md", result)
    print((args.out / "step_overhead.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
