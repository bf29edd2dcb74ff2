"""What a LoRA adapter costs and saves against full fine-tuning on SmolLM2-135M-Instruct, at the real study's settings
(issue 35, item 3).

Command (what produced benchmarks/results/lora_cost.*):

    .venv/bin/python benchmarks/lora_cost.py

Both arms train TA-GRPO (N=3, G=2, ``smollm_sums.ARMS["ta_grpo"]``) from the base through
``smollm_sums.trainer_job``: the study's training rows (``tagrpo.data.sum_problems``, q0 in ``--q0``'s form, the seed's
order), its prompt, batch (4 questions x 8 completions per generation step, two optimizer steps per generation batch),
12 completion tokens, no KL, and its bf16 rule (``machine.native_bf16``: bf16 autocast over fp32 master weights where
the CPU has native bf16, fp32 otherwise). ``--setting`` names ``smollm_sums.SETTINGS``: ``v2`` (default, the study to
run now: pairs split, no gradient checkpointing) or ``study`` (the first).

- ``full``: every weight trains, at ``--full-lr`` (default 1e-5: TA-GRPO's rate in the first study's sweep).
- ``lora``: ``use_peft=true``, r=16, alpha=32, dropout 0.05, ``lora_target_modules=all-linear`` (every linear layer
  of the decoder: q/k/v/o and gate/up/down projections; not ``lm_head``), at each of ``--lora-lrs``. These rates are
  untuned placeholders: 1e-4 is 10x the full rate (LoRA usually wants about 10x), 3e-4 a second guess above it.

Round r runs ``full`` and ``lora`` at ``--lora-lrs[r]`` at the same time, each in its own process with one torch thread
(the study's two-cells-at-once layout), so both see the same machine at the same moment and their peak memory is
their own. Timing: a callback stamps the end of every optimizer step (wall and process CPU time); the first
generation batch is warm-up and left out. "Update with generation" is the first optimizer step of a generation batch
(generation, scoring, old log-probs, forward, backward, optimizer step), "update only" the second (forward, backward,
optimizer step on the buffered half). Peak memory: the process's max RSS (``resource.getrusage``) at the end of
training, before evaluation; RSS at the start of training (model loaded, no optimizer state yet) beside it.
Accuracy: q0 pass@1 on the study's validation problems (``smollm_sums.held_out``, ``--eval-questions`` of them,
``EVAL_SAMPLES`` samples each at the evaluation sampling, seed ``--seed``) of the base, and of each trained model
(a LoRA adapter merged into its base first), all in bf16 as the study evaluates. One training seed.

Writes ``lora_cost.json`` and ``lora_cost.md`` into ``--out``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from statistics import mean

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
LORA = {"lora_r": 16, "lora_alpha": 32, "lora_dropout": 0.05, "lora_target_modules": ["all-linear"]}


def mib_peak() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def mib_now() -> float:
    with open("/proc/self/status", encoding="utf-8") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def q0_pass1(model, tokenizer, setting: dict, q0: str, count: int | None, seed: int) -> dict:
    """Mean over validation problems of the share of correct samples on q0's form, with its 95% interval."""
    from tagrpo.data import sum_problems
    from tagrpo.evaluation.stats import interval
    from tagrpo.toy import smollm_sums

    rows = smollm_sums.held_out("validation", count, setting)
    texts = [sum_problems.render(r["a"], r["b"], q0, r["name"], r["item"]) for r in rows]
    start = time.perf_counter()
    responses = smollm_sums.sample(model, tokenizer, texts, smollm_sums.EVAL_SAMPLES, seed,
                                  setting["max_completion_length"], setting)
    hits = smollm_sums.correct(responses, rows)
    per_question = [sum(h) / len(h) for h in hits]
    return {**interval(per_question), "questions": len(rows), "samples": smollm_sums.EVAL_SAMPLES,
            "wall_s": time.perf_counter() - start}


def one(spec: dict) -> dict:
    """One arm in this process: train, time, measure memory, evaluate the trained model."""
    import torch
    from transformers import TrainerCallback

    from tagrpo.models import fetch_model
    from tagrpo.toy import smollm_sums
    from tagrpo.toy.smollm_sums import SETTINGS
    from tagrpo.trainer.run import run_train

    class Clock(TrainerCallback):
        def __init__(self):
            self.stamps: list[tuple[float, float]] = []
            self.memory: dict[str, float] = {}

        def on_train_begin(self, args, state, control, **kwargs):
            self.memory.update(rss_train_begin_mib=mib_now(), peak_before_train_mib=mib_peak())

        def on_step_end(self, args, state, control, **kwargs):
            self.stamps.append((time.perf_counter(), time.process_time()))

        def on_train_end(self, args, state, control, **kwargs):
            self.memory.update(peak_rss_mib=mib_peak(), rss_train_end_mib=mib_now())

    setting = SETTINGS[spec["setting"]]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model_dir = fetch_model("smollm2-135m")
    job, config = smollm_sums.trainer_job(setting, "ta_grpo", spec["q0"], model_dir, spec["work"], spec["steps"],
                                         spec["lr"], seed=spec["seed"], device=device)
    if spec["peft"]:
        job = dataclasses.replace(job, use_peft=True, **LORA)
    clock = Clock()
    start = time.perf_counter()
    trainer = run_train(job, config, callbacks=[clock])
    train_wall = time.perf_counter() - start
    model = trainer.model
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    targets = None
    if spec["peft"]:
        targets = sorted({n.split(".")[-1] for n, m in model.named_modules() if hasattr(m, "lora_A")})
        model = model.merge_and_unload()
    split = config.steps_per_generation
    stamps = clock.stamps
    timed = stamps[split - 1:]  # from the end of the first (warm-up) generation batch
    steps = [(i, b[0] - a[0], b[1] - a[1]) for i, (a, b) in enumerate(zip(timed, timed[1:], strict=False), 1)]
    with_gen = [(w, c) for i, w, c in steps if i % split == 1 % split]  # the first update of a generation batch
    update_only = [(w, c) for i, w, c in steps if i % split != 1 % split]
    ends = stamps[split - 1::split]
    gens = len(ends) - 1
    with open(os.path.join(spec["work"], "run", "metrics.jsonl"), encoding="utf-8") as f:
        rewards = [round(r["reward"], 4) for r in map(json.loads, f) if "tagrpo/rollouts" in r and "reward" in r]
    tokenizer = trainer.processing_class
    after = q0_pass1(model.to(torch.bfloat16), tokenizer, setting, spec["q0"], spec["eval_questions"], spec["seed"])
    shutil.rmtree(os.path.join(spec["work"], "run", "final"), ignore_errors=True)  # the saved model: not needed
    return {
        **spec, **clock.memory, "trainable_params": trainable, "total_params": total, "lora_targets": targets,
        "optimizer_steps": trainer.state.global_step, "generation_steps": len(ends), "rollouts": trainer.rollouts,
        "timed_generation_steps": gens,
        "s_per_generation_step": (ends[-1][0] - ends[0][0]) / gens,
        "cpu_s_per_generation_step": (ends[-1][1] - ends[0][1]) / gens,
        "s_per_optimizer_step": mean(x[0] for x in with_gen + update_only),
        "cpu_s_per_optimizer_step": mean(x[1] for x in with_gen + update_only),
        "s_per_update_with_generation": mean(x[0] for x in with_gen),
        "cpu_s_per_update_with_generation": mean(x[1] for x in with_gen),
        "s_per_update_only": mean(x[0] for x in update_only) if update_only else None,
        "cpu_s_per_update_only": mean(x[1] for x in update_only) if update_only else None,
        "train_wall_s": train_wall, "reward_per_generation_step": rewards, "q0_pass1_after": after,
        "threads": torch.get_num_threads(), "bf16": config.bf16, "device": device,
        "gradient_checkpointing": config.gradient_checkpointing,
    }


def launch(spec: dict) -> tuple[subprocess.Popen, str]:
    os.makedirs(spec["work"], exist_ok=True)
    result = os.path.join(spec["work"], "result.json")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, os.path.abspath(__file__), "--one", json.dumps(spec), "--result", result]
    log = open(os.path.join(spec["work"], "log.txt"), "w", encoding="utf-8")  # noqa: SIM115 (closed by the child)
    return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT), result


def base_accuracy(setting_name: str, q0: str, count: int | None, seed: int) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tagrpo.models import fetch_model
    from tagrpo.toy.smollm_sums import SETTINGS

    torch.set_num_threads(1)  # as the arms' processes
    model_dir = fetch_model("smollm2-135m")
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16)
    return q0_pass1(model, AutoTokenizer.from_pretrained(model_dir), SETTINGS[setting_name], q0, count, seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=8, help="generation steps per run (the first is warm-up)")
    parser.add_argument("--setting", default="v2", help="a name of smollm_sums.SETTINGS")
    parser.add_argument("--full-lr", type=float, default=1e-5)
    parser.add_argument("--lora-lrs", default="1e-4,3e-4", help="one LoRA rate per round, each against full")
    parser.add_argument("--seed", type=int, default=0, help="the training seed (one) and the evaluation's")
    parser.add_argument("--eval-questions", type=int, default=None, help="default: every validation problem")
    parser.add_argument("--q0", default="spelled", help="q0's form")
    parser.add_argument("--work-dir", default="outputs/lora_cost")
    parser.add_argument("--out", default=RESULTS)
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--result", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        got = one(json.loads(args.one))
        with open(args.result, "w", encoding="utf-8") as f:
            json.dump(got, f, indent=1)
        return
    from tagrpo.common.machine import machine

    start, load = time.perf_counter(), [round(os.getloadavg()[0], 2)]
    common = {"steps": args.steps, "setting": args.setting, "q0": args.q0, "seed": args.seed,
              "eval_questions": args.eval_questions}
    rounds = []
    for r, lora_lr in enumerate(float(x) for x in args.lora_lrs.split(",")):
        specs = [{**common, "arm": "full", "peft": False, "lr": args.full_lr},
                 {**common, "arm": "lora", "peft": True, "lr": lora_lr}]
        if r % 2:
            specs.reverse()  # alternate which is started first
        procs = []
        for s in specs:
            s["work"] = os.path.join(args.work_dir, f"round{r}_{s['arm']}_lr{s['lr']:g}")
            shutil.rmtree(s["work"], ignore_errors=True)
            procs.append(launch(s))
        got = []
        for proc, result in procs:
            if proc.wait():
                raise RuntimeError(f"an arm failed: see {os.path.dirname(result)}/log.txt")
            with open(result, encoding="utf-8") as f:
                got.append(json.load(f))
        rounds.append(sorted(got, key=lambda g: g["arm"]))
        load.append(round(os.getloadavg()[0], 2))
        for g in rounds[-1]:
            print(f"round {r} {g['arm']} lr {g['lr']:g}: {g['s_per_generation_step']:.1f} s/generation step, "
                  f"peak {g['peak_rss_mib']:.0f} MiB, pass@1 {100 * g['q0_pass1_after']['mean']:.1f}%", flush=True)
    base = base_accuracy(args.setting, args.q0, args.eval_questions, args.seed)
    load.append(round(os.getloadavg()[0], 2))
    keys = ("s_per_generation_step", "cpu_s_per_generation_step", "s_per_optimizer_step", "cpu_s_per_optimizer_step",
            "s_per_update_with_generation", "s_per_update_only", "cpu_s_per_update_only", "peak_rss_mib")
    ratios = [{k: lo[k] / fu[k] for k in keys if lo.get(k) and fu.get(k)} for fu, lo in rounds]
    saved = {"command": " ".join(["python benchmarks/lora_cost.py", *sys.argv[1:]]), "machine": machine(),
             "load_average_1m": load, "lora": LORA, "setting": args.setting, "q0": args.q0,
             "base_q0_pass1": base, "rounds": rounds, "lora_over_full": ratios,
             "wall_s": time.perf_counter() - start}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "lora_cost.json"), "w", encoding="utf-8") as f:
        json.dump(saved, f, indent=1)
    with open(os.path.join(args.out, "lora_cost.md"), "w", encoding="utf-8") as f:
        f.write(render(saved))


def render(saved: dict) -> str:
    from tagrpo.evaluation.tables import markdown_table

    def pct(a: dict) -> str:
        return f"{100 * a['mean']:.1f} [{100 * a['lo']:.1f}, {100 * a['hi']:.1f}]"

    def num(x, f=".2f") -> str:
        return "-" if x is None else format(x, f)

    rounds, base = saved["rounds"], saved["base_q0_pass1"]
    first = rounds[0][0]
    full_lr = first["lr"]
    multiples = ", ".join(f"{pair[1]['lr']:g} = {pair[1]['lr'] / full_lr:g}x" for pair in rounds)
    rows = []
    for r, pair in enumerate(rounds):
        for g in pair:
            rows.append([r, g["arm"], f"{g['lr']:g}", f"{g['trainable_params']:,}", f"{g['total_params']:,}",
                         num(g["s_per_generation_step"], ".1f"), num(g["cpu_s_per_generation_step"], ".1f"),
                         num(g["s_per_optimizer_step"]), num(g["cpu_s_per_optimizer_step"]),
                         num(g["s_per_update_with_generation"]), num(g["s_per_update_only"]),
                         num(g["cpu_s_per_update_only"]), f"{g['rss_train_begin_mib']:.0f}",
                         f"{g['peak_rss_mib']:.0f}", f"{g['peak_rss_mib'] - g['rss_train_begin_mib']:.0f}",
                         pct(g["q0_pass1_after"])])
    ratio_rows = [[r, f"{rounds[r][1]['lr']:g}"] + [num(x.get(k)) for k in
                  ("s_per_generation_step", "cpu_s_per_generation_step", "s_per_optimizer_step",
                   "cpu_s_per_optimizer_step", "s_per_update_only", "cpu_s_per_update_only", "peak_rss_mib")]
                  for r, x in enumerate(saved["lora_over_full"])]
    targets = next(g["lora_targets"] for pair in rounds for g in pair if g["arm"] == "lora")
    m = saved["machine"]
    return "\n".join([
        "# LoRA against full fine-tuning on SmolLM2-135M-Instruct: cost per step, peak memory, short-run accuracy",
        "",
        f"Command: `{saved['command'].strip()}`. Machine: {m['platform']}, {m['cpus']} CPUs, torch {m['torch']}, "
        f"transformers {m['transformers']}, trl {m['trl']}, device {first['device']}. 1-minute load average at the "
        f"start, after each round and after the base evaluation: {saved['load_average_1m']} (other processes shared "
        "the cores: compare the arms within a round, which ran at the same time; CPU seconds are the steadier "
        f"measure). Wall time "
        f"{saved['wall_s'] / 60:.1f} min.",
        "",
        f"Settings: smollm_sums.SETTINGS[{saved['setting']!r}], TA-GRPO (N=3, G=2), q0 form `{saved['q0']}`, "
        f"{first['generation_steps']} generation steps x {first['rollouts'] // first['generation_steps']} rollouts = "
        f"{first['rollouts']} rollouts per run "
        f"({first['optimizer_steps']} optimizer steps), bf16 autocast {first['bf16']}, gradient checkpointing "
        f"{first['gradient_checkpointing']}; one seed ({first['seed']}), the same training rows for every run. Each "
        f"round trains both arms at once, one process of {first['threads']} torch thread each; the first generation "
        f"batch is warm-up, so {first['timed_generation_steps']} generation steps "
        f"({2 * first['timed_generation_steps']} optimizer steps) are timed. LoRA: r=16, alpha=32, dropout 0.05, "
        f"target `all-linear` = {', '.join(targets)} in every decoder layer. Full fine-tuning at {full_lr:g} "
        f"(the first study's TA-GRPO rate); the LoRA rates ({multiples} the full rate) are untuned placeholders, "
        "none chosen on test questions.",
        "",
        markdown_table(["round", "arm", "lr", "trainable params", "params", "s / gen step", "CPU s / gen step",
                        "s / opt step", "CPU s / opt step", "s / update with gen", "s / update only",
                        "CPU s / update only", "RSS at train start, MiB", "peak RSS, MiB", "peak - start, MiB",
                        "q0 pass@1 after, % [95% CI]"], rows),
        "",
        "LoRA over full, within each round (below 1: LoRA is cheaper):",
        "",
        markdown_table(["round", "LoRA lr", "s / gen step", "CPU s / gen step", "s / opt step", "CPU s / opt step",
                        "s / update only", "CPU s / update only", "peak RSS"], ratio_rows),
        "",
        f"q0 pass@1 of the base before training: **{pct(base)}** % ({base['questions']} validation problems x "
        f"{base['samples']} samples, temperature 0.6, top-p 0.95, sampling seed {first['seed']}; the same questions "
        "and seed after training). One seed: the accuracies say whether a run moved, not by how much an arm would "
        "on average. Mean training reward per generation step (q0 and rephrasings pooled):",
        "",
        *[f"- round {r} {g['arm']} lr {g['lr']:g}: {g['reward_per_generation_step']}" for r, pair in
          enumerate(rounds) for g in pair],
        "",
    ])


if __name__ == "__main__":
    main()
