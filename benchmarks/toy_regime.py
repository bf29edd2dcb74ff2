"""The regime map: TA-GRPO against its baselines at several shares of hard questions, tuned per arm, many seeds.

Command (what produced benchmarks/results/toy_regime.*):

    .venv/bin/python benchmarks/toy_regime.py --workers 2

The design (knob settings, arms, seeds, sweep, primary contrasts) is declared in ``tagrpo/experiments/study.py``.

1. Sweep, on validation problems: every primary and exploratory arm at each of ``SWEEP_LRS`` on ``SWEEP_SEEDS`` at
   ``hard_share = SWEEP_KNOB``, scored by ``sweep_objective`` on held-out validation q0 questions; each arm gets its
   own best learning rate (the adaptive arms take TA-GRPO's).
2. Study, on test problems: per knob setting and seed, the base model's counts on the held-out q0 questions (the
   hard subset) and its premise (every form), then each arm's cell from the shipped regime base with its learning
   rate, the demo's ``regime`` preset (``tagrpo/experiments/demo.py``: two optimizer steps per generation batch).
3. ``tagrpo.experiments.study.judge`` over the paired per-seed differences, Holm over the primary family.

Every cell is one process-pool task (``--workers`` processes of one torch thread each) writing its result to its
own directory under ``--work-dir``; a finished cell is reused, so an interrupted study resumes where it stopped.
Each training invocation appends its wall time to ``--work-dir``/invocations.jsonl, which the report sums.
Writes ``toy_regime.json``, ``toy_regime.md`` and ``toy_regime.png`` into ``--out``; ``--render-only`` rewrites them
from the cells on disk.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context

from tagrpo.data.jsonl import append_jsonl, read_jsonl, write_jsonl
from tagrpo.experiments import study
from tagrpo.toy.regime_base import recipe_id

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _quiet_worker(threads: int = 1) -> None:
    import torch

    torch.set_num_threads(threads)
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()


def _exit_with_parent(parent: int, poll_s: float = 2.0) -> None:
    """End this worker when the study's process is gone (killed, or a test's timeout): no orphan keeps a cell
    running on the cores after it (the cell is not written, so a rerun computes it)."""
    while os.getppid() == parent:
        time.sleep(poll_s)
    os._exit(1)


def cell_path(work: str, spec: dict) -> str:
    name = "base" if spec["kind"] == "base" else f"{spec['arm']}_lr{spec['learning_rate']:g}"
    if spec["kind"] != "base" and spec.get("rl_steps"):
        name += f"_steps{spec['rl_steps']}"  # a longer run than the preset's (the RL check) or a smoke test's
    root = os.path.join(work, os.path.basename(spec["base"].rstrip("/"))) if spec.get("base") else work
    return os.path.join(root, spec["split"], f"h{spec['knob']:g}", f"seed{spec['seed']}", name, "result.jsonl")


def done(path: str, spec: dict) -> dict | None:
    rows = read_jsonl(path)
    return rows[0] if rows and rows[0]["spec"] == spec else None


def run_cell(spec: dict, path: str, compute=None) -> dict:
    """One cell (an arm, or the base model) in this process, by ``compute(spec, directory)`` (this study's
    ``_compute`` by default); its log goes to ``log.txt`` beside the result."""
    if (result := done(path, spec)) is not None:
        return result
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(os.path.join(os.path.dirname(path), "log.txt"), "w", encoding="utf-8") as log, \
            contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        result = (compute or _compute)(spec, os.path.dirname(path))
    write_jsonl(path, [result])
    return result


def _config(spec: dict, out: str):
    from tagrpo.experiments.demo import DemoConfig

    return DemoConfig(
        output_dir=out, world="regime", hard_share=spec["knob"], preset="regime", seed=spec["seed"],
        arms=spec.get("arm") or "grpo", learning_rate=spec.get("learning_rate", 0.0), learning_rates="",
        held_out_split=spec["split"], eval_samples=spec["samples"], rl_steps=spec.get("rl_steps"),
        eval_questions=spec.get("questions"),
    )


def _compute(spec: dict, out: str) -> dict:
    import logging

    import transformers
    from rich.console import Console
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tagrpo.experiments.demo import PREMISE_QUESTIONS, evaluate, held_out_rows, premise, train_arm
    from tagrpo.toy.worlds import resolve_world_base

    transformers.utils.logging.disable_progress_bar()
    logging.getLogger("tagrpo.trainer.run").setLevel(logging.WARNING)
    start = time.perf_counter()
    cfg, console = _config(spec, out), Console(file=sys.stdout, width=120)
    forms_questions = spec.get("questions") or PREMISE_QUESTIONS  # a smoke test's override shrinks the premise too
    base = resolve_world_base("regime", spec.get("base"), os.path.join(out, "base_model"), console)
    held_out = held_out_rows(cfg)
    tokenizer = AutoTokenizer.from_pretrained(base)
    if spec["kind"] == "base":
        model = AutoModelForCausalLM.from_pretrained(base)
        result = evaluate(model, tokenizer, held_out, cfg.eval_samples, cfg.max_completion_length, cfg.seed)
        result["forms"] = premise(model, tokenizer, cfg, forms_questions) if spec["forms"] else None
        result["hard"] = [bool(r["hard"]) for r in held_out]
    else:
        after = (lambda m, t: premise(m, t, cfg, forms_questions)) if spec["forms"] else None
        result = train_arm(spec["arm"], cfg, base, held_out, console, after=after)
        result.pop("example", None)
    return {"spec": spec, **result, "cell_wall_s": time.perf_counter() - start}


def finished(specs: list[tuple[dict, str]]) -> dict[str, dict]:
    return {path: r for spec, path in specs if (r := done(path, spec)) is not None}


def run_all(specs: list[tuple[dict, str]], workers: int, what: str, compute=None, threads: int = 1) -> dict[str, dict]:
    """Every cell of ``specs`` (reusing finished ones), ``workers`` processes of ``threads`` torch threads at a
    time, each cell by ``compute`` (see ``run_cell``); results keyed by path."""
    results = finished(specs)
    todo = [(spec, path) for spec, path in specs if path not in results]
    print(f"{what}: {len(specs)} cells, {len(results)} done before, {len(todo)} to run on {workers} workers",
          flush=True)
    start = time.perf_counter()
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn"), initializer=_quiet_worker,
                             initargs=(threads,)) as pool:
        futures = {pool.submit(run_cell, spec, path, compute): path for spec, path in todo}
        for i, future in enumerate(as_completed(futures), start=1):
            path = futures[future]
            results[path] = future.result()
            elapsed = time.perf_counter() - start
            print(f"  [{i}/{len(todo)}] {os.path.relpath(path)} ({results[path]['cell_wall_s']:.0f} s; "
                  f"{elapsed / 60:.1f} min, about {elapsed / i * (len(todo) - i) / 60:.0f} min left)", flush=True)
    return results


def sweep_specs(args) -> list[tuple[dict, str]]:
    """Every arm at every rate and sweep seed, and the base model on the same validation questions."""
    out = []
    for seed in study.SWEEP_SEEDS:
        spec = {"kind": "base", "knob": study.SWEEP_KNOB, "seed": seed, "split": "validation",
                "samples": study.SWEEP_SAMPLES, "forms": False, **args.overrides}
        out.append((spec, cell_path(args.work_dir, spec)))
    for arm in study.PRIMARY_ARMS + study.EXPLORATORY_ARMS:
        for lr in args.sweep_lrs:
            for seed in study.SWEEP_SEEDS:
                spec = {"kind": "arm", "arm": arm, "learning_rate": lr, "knob": study.SWEEP_KNOB, "seed": seed,
                        "split": "validation", "samples": study.SWEEP_SAMPLES, "forms": False, **args.overrides}
                out.append((spec, cell_path(args.work_dir, spec)))
    return out


def study_specs(args, lrs: dict[str, float]) -> list[tuple[dict, str]]:
    """Primary arms over every seed first (the order a cut-short study keeps), then the exploratory arms."""
    out = []

    def add(kind, knob, seed, arm=None, forms=False):
        spec = {"kind": kind, "knob": knob, "seed": seed, "split": "test", "samples": args.samples, "forms": forms,
                **args.overrides}
        if arm:
            spec.update(arm=arm, learning_rate=lrs[arm])
        out.append((spec, cell_path(args.work_dir, spec)))

    for seed in args.seeds:
        for knob in study.KNOBS:
            add("base", knob, seed, forms=True)
            for arm in study.PRIMARY_ARMS:
                add("arm", knob, seed, arm, forms=seed in args.exploratory_seeds)
    for seed in args.exploratory_seeds:
        for knob in study.KNOBS:
            for arm in study.EXPLORATORY_ARMS:
                add("arm", knob, seed, arm, forms=True)
        for arm in study.ADAPTIVE_ARMS:
            add("arm", study.HARDEST, seed, arm)
    return out


def _log_invocation(args, start: float) -> None:
    """One line per training invocation in ``work_dir/invocations.jsonl``: what the study cost in wall time."""
    append_jsonl(os.path.join(args.work_dir, "invocations.jsonl"),
                 [{"argv": args.argv, "wall_s": time.perf_counter() - start, "workers": args.workers}])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2, help="cells trained at once (one torch thread each)")
    parser.add_argument("--work-dir", default="outputs/toy_regime", help="cell directories (reused: resumable)")
    parser.add_argument("--out", default=RESULTS, help="where the JSON, markdown and plot go")
    parser.add_argument("--samples", type=int, default=64, help="samples per held-out test question (largest k)")
    parser.add_argument("--sweep-lrs", type=float, nargs="+", default=list(study.SWEEP_LRS))
    parser.add_argument("--sweep-only", action="store_true", help="stop after the learning-rate sweep")
    parser.add_argument("--render-only", action="store_true", help="no training: write the files from the cells")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(study.SEEDS),
                        help="seeds of the primary arms (fewer than the declared ones: a smoke test only)")
    parser.add_argument("--exploratory-seeds", type=int, nargs="+", default=list(study.EXPLORATORY_SEEDS))
    parser.add_argument("--rl-steps", type=int, default=None, help="override the preset (a smoke test only)")
    parser.add_argument("--questions", type=int, default=None, help="held-out questions (a smoke test only)")
    args = parser.parse_args()
    args.argv = sys.argv[1:]
    args.overrides = {k: v for k, v in (("rl_steps", args.rl_steps), ("questions", args.questions)) if v}
    args.overrides["base_recipe"] = recipe_id()  # cells of another base are not reused
    start = time.perf_counter()
    sweep = finished(sweep_specs(args)) if args.render_only else run_all(sweep_specs(args), args.workers, "sweep")
    rows = [{"arm": r["spec"].get("arm", "base"), "learning_rate": r["spec"].get("learning_rate", 0.0),
             "seed": r["spec"]["seed"], "objective": study.sweep_objective(r["pass_at_k"]), "pass_at_k": r["pass_at_k"],
             "clip_max": max(r.get("clip_fraction", []), default=0.0), "cell_wall_s": r["cell_wall_s"]}
            for r in sweep.values()]
    lrs = study.choose_learning_rates([r for r in rows if r["arm"] != "base"])
    print("learning rates from the sweep:", lrs, flush=True)
    if args.sweep_only:
        _log_invocation(args, start)
        return
    lrs.update({arm: lrs["ta_grpo"] for arm in study.ADAPTIVE_ARMS})
    specs = study_specs(args, lrs)
    cells = finished(specs) if args.render_only else run_all(specs, args.workers, "study")
    from toy_regime_report import write

    if not args.render_only:
        _log_invocation(args, start)
    write(args, rows, lrs, list(cells.values()), read_jsonl(os.path.join(args.work_dir, "invocations.jsonl")))


if __name__ == "__main__":
    main()
