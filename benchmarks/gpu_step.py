"""One GPU: TA-GRPO (N=3, G=8) against TRL's GRPO (G=32) at equal completions, on a random Qwen3-1.7B config.

Both spend 32 completions per question on the same random-initialised checkpoint (bf16 on a GPU), the same rows,
batch, completion length (forced: ``min_new_tokens = max_completion_length``), seed and beta, with TRL's
transformers generation (no vLLM). Runs alternate (TA-GRPO, GRPO, ...); the first step of each run is warm-up.
Reports seconds per step, generated tokens per second and peak GPU memory of each, and their ratio.

On the H200 of the device tool (torch, transformers, accelerate installed; trl, datasets and their small
dependencies travel as wheels, see docs/gpu.md), within 8 minutes:

    python benchmarks/gpu_step.py --config qwen3-1.7b --out benchmarks/results

On a CPU it runs the same code on a tiny configuration (what the test suite checks):

    .venv/bin/python benchmarks/gpu_step.py --config tiny --steps 2 --out /tmp/gpu_step

Writes ``gpu_step.json`` and ``gpu_step.md`` into ``--out``.
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

from tagrpo.experiments.timing import StepTimer, hash_reward, make_rows  # noqa: E402

CONFIGS = {  # Qwen3-1.7B's shapes (its vocabulary too); "tiny" for CPUs and the tests
    "qwen3-1.7b": dict(hidden_size=2048, num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8,
                       intermediate_size=6144, head_dim=128, vocab_size=151936),
    "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                 intermediate_size=128, head_dim=16, vocab_size=512),
}


def padded_tokenizer(vocab_size: int):
    """The character tokenizer with dummy tokens up to ``vocab_size``, so that every sampled id decodes."""
    from tokenizers import Tokenizer, decoders
    from tokenizers.models import BPE
    from transformers import PreTrainedTokenizerFast

    from tagrpo.toy.tokenizer import CHARS, EOS, PAD, UNK

    names = [PAD, EOS, UNK, *dict.fromkeys(CHARS)]
    names += [f"<x{i}>" for i in range(vocab_size - len(names))]
    tok = Tokenizer(BPE(vocab={t: i for i, t in enumerate(names)}, merges=[], unk_token=UNK))
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=PAD, eos_token=EOS, unk_token=UNK,
                                   padding_side="left")


def build_model(config: str, directory: str, dtype: torch.dtype) -> int:
    from transformers import AutoModelForCausalLM, Qwen3Config

    tok = padded_tokenizer(CONFIGS[config]["vocab_size"])
    cfg = Qwen3Config(**CONFIGS[config], max_position_embeddings=4096, tie_word_embeddings=config == "tiny",
                      pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, bos_token_id=tok.eos_token_id)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
    model.save_pretrained(directory)
    tok.save_pretrained(directory)
    return sum(p.numel() for p in model.parameters())


def run_once(method: str, model_dir: str, args, on_gpu: bool) -> dict:
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from tagrpo.trainer import TAGRPOConfig, TAGRPOTrainer

    rows = make_rows(args.questions * args.steps, 3)
    common = dict(per_device_train_batch_size=args.questions * 32, max_completion_length=args.length,
                  max_steps=args.steps, seed=0, beta=0.0, learning_rate=1e-6, logging_steps=1, report_to=[],
                  save_strategy="no", disable_tqdm=True, use_cpu=not on_gpu, bf16=on_gpu,
                  generation_kwargs={"min_new_tokens": args.length})
    tok = AutoTokenizer.from_pretrained(model_dir)
    with tempfile.TemporaryDirectory() as out:
        if method == "tagrpo":
            config, cls = TAGRPOConfig(output_dir=out, num_rephrasings=3, num_generations=8, **common), TAGRPOTrainer
        else:
            config, cls = GRPOConfig(output_dir=out, num_generations=32, **common), GRPOTrainer
        trainer = cls(model_dir, [hash_reward], args=config, train_dataset=Dataset.from_list(rows),
                      processing_class=tok)
        timer = StepTimer()
        trainer.add_callback(timer)
        if on_gpu:
            torch.cuda.reset_peak_memory_stats()
        trainer.train()
    tokens = [h["completions/mean_length"] * args.questions * 32 for h in trainer.state.log_history
              if "completions/mean_length" in h]
    step_s = timer.steps[1:] or timer.steps
    return {"method": method, "step_s": timer.steps, "completion_tokens": tokens,
            "median_step_s": statistics.median(step_s),
            "tokens_per_s": statistics.median(t / s for t, s in zip(tokens[1:] or tokens, step_s, strict=False)),
            "peak_gpu_gib": torch.cuda.max_memory_allocated() / 2**30 if on_gpu else None}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", choices=sorted(CONFIGS), default="qwen3-1.7b")
    p.add_argument("--steps", type=int, default=3, help="optimizer steps per run, the first is warm-up")
    p.add_argument("--rounds", type=int, default=1, help="alternating (TA-GRPO, GRPO) rounds")
    p.add_argument("--warmup", type=int, default=0, help="untimed (TA-GRPO, GRPO) rounds before the timed ones")
    p.add_argument("--questions", type=int, default=2, help="questions per step (32 completions each)")
    p.add_argument("--length", type=int, default=256, help="completion tokens, forced")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    on_gpu = torch.cuda.is_available()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as model_dir:
        params = build_model(args.config, model_dir, torch.bfloat16 if on_gpu else torch.float32)
        # untimed: a process's first run on a GPU pays its one-off costs (kernel selection, the allocator's growth,
        # clocks) over more than one step, which the discarded first step of a timed run does not absorb
        warmup = [run_once(m, model_dir, args, on_gpu) for _ in range(args.warmup) for m in ("tagrpo", "grpo")]
        runs = []
        for _ in range(args.rounds):
            for m in ("tagrpo", "grpo"):
                runs.append(run_once(m, model_dir, args, on_gpu))
                # what has finished survives a run cut short (the device's time limit, a crash)
                args.out.mkdir(parents=True, exist_ok=True)
                (args.out / "gpu_step.partial.json").write_text(json.dumps(runs, indent=2))
    med = {}  # over every timed step of every round (each run's first step discarded)
    for m in ("tagrpo", "grpo"):
        mine = [r for r in runs if r["method"] == m]
        steps = [(t, s) for r in mine for t, s in zip(r["completion_tokens"][1:], r["step_s"][1:], strict=True)]
        med[m] = {"median_step_s": statistics.median(s for _, s in steps),
                  "tokens_per_s": statistics.median(t / s for t, s in steps)}
    machine = {"platform": platform.platform(), "device": torch.cuda.get_device_name() if on_gpu else "cpu",
               "torch": torch.__version__}
    result = {"command": " ".join(["python benchmarks/gpu_step.py", *(argv or sys.argv[1:])]), "machine": machine,
              "config": args.config, "parameters": params, "questions": args.questions, "length": args.length,
              "warmup_runs": warmup, "runs": runs, "median": med, "wall_s": time.perf_counter() - start,
              "ratio_step_s": med["tagrpo"]["median_step_s"] / med["grpo"]["median_step_s"]}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu_step.json").write_text(json.dumps(result, indent=2))
    peak = {m: max((r["peak_gpu_gib"] or 0) for r in runs if r["method"] == m) for m in ("tagrpo", "grpo")}
    lines = [
        "# TA-GRPO vs GRPO at equal completions, one device",
        "",
        f"Command: `{result['command']}`. Machine: {machine}. Model: random {args.config} ({params / 1e9:.2f}B "
        f"parameters), {args.questions} questions x 32 completions of {args.length} tokens per step, "
        f"{args.steps} steps per run (first discarded), {args.warmup} untimed and {args.rounds} timed round(s). "
        f"Wall {result['wall_s']:.0f} s.",
        "",
        "| method | s / step | generated tokens / s | peak GPU GiB |",
        "|---|---|---|---|",
        *[f"| {name} | {med[m]['median_step_s']:.2f} | {med[m]['tokens_per_s']:.0f} | {peak[m]:.1f} |"
          for m, name in (("tagrpo", "TA-GRPO (N=3, G=8)"), ("grpo", "GRPO (G=32)"))],
        "",
        f"TA-GRPO / GRPO seconds per step: {result['ratio_step_s']:.3f}.",
        "",
    ]
    (args.out / "gpu_step.md").write_text("\n".join(lines))
    (args.out / "gpu_step.partial.json").unlink()
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
