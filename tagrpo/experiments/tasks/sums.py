"""SmolLM2-135M-Instruct on sums as a study's task (``tagrpo.data.sum_problems``: a + b in four surface forms).

A cell is the premise (the base's accuracy in every form on validation problems, which chooses q0's form), the
base model's evaluation, or one arm trained at one rate and seed and then evaluated, each computed by
``tagrpo.toy.smollm_sums.compute`` (what it measures: that module's docstring).

``task_options``: ``setting`` (one of ``smollm_sums.SETTINGS``: prompt template, completion budget, questions per
step, optimizer steps per generation batch, precision rule, speed flags) and ``steps`` (generation steps of an arm;
GRPO on 2.5x the questions trains 2.5x the steps). Precision: bf16 autocast over fp32 master weights, native on a
GPU or a CPU with AVX512-BF16 or AMX (``tagrpo.common.machine.native_bf16``), emulated through fp32 kernels elsewhere
(``tagrpo.common.bf16``: the same arithmetic up to the order of fp32 sums); one study is one precision, so fp32 cells
are a smoke run's only (``"precision": "fp32"`` in the spec: never mixed with bf16 cells).
"""

from __future__ import annotations

import math
import os

from tagrpo.common.machine import native_bf16
from tagrpo.data import sum_problems
from tagrpo.toy import smollm_sums

FORMS = sum_problems.FORMS
KNOB_NAME = None
compute = smollm_sums.compute  # a cell (module level: the process pool's workers import it)
MIXED_BAND = (0.1, 0.7)


def cell_path(work: str, spec: dict) -> str:
    name = spec["kind"] if spec["kind"] != "arm" else f"{spec['arm']}_lr{spec['learning_rate']:g}"
    return os.path.join(work, spec["split"], f"seed{spec['seed']}", name, "result.jsonl")


def prepare(study, args) -> tuple[dict, None]:
    """``(overrides, None)``: the smoke tests' question count, and ``"precision": "fp32"`` where a smoke run asks
    for it. A study's cells are bf16: on a CPU without native bf16 their matrix products are emulated through fp32
    kernels (``tagrpo.common.bf16``; ``studies/results/bf16_equivalence.md`` measures the two against each other),
    which this says before any cell runs."""
    overrides = {"questions": args.questions} if args.questions else {}
    if args.precision == "fp32":
        overrides["precision"] = "fp32"
    elif not args.render_only and not native_bf16(args.device):
        print(f"{study.name}: this CPU has no native bf16 (avx512_bf16 or amx_bf16 in /proc/cpuinfo): the cells' bf16 "
              "matrix products run emulated through fp32 kernels (tagrpo.common.bf16; each cell records its path)",
              flush=True)
    return overrides, None


def cell(study, args, kind: str, split: str, setting, seed: int, arm: str | None = None, lr: float | None = None,
         forms: bool = False, q0: str | None = None) -> tuple[dict, str]:
    """A cell's spec (everything its result depends on: the setting, and the arm's configuration) and its path."""
    setting_fields = {k: v for k, v in study.task_options["setting"].items() if k != "workers"}
    spec = {"kind": kind, "split": split, "seed": seed, "device": args.device, "study": study.task_options["tag"],
            "setting": setting_fields, **args.overrides}
    if kind != "premise":
        spec.update(q0=q0, samples=args.samples)
    if kind == "arm":
        steps = math.ceil(args.steps * study.arms[arm].get("questions_factor", 1))
        spec.update(arm=arm, arm_config=study.arms[arm], learning_rate=lr, steps=steps)
    return spec, cell_path(args.work_dir, spec)


def premise_cells(study, args) -> list[tuple[dict, str]]:
    return [cell(study, args, "premise", "validation", None, study.sweep.seeds[0])]


def q0_of(study, premises: list[dict], render_only: bool = False) -> tuple[dict, str]:
    """The premise (one cell) and q0's form it chooses."""
    return premises[0], choose_q0(premises[0])


def choose_q0(premise: dict) -> str:
    """The hardest form whose base accuracy lies in ``MIXED_BAND`` (the hardest of all if none does)."""
    acc = premise["accuracy"]
    mixed = [f for f in FORMS if MIXED_BAND[0] <= acc[f] <= MIXED_BAND[1]]
    return min(mixed or FORMS, key=lambda f: acc[f])


def arm_columns() -> list[tuple[str, object, str]]:
    """The every-arm table's columns of this task: (header, the cell's number, format)."""
    from tagrpo.demo.metrics import quarter_mean

    key = "tagrpo/original/zero_std"
    return [("q0 uniform %, first quarter", lambda c: 100 * quarter_mean(c["steps"], key, False), "{:.0f}"),
            ("q0 uniform %, last quarter", lambda c: 100 * quarter_mean(c["steps"], key, True), "{:.0f}"),
            ("embedding diversity, correct", lambda c: c.get("diversity_correct"), "{:.3f}")]


def describe(study, args, data: dict) -> str:
    """The task's line under the report's title: the problems, the settings, the length."""
    sizes = "/".join(str(v) for v in sum_problems.PAIR_SPLIT_SIZES.values())
    return (f"Task: sums a+b, operands 0..{sum_problems.SIZE - 1}, split by unordered pair (a sum and its swap in one "
            f"split; pairs train / validation / test {sizes}), the prompts' worked examples "
            f"{list(sum_problems.EXAMPLES)} in no split. Settings: {study.task_options['setting']}; {args.steps} "
            f"generation steps; {args.samples} samples per test question on q0's form, "
            f"{smollm_sums.FORM_SAMPLES} in every other form.")


def premise_section(study, data: dict, bases: dict, versus: dict) -> list[str]:
    from tagrpo.evaluation.tables import markdown_table

    if not data["premise"]:
        return []
    accuracy = data["premise"]["accuracy"]
    return ["## Premise (base model, validation problems)", "",
            markdown_table(["form", "accuracy %"], [[f, f"{100 * v:.1f}"] for f, v in accuracy.items()]), "",
            f"q0's form: **{data['q0']}** (the hardest in {100 * MIXED_BAND[0]:.0f}-{100 * MIXED_BAND[1]:.0f}%).", ""]
