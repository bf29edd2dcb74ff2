"""Where one training step of the real study goes: generation, the old log-prob forward, the policy forward, the
backward and the optimizer, with the tokens each part processes (issue 33).

Command (what produced benchmarks/results/real_step_profile.*):

    .venv/bin/python benchmarks/real_step_profile.py --settings study,v2 --steps 4 --rounds 1

Each setting trains TA-GRPO (N=3, G=2) from the base for ``--steps`` generation steps in this process (one torch
thread: one study worker's share of a 2-core machine), the settings one after another, ``--rounds`` times
(A, B, A, B: the same sitting). The trainer's pieces are timed by wrapping them in this process only:
``TAGRPOTrainer._generate`` (tokenizing, anchoring and TRL's ``_generate``; the pure ``generate`` call inside it
separately), ``_get_per_token_logps_and_entropies`` without gradients (the old log-probs, and the reference ones
when ``beta`` > 0) and with them (the policy forward), ``Accelerator.backward``, and the optimizer (transformers'
``on_pre_optimizer_step`` to ``on_optimizer_step``). The first generation step is warm-up and left out. Every
forward also counts its tokens: rows x padded width, the real (unpadded) ones, the prompt's share and the
completion positions projected through the vocabulary.

Writes ``real_step_profile.json`` and ``real_step_profile.md`` into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from statistics import mean

import torch
from accelerate import Accelerator
from transformers import TrainerCallback
from trl import GRPOTrainer

from tagrpo.common.machine import machine
from tagrpo.evaluation.tables import markdown_table
from tagrpo.trainer.trainer import TAGRPOTrainer

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
GENERATION_CALL, GENERATION_REST = "generation (generate call)", "generation (tokenize, anchor)"
PARTS = (GENERATION_CALL, GENERATION_REST, "old log-prob forward", "policy forward", "backward", "optimizer",
         "other (rewards, advantages, loss, bookkeeping)")


def clock() -> tuple[float, float]:
    """(wall, CPU) seconds now: the process's CPU time is what a part costs whatever else shares the cores."""
    return time.perf_counter(), time.process_time()


def since(start: tuple[float, float]) -> tuple[float, float]:
    wall, cpu = clock()
    return wall - start[0], cpu - start[1]


class Recorder(TrainerCallback):
    """Per optimizer step: its wall and CPU seconds, each part's, and the tokens each forward processed."""

    def __init__(self):
        self.steps: list[dict] = []
        self.current: dict | None = None
        self._optimizer_start = (0.0, 0.0)

    def on_step_begin(self, args, state, control, **kwargs):
        self.current = {"begin": clock(), "wall": defaultdict(float), "cpu": defaultdict(float),
                        "tokens": defaultdict(int)}

    def on_pre_optimizer_step(self, args, state, control, **kwargs):
        self._optimizer_start = clock()

    def on_optimizer_step(self, args, state, control, **kwargs):
        self.add("optimizer", since(self._optimizer_start))

    def on_step_end(self, args, state, control, **kwargs):
        step = self.current
        step["total"] = since(step["begin"])
        self.steps.append(step)
        self.current = None

    def add(self, part: str, seconds: tuple[float, float], **tokens: int) -> None:
        if self.current is None:
            return
        self.current["wall"][part] += seconds[0]
        self.current["cpu"][part] += seconds[1]
        for key, value in tokens.items():
            self.current["tokens"][key] += value


def instrument(recorder: Recorder) -> None:
    """Wrap the trainer's pieces (in this process only) so that each reports its time and tokens to ``recorder``."""
    generate, single, logps, backward = (TAGRPOTrainer._generate, GRPOTrainer._generate_single_turn,
                                         TAGRPOTrainer._get_per_token_logps_and_entropies, Accelerator.backward)

    def timed_generate(self, prompts):
        start = clock()
        out = generate(self, prompts)
        recorder.add("generation (all)", since(start))
        return out

    def timed_single(self, prompt_ids, *args, **kwargs):
        start = clock()
        out = single(self, prompt_ids, *args, **kwargs)
        lengths = [len(p) for p in prompt_ids]
        recorder.add("generation (generate call)", since(start),
                     generate_prompt_padded=len(lengths) * max(lengths), generate_prompt_real=sum(lengths),
                     generate_completion=sum(len(c) for c in out[0]))
        return out

    def timed_logps(self, model, input_ids, attention_mask, logits_to_keep, *args, **kwargs):
        part = "policy forward" if torch.is_grad_enabled() else "old log-prob forward"
        start = clock()
        out = logps(self, model, input_ids, attention_mask, logits_to_keep, *args, **kwargs)
        rows, width = input_ids.shape  # (B, P+T)
        real = int(attention_mask.sum())
        completion = int(attention_mask[:, -logits_to_keep:].sum())
        key = "policy" if part == "policy forward" else "old"
        recorder.add(part, since(start), **{f"{key}_padded": rows * width, f"{key}_real": real,
                                                           f"{key}_prompt_real": real - completion,
                                                           f"{key}_completion_real": completion,
                                                           f"{key}_vocab_positions": rows * logits_to_keep})
        return out

    def timed_backward(self, loss, **kwargs):
        start = clock()
        out = backward(self, loss, **kwargs)
        recorder.add("backward", since(start))
        return out

    TAGRPOTrainer._generate = timed_generate
    GRPOTrainer._generate_single_turn = timed_single
    TAGRPOTrainer._get_per_token_logps_and_entropies = timed_logps
    Accelerator.backward = timed_backward


def profile(model_dir: str, work: str, setting: dict, steps: int, q0: str) -> dict:
    """One timed run of ``setting``: per generation step (its ``steps_per_generation`` optimizer steps summed), the
    seconds of each part and the tokens; the first generation step is left out."""
    from tagrpo.toy.smollm_sums import ARMS, trainer_job
    from tagrpo.trainer.run import run_train

    recorder = Recorder()
    instrument(recorder)
    job, config = trainer_job(setting, "ta_grpo", q0, model_dir, work, steps, 1e-6, seed=0, device="cpu",
                              shuffle=True)
    run_train(job, config, callbacks=[recorder])
    per = setting["steps_per_generation"] * setting["num_iterations"]
    arm = ARMS["ta_grpo"]
    rollouts = setting["questions"] * (arm["num_rephrasings"] + 1) * arm["num_generations"]
    generations = []
    for start in range(per, len(recorder.steps), per):  # the first generation step is warm-up
        group = recorder.steps[start:start + per]
        entry = {"tokens": defaultdict(int)}
        for index, which in enumerate(("wall", "cpu")):
            parts = defaultdict(float)
            for step in group:
                for key, value in step[which].items():
                    parts[key] += value
            total = sum(s["total"][index] for s in group)
            parts[GENERATION_REST] = parts.pop("generation (all)", 0.0) - parts[GENERATION_CALL]
            parts[PARTS[-1]] = total - sum(parts.values())
            entry[f"{which}_s"], entry[f"{which}_parts_s"] = total, dict(parts)
        for step in group:
            for key, value in step["tokens"].items():
                entry["tokens"][key] += value
        generations.append(entry)
    out = {"generation_steps": generations, "rollouts_per_step": rollouts}
    for which in ("wall", "cpu"):
        seconds = mean(g[f"{which}_s"] for g in generations)
        out[f"mean_{which}_s"], out[f"rollouts_per_{which}_s"] = seconds, rollouts / seconds
        out[f"mean_{which}_parts_s"] = {p: mean(g[f"{which}_parts_s"].get(p, 0.0) for g in generations) for p in PARTS}
    out["mean_tokens"] = {k: mean(g["tokens"].get(k, 0) for g in generations) for k in generations[0]["tokens"]}
    return out


def one_run(setting_name: str, steps: int, q0: str, work: str) -> dict:
    """A fresh process per run (``--one``): the wrapped trainer and its memory never leak into the next run."""
    import subprocess

    result = os.path.join(work, "result.json")
    cmd = [sys.executable, os.path.abspath(__file__), "--one", setting_name, "--steps", str(steps), "--q0", q0,
           "--work-dir", work, "--result", result]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"a profiled run failed:\n{proc.stderr[-3000:]}")
    with open(result, encoding="utf-8") as f:
        return json.load(f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--settings", default="study",
                        help="comma-separated names of tagrpo.toy.smollm_sums.SETTINGS")
    parser.add_argument("--steps", type=int, default=4, help="generation steps per run (the first is warm-up)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--q0", default="spelled", help="q0's form")
    parser.add_argument("--work-dir", default="outputs/real_step_profile")
    parser.add_argument("--out", default=RESULTS)
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--result", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    from tagrpo.models import fetch_model
    from tagrpo.toy.smollm_sums import SETTINGS

    model_dir = fetch_model("smollm2-135m")
    if args.one:
        torch.set_num_threads(1)
        got = profile(model_dir, args.work_dir, SETTINGS[args.one], args.steps, args.q0)
        with open(args.result, "w", encoding="utf-8") as f:
            json.dump(got, f)
        return
    names = [n.strip() for n in args.settings.split(",") if n.strip()]
    start, load = time.perf_counter(), [round(os.getloadavg()[0], 2)]
    runs: dict[str, list[dict]] = {n: [] for n in names}
    for r in range(args.rounds):
        for name in names:
            got = one_run(name, args.steps, args.q0, os.path.join(args.work_dir, f"{name}{r}"))
            runs[name].append(got)
            load.append(round(os.getloadavg()[0], 2))
            print(f"round {r} {name}: {got['mean_cpu_s']:.1f} CPU s ({got['mean_wall_s']:.1f} wall s) per "
                  f"generation step, {got['rollouts_per_cpu_s']:.2f} rollouts per CPU second", flush=True)
    saved = {"command": "python benchmarks/real_step_profile.py " + " ".join(sys.argv[1:]), "machine": machine(),
             "load_average_1m": load, "q0": args.q0, "steps": args.steps, "settings": {n: SETTINGS[n] for n in names},
             "runs": runs, "wall_s": time.perf_counter() - start}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "real_step_profile.json"), "w", encoding="utf-8") as f:
        json.dump(saved, f, indent=1)
    with open(os.path.join(args.out, "real_step_profile.md"), "w", encoding="utf-8") as f:
        f.write(render(saved))


def render(saved: dict) -> str:
    names = list(saved["runs"])
    rows = []
    for which in ("cpu", "wall"):
        parts = {n: {p: mean(r[f"mean_{which}_parts_s"][p] for r in saved["runs"][n]) for p in PARTS} for n in names}
        totals = {n: mean(r[f"mean_{which}_s"] for r in saved["runs"][n]) for n in names}
        rows += [[f"{p}, {which} s", *[f"{parts[n][p]:.2f} ({100 * parts[n][p] / totals[n]:.0f}%)" for n in names]]
                 for p in PARTS]
        rows.append([f"**one generation step, {which} s**", *[f"**{totals[n]:.2f}**" for n in names]])
        rows.append([f"rollouts per {which} second",
                     *[f"{mean(r[f'rollouts_per_{which}_s'] for r in saved['runs'][n]):.2f}" for n in names]])
    tokens = sorted({k for n in names for r in saved["runs"][n] for k in r["mean_tokens"]})
    token_rows = [[k, *[f"{mean(r['mean_tokens'].get(k, 0) for r in saved['runs'][n]):,.0f}" for n in names]]
                  for k in tokens]
    return "\n".join([
        "# One training step of the real study, part by part (SmolLM2-135M-Instruct, TA-GRPO N=3 G=2)",
        "",
        f"Command: `{saved['command']}`. Machine: {saved['machine']}; 1-minute load average at the start and after "
        f"each run: {saved['load_average_1m']} (other processes shared the cores: compare the columns, which ran in "
        f"the same sitting, not the absolute seconds). Wall time {saved['wall_s'] / 60:.1f} min. q0's form "
        f"{saved['q0']}; {saved['steps']} generation steps per run, the first left out; one torch thread.",
        "",
        "Seconds per generation step (its optimizer steps summed), mean over runs, and the share of the step; CPU "
        "seconds (this process's) first: what a part costs whatever else runs, then wall seconds:",
        "",
        markdown_table(["part", *names], rows),
        "",
        "Tokens per generation step (`*_padded`: rows x padded width; `*_real`: unpadded; `*_prompt_real`: the "
        "prompt's share; `*_vocab_positions`: positions projected through the 49,152-token vocabulary):",
        "",
        markdown_table(["tokens", *names], token_rows),
        "",
    ])


if __name__ == "__main__":
    main()
