"""Training rollouts per second on SmolLM2-135M-Instruct: today's settings against the study's, side by side.

Command (what produced benchmarks/results/real_throughput.*):

    .venv/bin/python benchmarks/real_throughput.py

Each setting trains TA-GRPO (N=3, G=2) from the base on the real study's training sums
(``tagrpo/experiments/real_task.py``) for ``--steps`` generation steps, ``--rounds`` times, the settings interleaved
(A, B, A, B, ...) in one process so that both see the same machine in the same sitting. Rollouts per second =
completions generated over the wall time of the generation steps after the first (a callback stamps each step; model
loading and the first step's warm-up are left out). Every setting's prompt is also scored on the base model:
accuracy on q0's form over validation problems (``--accuracy-questions`` x 8 samples at the study's evaluation
sampling), so a faster prompt that the model answers worse shows.

- ``today``: ``studies/real_model.py``'s settings: the two-example ``fewshot`` template in the chat template,
  24 completion tokens, 2 questions per step, one optimizer step per generation, bf16 autocast.
- ``study``: what ``studies/real_study.py`` trains with (``STUDY`` there).

Writes ``real_throughput.json`` and ``real_throughput.md`` into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from statistics import mean

import torch
from transformers import TrainerCallback

from tagrpo.evaluation.tables import markdown_table
from tagrpo.experiments import real_task
from tagrpo.experiments.machine import machine

ACCURACY_SAMPLES = 8
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
TODAY = {"template": "fewshot", "system_prompt": None, "max_completion_length": 24, "questions": 2, "num_iterations": 1,
         "steps_per_generation": 1, "beta": 0.0, "generation_autocast": False, "cpu_completion_scoring": False,
         "workers": 1}


class StepClock(TrainerCallback):
    """Wall-clock stamps at the end of every optimizer step."""

    def __init__(self):
        self.stamps: list[float] = []

    def on_step_end(self, args, state, control, **kwargs):
        self.stamps.append(time.perf_counter())


def train_steps(model_dir: str, work: str, setting: dict, steps: int, q0: str) -> dict:
    from tagrpo.experiments.real_study import ARMS, trainer_job
    from tagrpo.trainer.run import run_train

    n, g, q = ARMS["ta_grpo"]["num_rephrasings"], ARMS["ta_grpo"]["num_generations"], setting["questions"]
    iters, split = setting["num_iterations"], setting["steps_per_generation"]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    job, config = trainer_job(setting, "ta_grpo", q0, model_dir, work, steps, 1e-6, seed=0, device=device,
                              shuffle=True)
    clock = StepClock()
    start = time.perf_counter()
    trainer = run_train(job, config, callbacks=[clock])
    per_generation = iters * split  # optimizer updates per generation batch
    generation_ends = clock.stamps[per_generation - 1::per_generation]  # the end of each generation's last update
    timed = generation_ends[-1] - generation_ends[0]
    rollouts = (len(generation_ends) - 1) * q * (n + 1) * g
    return {"rollouts_per_s": rollouts / timed, "timed_s": timed, "timed_rollouts": rollouts,
            "total_s": time.perf_counter() - start, "trainer_rollouts": trainer.rollouts}


def base_accuracy(model_dir: str, setting: dict, q0: str, count: int) -> float:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tagrpo.data.prompts import render_prompt
    from tagrpo.evaluation.sampling import correct_counts, sample_responses
    from tagrpo.experiments.real_study import EVAL_SAMPLING
    from tagrpo.rewards.math import boxed_or_last_number_correct

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16)
    rows = real_task.questions("validation", q0, "main", seed=0, count=count)
    prompts = [render_prompt(r["prompt"], tokenizer, setting["template"], True, setting["system_prompt"]) for r in rows]
    responses = sample_responses(model, tokenizer, prompts, ACCURACY_SAMPLES, **EVAL_SAMPLING,
                                 max_new_tokens=setting["max_completion_length"], seed=0, progress=False)
    counts = correct_counts(responses, [r["answer"] for r in rows], boxed_or_last_number_correct)
    return float(counts.sum() / (ACCURACY_SAMPLES * len(rows)))


def timed_run(setting: dict, steps: int, q0: str, work: str) -> dict:
    """``setting["workers"]`` processes of ``2 // workers`` torch threads each train at once (what the study runs);
    their rollouts per second add up."""
    import subprocess

    workers = setting["workers"]
    env = {**os.environ, "OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 2) // workers))}
    procs = []
    for w in range(workers):
        result = os.path.join(work, f"worker{w}.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--one", json.dumps(setting), "--steps", str(steps),
               "--q0", q0, "--work-dir", os.path.join(work, f"worker{w}"), "--result", result]
        procs.append((subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), result))
    got = []
    for proc, result in procs:
        _, err = proc.communicate()
        if proc.returncode:
            raise RuntimeError(f"a timed run failed:\n{err.decode()[-3000:]}")
        with open(result, encoding="utf-8") as f:
            got.append(json.load(f))
    return {"rollouts_per_s": sum(g["rollouts_per_s"] for g in got), "workers": got}


def main() -> None:
    from tagrpo.experiments.real_study import STUDY

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=6, help="generation steps per timed run (the first is warm-up)")
    parser.add_argument("--rounds", type=int, default=2, help="timed runs per setting, interleaved")
    parser.add_argument("--accuracy-questions", type=int, default=60)
    parser.add_argument("--q0", default="spelled", help="q0's form")
    parser.add_argument("--work-dir", default="outputs/real_throughput")
    parser.add_argument("--out", default=RESULTS)
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # a worker: one timed run of this setting
    parser.add_argument("--result", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    from tagrpo.models import fetch_model

    model_dir = fetch_model("smollm2-135m")
    if args.one:
        got = train_steps(model_dir, args.work_dir, json.loads(args.one), args.steps, args.q0)
        with open(args.result, "w", encoding="utf-8") as f:
            json.dump({**got, "threads": torch.get_num_threads()}, f)
        return
    settings = {"today": TODAY, "study": {k: STUDY[k] for k in TODAY}}
    runs: dict[str, list[dict]] = {name: [] for name in settings}
    start = time.perf_counter()
    for r in range(args.rounds):
        for name, setting in settings.items():
            got = timed_run(setting, args.steps, args.q0, os.path.join(args.work_dir, f"{name}{r}"))
            runs[name].append(got)
            print(f"round {r} {name}: {got['rollouts_per_s']:.2f} rollouts/s", flush=True)
    accuracy = {name: base_accuracy(model_dir, s, args.q0, args.accuracy_questions) for name, s in settings.items()}
    speed = {name: mean(x["rollouts_per_s"] for x in rs) for name, rs in runs.items()}
    saved = {"command": "python benchmarks/real_throughput.py " + " ".join(sys.argv[1:]), "machine": machine(),
             "settings": settings, "runs": runs, "rollouts_per_s": speed, "speedup": speed["study"] / speed["today"],
             "base_q0_accuracy": accuracy, "q0": args.q0, "wall_s": time.perf_counter() - start}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "real_throughput.json"), "w", encoding="utf-8") as f:
        json.dump(saved, f, indent=1)
    rows = [[name, ", ".join(f"{k}={v}" for k, v in s.items()), len(runs[name]),
             " / ".join(f"{x['rollouts_per_s']:.2f}" for x in runs[name]), f"{speed[name]:.2f}",
             f"{100 * accuracy[name]:.1f}"] for name, s in settings.items()]
    md = [
        "# Training rollouts per second on SmolLM2-135M-Instruct: today's settings against the study's",
        "",
        f"Command: `{saved['command']}`. Machine: {saved['machine']}. Wall time {saved['wall_s'] / 60:.1f} min. "
        f"TA-GRPO (N=3, G=2), {args.steps} generation steps per run (the first not timed), settings interleaved "
        f"over {args.rounds} rounds in one sitting; a setting with 2 workers trains two runs at once (one torch "
        "thread each, as the study runs its cells) and adds their rollouts per second.",
        "",
        markdown_table(["setting", "what", "runs", "rollouts/s per run", "rollouts/s (mean)",
                        f"base accuracy on q0 ({args.q0}), validation, %"], rows),
        "",
        f"Speed-up, study over today: **{saved['speedup']:.2f}x** (means of the runs; one machine, one sitting).",
        "",
    ]
    with open(os.path.join(args.out, "real_throughput.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md))


if __name__ == "__main__":
    main()
