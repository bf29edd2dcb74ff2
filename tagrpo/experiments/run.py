"""The phase runner of every study: ``python studies/<script>.py`` calls ``main(<declaration>)``.

Phases, each a set of cells run by ``tagrpo.experiments.cells`` (cached, resumable; a finished cell is reused only
when its stored spec equals the one asked for): the task's own preparation (the study's base, where it has one),
the premise (q0's form, where the task has one), then for the primary arms and afterwards for the exploratory ones
(so that the verdicts that decide come first): the sweep (validation problems, every swept arm x rate x sweep seed
x setting, the base too where the declaration says so), the edge rule, the study (test problems: the base and the
primary arms on ``seeds``, the exploratory arms on ``exploratory_seeds``; fixed-rate arms with the exploratory
ones). An arm's rate comes from its own sweep cells only, so the order changes no result. Each invocation's wall
time and the cell time it computed are logged as each cell lands (``cells.Invocation``). Then the report
(``tagrpo.experiments.render``). With ``--render-only`` nothing is computed: the report is drawn from the cells on
disk.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field

from tagrpo.data.jsonl import read_jsonl
from tagrpo.experiments import judge
from tagrpo.experiments.cells import Invocation, finished, run_all
from tagrpo.experiments.study import RUNNER_UP, Study, declared
from tagrpo.experiments.tasks import task_module


@dataclass
class StudyArgs:
    """A study's invocation. The fields marked "a smoke test only" shrink the declared design; everything they
    change enters the cells' specs, so a smoke cell is never mixed with the study's."""

    work_dir: str
    out: str
    workers: int = 2
    render_only: bool = False
    sweep_only: bool = False
    premise_only: bool = False
    edge: bool = True  # the edge rule (a smoke test only: off)
    seeds: list[int] = field(default_factory=list)
    exploratory_seeds: list[int] = field(default_factory=list)
    sweep_lrs: list[float] = field(default_factory=list)
    arms: list[str] = field(default_factory=list)
    settings: list | None = None  # the settings to compute (None: every declared one)
    samples: int = 64  # test samples per question (the largest k)
    steps: int = 32  # generation steps (the sums task)
    rl_steps: int | None = None  # generation steps (the regime task; a smoke test only)
    questions: int | None = None  # held-out questions (a smoke test only)
    device: str = "cpu"
    precision: str = "declared"  # or fp32 (the sums task; a smoke test only)
    base_dir: str = "outputs/regime_base_h328"  # a regime study's own base (not committed)
    base_steps: int | None = None  # its pretraining steps (a smoke test only)
    versus_dirs: dict[str, str] = field(default_factory=dict)  # the cells of the studies a cost change reads
    overrides: dict = field(default_factory=dict)  # filled by the task's ``prepare``


def parse(study: Study, results: str, argv: list[str] | None = None) -> StudyArgs:
    parser = argparse.ArgumentParser(prog=study.script, description=f"{study.title}: design in "
                                     f"tagrpo/experiments/declarations/{study.name}.py")
    parser.add_argument("--workers", type=int, default=2, help="cells at once (the CPU cores shared among them)")
    parser.add_argument("--work-dir", default=os.path.join(results, f"{study.outputs}_cells"),
                        help="cell directories (reused: resumable; committed)")
    parser.add_argument("--out", default=results, help="where the JSON, markdown and plots go")
    parser.add_argument("--render-only", action="store_true", help="no training: write the files from the cells")
    parser.add_argument("--sweep-only", action="store_true", help="stop after the learning-rate sweep")
    parser.add_argument("--premise-only", action="store_true",
                        help="stop after the premise cells (check a regime before any of its arms runs)")
    parser.add_argument("--no-edge", dest="edge", action="store_false", help="no edge rule (a smoke test only)")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(study.seeds),
                        help="seeds of the base and primary arms (fewer than declared: a smoke test only)")
    parser.add_argument("--exploratory-seeds", type=int, nargs="+", default=list(study.exploratory_seeds))
    parser.add_argument("--sweep-lrs", type=float, nargs="+", default=list(study.sweep.rates))
    parser.add_argument("--arms", default=",".join(study.all_arms()), help="comma-separated subset (a smoke test only)")
    if study.settings != (None,) and not all(isinstance(s, int | float) for s in study.settings):
        parser.add_argument("--settings", default=",".join(map(str, study.settings)),
                            help=f"comma-separated {study.knob}s to compute (the others are rendered from their cells)")
    parser.add_argument("--samples", type=int, default=study.samples, help="samples per test question (largest k)")
    parser.add_argument("--steps", type=int, default=study.task_options.get("steps", 32),
                        help="generation steps of the sums task (a smoke test only)")
    parser.add_argument("--rl-steps", type=int, default=None, help="regime task's steps (a smoke test only)")
    parser.add_argument("--questions", type=int, default=None, help="held-out questions (a smoke test only)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (the sums task)")
    parser.add_argument("--precision", default="declared", choices=("declared", "fp32"),
                        help="fp32 on a CPU without native bf16 (a smoke test only)")
    parser.add_argument("--base-dir", default="outputs/regime_base_h328", help="the study's own base (not committed)")
    parser.add_argument("--base-steps", type=int, default=None, help="its pretraining steps (a smoke test only)")
    parser.add_argument("--versus-dir", action="append", default=[], metavar="NAME=DIR",
                        help="the cells of another study a cost change reads (default: its cells beside this one's)")
    ns = parser.parse_args(argv)
    arms = [a.strip() for a in ns.arms.split(",") if a.strip()]
    if unknown := [a for a in arms if a not in study.all_arms()]:
        parser.error(f"--arms: unknown {', '.join(unknown)}; valid arms are {', '.join(study.all_arms())}")
    versus = {c.versus: os.path.join(results, f"{declared(c.versus).outputs}_cells")
              for c in study.primary if c.versus}
    for item in ns.versus_dir:
        name, _, path = item.partition("=")
        if name not in versus:
            parser.error(f"--versus-dir {item}: valid names are {', '.join(versus) or 'none for this study'}")
        versus[name] = path
    settings = list(study.settings)
    if hasattr(ns, "settings"):
        settings = [s.strip() for s in ns.settings.split(",") if s.strip()]
        if unknown := [s for s in settings if s not in study.settings]:
            parser.error(f"--settings: unknown {', '.join(unknown)}; valid {study.knob}s are "
                         f"{', '.join(map(str, study.settings))}")
    values = {k: v for k, v in vars(ns).items() if k not in ("arms", "versus_dir", "settings")}
    args = StudyArgs(**values, arms=arms, settings=settings,
                     versus_dirs={k: os.path.abspath(v) for k, v in versus.items()})
    args.work_dir, args.out = os.path.abspath(args.work_dir), os.path.abspath(args.out)
    return args


def chosen_settings(study: Study, args: StudyArgs) -> list:
    """The settings this run computes: ``--settings`` where given, else every declared one."""
    return list(study.settings) if args.settings is None else args.settings


def sweep_specs(study: Study, args: StudyArgs, task, arms: tuple[str, ...], q0, rates: dict | None = None,
                base: bool = False) -> list[tuple[dict, str]]:
    """Every swept arm of ``arms`` at every rate, sweep seed and setting (the base first where declared); with
    ``rates`` (the grid's choices), also the edge rate of each arm whose best is the grid's lowest or highest."""
    out, grid = [], tuple(args.sweep_lrs)
    for setting in chosen_settings(study, args):
        for seed in study.sweep.seeds:
            if base:
                out.append(task.cell(study, args, "base", "validation", setting, seed, forms=study.sweep.forms, q0=q0))
            for arm in study.swept(arms):
                lrs = list(grid)
                if rates is not None and args.edge:
                    if edge := study.sweep.edge(rates.get(setting, {}).get(arm), grid):
                        lrs.append(edge)
                out += [task.cell(study, args, "arm", "validation", setting, seed, arm, lr, q0=q0) for lr in lrs]
    return out


def study_specs(study: Study, args: StudyArgs, task, tier: str, rates: dict, q0) -> list[tuple[dict, str]]:
    """The primary tier: per seed and setting, the base and every primary arm at its rate (a chosen arm trains the
    option the sweep took there). The exploratory tier: the exploratory arms on their seeds, the runner-up arms at
    their second-best rates, then the fixed arms."""
    out = []
    if tier == "primary":
        for seed in args.seeds:
            for setting in chosen_settings(study, args):
                forms = seed in study.forms_seeds
                out.append(task.cell(study, args, "base", "test", setting, seed, forms=forms, q0=q0))
                chosen = rates.get(setting, {})
                for arm in (a for a in study.primary_arms if a in args.arms and a in chosen):
                    name = chosen[f"{arm}_arm"] if arm in study.choices else arm
                    out.append(task.cell(study, args, "arm", "test", setting, seed, name, chosen[arm], forms, q0))
        return out
    for seed in args.exploratory_seeds:
        for setting in chosen_settings(study, args):
            chosen = rates.get(setting, {})
            out += [task.cell(study, args, "arm", "test", setting, seed, arm, chosen[arm], True, q0)
                    for arm in study.exploratory_arms if arm in args.arms and arm in chosen]
            out += [task.cell(study, args, "arm", "test", setting, seed, arm, chosen[name], True, q0, name=name)
                    for arm in study.runner_up if (name := arm + RUNNER_UP) in args.arms and name in chosen]
    computed = chosen_settings(study, args)
    for f in study.fixed:
        out += [task.cell(study, args, "arm", "test", setting, seed, f.arm, lr, q0=q0) for seed in f.seeds
                if seed in args.exploratory_seeds for setting in f.settings if setting in computed
                for lr in f.rates if f.name(lr) in args.arms]
    return out


def execute(study: Study, args: StudyArgs, argv: list[str]) -> dict:
    """Every phase of ``study`` (or, with ``render_only``, the cells already on disk), then the report. Returns
    what the report was drawn from."""
    from tagrpo.experiments.render import write

    task = task_module(study.task)
    log = os.path.join(args.work_dir, "invocations.jsonl")
    invocation = Invocation(log, argv, args.workers, record=not args.render_only)
    threads = max(1, (os.cpu_count() or 2) // args.workers) if study.task == "sums" else 1

    def run(specs, what):
        """The cells of ``specs``, in the plan's order (not the order they landed in); a cell that serves several
        settings (one path) runs once."""
        specs = list({path: (spec, path) for spec, path in specs}.values())
        got = finished(specs) if args.render_only else run_all(specs, args.workers, what, task.compute,
                                                                threads=threads, on_cell=invocation.landed)
        return {path: got[path] for _, path in specs if path in got}

    args.settings = chosen_settings(study, args)
    if not args.render_only and (ended := [s for s in args.settings if s in study.ended]):
        print(f"not computed, ended by design: {', '.join(f'{s} ({study.ended[s]})' for s in ended)}", flush=True)
        args.settings = [s for s in args.settings if s not in ended]
        if not args.settings:
            raise SystemExit(f"{study.name}: every setting asked for has ended; nothing to compute")
    args.overrides, record = task.prepare(study, args)
    premise, q0 = None, None
    if specs := task.premise_cells(study, args):
        got = run(specs, "premise")
        if not got:
            raise SystemExit(f"no premise cell under {args.work_dir}: run without --render-only first")
        if len(got) < len(specs):  # render-only: a group not yet begun is left out
            print(f"rendering without {len(specs) - len(got)} premise cell(s) not yet computed", flush=True)
        try:
            premise, q0 = task.q0_of(study, list(got.values()), render_only=args.render_only)
        except SystemExit:
            invocation.finish(ended="stopped: a premise failed")
            raise
        print(f"q0's form: {q0}", flush=True)
        if args.premise_only:
            invocation.finish()
            return {"premise": premise, "q0": q0}
    sweep, cells, rates = {}, {}, {}
    for tier, arms in (("primary", study.primary_arms), ("exploratory", study.exploratory_arms)):
        arms = tuple(a for a in arms if a in args.arms)
        if arms or study.sweep.base and tier == "primary":
            base = study.sweep.base and tier == "primary"
            grid = run(sweep_specs(study, args, task, arms, q0, base=base), f"sweep, {tier} arms")
            chosen = judge.choose(study, judge.sweep_rows(grid.values()))
            edge = run(sweep_specs(study, args, task, arms, q0, chosen), f"sweep, {tier} edge rule")
            sweep |= grid | edge
            rates = judge.choose(study, judge.sweep_rows(sweep.values()))
            print(f"learning rates chosen so far (after the {tier} arms' sweep):", rates, flush=True)
        if not args.sweep_only:
            cells |= run(study_specs(study, args, task, tier, rates, q0), f"study, {tier} arms")
    if args.render_only and not sweep and not cells:
        raise SystemExit(f"no cells of {study.name} under {args.work_dir}: run `python {study.script}` first "
                         "(without --render-only)")
    invocation.finish()
    data = {"premise": premise, "q0": q0, "record": record, "sweep": list(sweep.values()),
            "cells": list(cells.values()), "rates": rates, "invocations": read_jsonl(log), "argv": argv}
    write(study, args, data)
    return data


def main(name: str, argv: list[str] | None = None, results: str | None = None) -> dict:
    """A study's entry point: ``name`` is its declaration; ``results`` the folder beside the calling script."""
    study = declared(name)
    argv = sys.argv[1:] if argv is None else argv
    args = parse(study, results or os.path.join(os.getcwd(), "studies", "results"), argv)
    return execute(study, args, argv)
