"""Training rollouts per second on SmolLM2-135M-Instruct: the first real study's settings against the second's, side
by side (issue 33).

Command (what produced benchmarks/results/real_throughput.*):

    .venv/bin/python benchmarks/real_throughput.py --steps 4 --rounds 2

Each setting trains TA-GRPO (N=3, G=2) from the base on its study's training sums
(``tagrpo/data/sum_problems.py``) for ``--steps`` generation steps, ``--rounds`` times, the settings interleaved
(A, B, A, B, ...) so that both see the same machine in the same sitting; a setting with 2 workers trains two runs
at once (one torch thread each, as the studies run their cells) and adds their rollouts per second. Rollouts per
second = completions generated over the wall time of the generation steps after the first (a callback stamps each
step; model loading and the first step's warm-up are left out); rollouts per CPU second divide by the process's
CPU time over the same steps instead, which other processes on the cores do not inflate. Every setting's prompt is
also scored on the base model on the same questions: accuracy on q0's form over the second study's validation
problems (``--accuracy-questions`` x 8 samples at the studies' evaluation sampling), with a 95% interval over
questions, so that a faster setting that the model answers worse shows.

- ``study``: what the first real study (superseded) trained with (``tagrpo.toy.smollm_sums.FIRST``).
- ``v2``: what ``studies/real_study_v2.py`` trains with (``tagrpo.toy.smollm_sums.V2``).

An earlier run of this benchmark (the pilot's settings against the first study's: 3.01x, 1.01 against 3.05
rollouts/s) is in the git history of ``benchmarks/results/real_throughput.md``. Writes ``real_throughput.json`` and
``real_throughput.md`` into ``--out``.
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

from tagrpo.common.machine import machine
from tagrpo.data import sum_problems
from tagrpo.evaluation.stats import interval
from tagrpo.evaluation.tables import markdown_table

ACCURACY_SAMPLES = 8
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


class StepClock(TrainerCallback):
    """Wall-clock and process CPU stamps at the end of every optimizer step."""

    def __init__(self):
        self.stamps: list[tuple[float, float]] = []

    def on_step_end(self, args, state, control, **kwargs):
        self.stamps.append((time.perf_counter(), time.process_time()))


def train_steps(model_dir: str, work: str, setting: dict, steps: int, q0: str) -> dict:
    from tagrpo.toy.smollm_sums import ARMS, trainer_job
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
    ends = clock.stamps[per_generation - 1::per_generation]  # the end of each generation's last update
    timed, cpu = ends[-1][0] - ends[0][0], ends[-1][1] - ends[0][1]
    rollouts = (len(ends) - 1) * q * (n + 1) * g
    return {"rollouts_per_s": rollouts / timed, "rollouts_per_cpu_s": rollouts / cpu, "timed_s": timed,
            "timed_cpu_s": cpu, "timed_rollouts": rollouts, "total_s": time.perf_counter() - start,
            "trainer_rollouts": trainer.rollouts}


def base_accuracy(model_dir: str, setting: dict, q0: str, count: int | None) -> dict:
    """Accuracy on q0's form of the base model under ``setting``'s prompt, on the second study's validation
    problems (the same questions for every setting): the mean over questions and its 95% interval."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tagrpo.toy.smollm_sums import EVAL_SAMPLING
    from tagrpo.toy.smollm_sums import correct as score
    from tagrpo.toy.smollm_sums import sample as draw

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16)
    rows = sum_problems.questions("validation", q0, "main", seed=0, count=count)
    start = time.perf_counter()
    hits = score(draw(model, tokenizer, [r["prompt"] for r in rows], ACCURACY_SAMPLES, 0,
                      setting["max_completion_length"], setting), rows)
    per_question = [sum(h) / ACCURACY_SAMPLES for h in hits]
    return {**interval(per_question), "questions": len(rows), "samples": ACCURACY_SAMPLES,
            "sampling": EVAL_SAMPLING, "wall_s": time.perf_counter() - start}


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
    return {"rollouts_per_s": sum(g["rollouts_per_s"] for g in got),
            "rollouts_per_cpu_s": sum(g["rollouts_per_cpu_s"] for g in got), "workers": got}


def main() -> None:
    from tagrpo.toy.smollm_sums import SETTINGS

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=6, help="generation steps per timed run (the first is warm-up)")
    parser.add_argument("--rounds", type=int, default=2, help="timed runs per setting, interleaved")
    parser.add_argument("--settings", default="study,v2", help="names of smollm_sums.SETTINGS, the first the old")
    parser.add_argument("--accuracy-questions", type=int, default=None, help="default: every validation problem")
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
    settings = {name: SETTINGS[name] for name in args.settings.split(",")}
    old, new = list(settings)
    runs: dict[str, list[dict]] = {name: [] for name in settings}
    start, load = time.perf_counter(), [round(os.getloadavg()[0], 2)]
    for r in range(args.rounds):
        for name, setting in settings.items():
            got = timed_run(setting, args.steps, args.q0, os.path.join(args.work_dir, f"{name}{r}"))
            runs[name].append(got)
            load.append(round(os.getloadavg()[0], 2))
            print(f"round {r} {name}: {got['rollouts_per_s']:.2f} rollouts/s, {got['rollouts_per_cpu_s']:.2f} "
                  "per CPU s", flush=True)
    accuracy = {name: base_accuracy(model_dir, s, args.q0, args.accuracy_questions) for name, s in settings.items()}
    speed = {name: mean(x["rollouts_per_s"] for x in rs) for name, rs in runs.items()}
    cpu_speed = {name: mean(x["rollouts_per_cpu_s"] for x in rs) for name, rs in runs.items()}
    saved = {"command": "python benchmarks/real_throughput.py " + " ".join(sys.argv[1:]), "machine": machine(),
             "load_average_1m": load, "settings": settings, "runs": runs, "rollouts_per_s": speed,
             "rollouts_per_cpu_s": cpu_speed, "speedup": speed[new] / speed[old],
             "speedup_cpu": cpu_speed[new] / cpu_speed[old], "base_q0_accuracy": accuracy, "q0": args.q0,
             "round_speedup_cpu": [b["rollouts_per_cpu_s"] / a["rollouts_per_cpu_s"]
                                   for a, b in zip(runs[old], runs[new], strict=True)],
             "wall_s": time.perf_counter() - start}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "real_throughput.json"), "w", encoding="utf-8") as f:
        json.dump(saved, f, indent=1)
    with open(os.path.join(args.out, "real_throughput.md"), "w", encoding="utf-8") as f:
        f.write(render(saved, args))


def render(saved: dict, args) -> str:
    settings, runs, accuracy = saved["settings"], saved["runs"], saved["base_q0_accuracy"]
    old, new = list(settings)
    changed = {k: (settings[old].get(k), settings[new].get(k)) for k in {*settings[old], *settings[new]}
               if settings[old].get(k) != settings[new].get(k)}
    rounds = saved.get("round_speedup_cpu", [])
    ci = interval(rounds) if len(rounds) > 1 else None
    per_round = (f" Per round (each a pair run side by side): {' / '.join(f'{r:.2f}' for r in rounds)}x per CPU "
                 "second" + (f", 95% t interval over the rounds [{ci['lo']:.2f}, {ci['hi']:.2f}]" if ci else "")
                 + ".") if rounds else ""
    rows = [[name, len(runs[name]), " / ".join(f"{x['rollouts_per_s']:.2f}" for x in runs[name]),
             f"{saved['rollouts_per_s'][name]:.2f}", f"{saved['rollouts_per_cpu_s'][name]:.2f}",
             f"{100 * accuracy[name]['mean']:.1f} [{100 * accuracy[name]['lo']:.1f}, {100 * accuracy[name]['hi']:.1f}]"]
            for name in settings]
    return "\n".join([
        "# Training rollouts per second on SmolLM2-135M-Instruct: the first real study's settings against the second's",
        "",
        f"Command: `{saved['command']}`. Machine: {saved['machine']}; 1-minute load average at the start and after "
        f"each run: {saved['load_average_1m']} (other processes shared the cores: compare the rows, measured "
        f"interleaved in one sitting). Wall time {saved['wall_s'] / 60:.1f} min. TA-GRPO (N=3, G=2), {args.steps} "
        f"generation steps per run (the first not timed), settings interleaved over {args.rounds} rounds; 2 workers "
        "train two runs at once (one torch thread each, as the studies run their cells) and add their rollouts per "
        "second.",
        "",
        f"Settings: `{old}` = {settings[old]}. `{new}` changes "
        + ", ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in sorted(changed.items())) + ".",
        "",
        markdown_table(["setting", "runs", "rollouts/s per run", "rollouts/s (mean)", "rollouts per CPU s (mean)",
                        f"base accuracy on q0 ({saved['q0']}), validation, % [95% CI over questions]"], rows),
        "",
        f"Speed-up, {new} over {old}: **{saved['speedup']:.2f}x** in rollouts per wall second, "
        f"**{saved['speedup_cpu']:.2f}x** per CPU second (means of the runs; one machine, one sitting). Base "
        f"accuracy: {accuracy[new]['questions']} validation questions x {accuracy[new]['samples']} samples each, the "
        "same questions and sampling seed for both." + per_round,
        "",
    ])


if __name__ == "__main__":
    main()
