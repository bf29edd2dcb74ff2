"""SmolLM2-135M-Instruct on the sum problems (``tagrpo.data.sum_problems``): the settings and arms of the real
studies, and one run of them: the premise (the base's accuracy in every form), the base's evaluation, or one arm
trained at one rate and seed and then evaluated (``compute``). The study task ``tagrpo.experiments.tasks.sums`` and
the benchmarks draw on it.

An evaluation draws ``samples`` per question on q0's form (pass@1, pass@n), on test problems also ``FORM_SAMPLES`` in
every other form and the embedding diversity (all-MiniLM-L6-v2) among each question's correct responses; training
logs q0's uniform share and the rescue split per step, rollouts, optimizer updates, completion tokens and wall time.
Precision: bf16 autocast over fp32 master weights, unless the spec asks for fp32 (``"precision": "fp32"``); on a
CPU without native bf16 (``tagrpo.common.machine.native_bf16``) a cell's bf16 matrix products are emulated through
fp32 kernels (``tagrpo.common.bf16``). A benchmark's ``trainer_job`` without ``bf16`` autocasts only where native.
"""

from __future__ import annotations

import os
import time

from tagrpo.common.machine import native_bf16
from tagrpo.data import sum_problems

FORMS = sum_problems.FORMS
FIRST = {"template": "oneshot", "system_prompt": "", "max_completion_length": 12, "questions": 4, "num_iterations": 1,
         "steps_per_generation": 2, "beta": 0.0, "generation_autocast": True, "cpu_completion_scoring": True,
         "workers": 2, "gradient_checkpointing": True, "scheme": "ordered", "share_prompt_cache": False}
# the first real study's (superseded; benchmarks/real_throughput.py times it against V2): TRL's default gradient
# checkpointing, splits by ordered pair, no shared prompt cache
V2 = {**FIRST, "gradient_checkpointing": False, "scheme": "pairs", "share_prompt_cache": True,
      "share_prompt_prefix": True}
# the third study's reasoning regime (its second design): a two-step problem, one worked two-step example, room
# for a short chain
TWO_STEP = {**V2, "template": "twostep", "max_completion_length": 48}
# its third design (a + b + c): the same with the threesum template's worked example
THREE_SUM = {**TWO_STEP, "template": "threesum"}
# by name: what the benchmarks and studies use
SETTINGS = {"study": FIRST, "v2": V2, "two_step": TWO_STEP, "three_sum": THREE_SUM}
_TA = {"num_rephrasings": 3, "num_generations": 2}
ARMS = {  # TAGRPOConfig fields, plus the task's plan (main or control) and questions_factor
    "ta_grpo": _TA,
    "equal_sampling": {"num_rephrasings": 0, "num_generations": 8, "reference_group_size": 2},
    "ta_grpo_control": {**_TA, "plan": "control"},
    "pooled_no_anchor": {**_TA, "anchor": "none"},
    "grpo": {"num_rephrasings": 0, "num_generations": 2},
    "grpo_more_data": {"num_rephrasings": 0, "num_generations": 2, "questions_factor": 2.5},
    "ta_grpo_gated": {**_TA, "pool_gate": "q0_all_wrong"},
    "ta_grpo_w25": {**_TA, "rephrased_weight": 0.25},
    "ta_grpo_w50": {**_TA, "rephrased_weight": 0.5},
    "ta_grpo_kl": {**_TA, "beta": 0.001},
    "ta_grpo_adaptive": {**_TA, "pool_mode": "adaptive"},
}
EVAL_SAMPLES = 8
FORM_SAMPLES = 2
PREMISE_SAMPLES = 4
TRAIN_TEMPERATURE = 0.7  # a 135M model at 1.0 writes mostly noise
EVAL_SAMPLING = {"temperature": 0.6, "top_p": 0.95}  # the paper's evaluation
STUDY = FIRST  # the settings' defaults below (a benchmark passes its own)


def _render(rows: list[dict], form: str) -> list[str]:
    return [sum_problems.render(r["a"], r["b"], form, r["name"], r["item"]) for r in rows]


def held_out(split: str, count: int | None, setting: dict = STUDY) -> list[dict]:
    """The split's problems with a fixed name and item each: the same questions for every arm and seed."""
    return sum_problems.questions(split, "symbolic", "main", seed=0, count=count, scheme=setting["scheme"])


def sample(model, tokenizer, texts: list[str], n: int, seed: int, max_new_tokens: int,
           setting: dict = STUDY) -> list[list[str]]:
    from tagrpo.data.prompts import render_prompt
    from tagrpo.evaluation.sampling import sample_responses

    prompts = [render_prompt(t, tokenizer, setting["template"], True, setting["system_prompt"]) for t in texts]
    return sample_responses(model, tokenizer, prompts, n, max_new_tokens=max_new_tokens, seed=seed, progress=False,
                            share_prompt_cache=setting["share_prompt_cache"], **EVAL_SAMPLING)


def correct(responses: list[list[str]], rows: list[dict]) -> list[list[bool]]:
    from tagrpo.rewards.math import boxed_or_last_number_correct

    return [[boxed_or_last_number_correct(r, row["answer"]) for r in rs] for rs, row in zip(responses, rows,
                                                                                             strict=True)]


def evaluate(model, tokenizer, spec: dict, q0: str, embedder, setting: dict = STUDY, rows: list[dict] | None = None,
             render=_render) -> dict:
    """Counts on q0's form (``samples`` each), per-form accuracy (test only), diversity of correct responses.
    ``rows``: the held-out questions (default ``held_out``), ``render(rows, form)`` their texts in a form."""
    import numpy as np

    from tagrpo.evaluation.diversity import mean_pairwise_cosine_distance
    from tagrpo.evaluation.sampling import pass_at_k_curve

    rows = held_out(spec["split"], spec.get("questions"), setting) if rows is None else rows
    n, tokens = spec["samples"], setting["max_completion_length"]
    responses = sample(model, tokenizer, render(rows, q0), n, spec["seed"], tokens, setting)
    hits = correct(responses, rows)
    counts = np.array([sum(h) for h in hits])  # (Q,)
    out = {"counts": counts.tolist(), "samples": n, "pass_at_k": pass_at_k_curve(counts, n, (1, n)),
           "example": responses[0][0]}
    if spec["split"] == "test":
        forms = {q0: float(counts.sum() / (n * len(rows)))}  # q0's form from its own n samples
        for form in (f for f in FORMS if f != q0):
            got = sample(model, tokenizer, render(rows, form), FORM_SAMPLES, spec["seed"] + 1, tokens, setting)
            forms[form] = float(np.mean([x for h in correct(got, rows) for x in h]))
        out["forms"] = forms
        distances = [mean_pairwise_cosine_distance(embedder([r for r, ok in zip(rs, h, strict=True) if ok]))
                     for rs, h in zip(responses, hits, strict=True) if sum(h) > 1]
        out["diversity_correct"] = float(np.mean(distances)) if distances else None
        out["diversity_questions"] = len(distances)
    return out


def premise_accuracy(model, tokenizer, spec: dict, setting: dict = STUDY, rows: list[dict] | None = None,
                     render=_render) -> dict[str, float]:
    """The base model's accuracy in every form on validation problems (``rows``, default ``held_out``),
    ``PREMISE_SAMPLES`` samples each."""
    rows = held_out("validation", spec.get("questions"), setting) if rows is None else rows
    accuracy = {}
    for form in FORMS:
        got = sample(model, tokenizer, render(rows, form), PREMISE_SAMPLES, spec["seed"],
                     setting["max_completion_length"], setting)
        accuracy[form] = sum(x for h in correct(got, rows) for x in h) / (PREMISE_SAMPLES * len(rows))
    return accuracy


def trainer_job(setting: dict, arm: str, q0: str, model_dir: str, out: str, steps: int, learning_rate: float,
                seed: int, device: str, shuffle: bool = False, arms: dict = ARMS, bf16: bool | None = None,
                rows: list[dict] | None = None):
    """The ``TrainJob`` and ``TAGRPOConfig`` of ``arm`` (a key of ``arms``, whose ``beta`` overrides the setting's)
    under ``setting`` (one of ``SETTINGS``): ``steps`` generation steps of ``setting["questions"]`` training
    questions in the seed's order (or ``rows``, the task's own), written to ``out/train.jsonl``; the run goes to
    ``out/run``. ``bf16``: autocast (default: where native, ``native_bf16``)."""
    from tagrpo.data.jsonl import write_jsonl
    from tagrpo.trainer.config import TAGRPOConfig
    from tagrpo.trainer.run import TrainJob

    shape = {k: v for k, v in arms[arm].items() if k not in ("plan", "questions_factor")}
    beta = shape.pop("beta", setting["beta"])
    n, g, q = shape["num_rephrasings"], shape["num_generations"], setting["questions"]
    if rows is None:
        rows = sum_problems.questions("train", q0, arms[arm].get("plan", "main"), seed=seed, count=q * steps,
                                   scheme=setting["scheme"])
    data = write_jsonl(os.path.join(out, "train.jsonl"), rows)
    iters, split = setting["num_iterations"], setting["steps_per_generation"]
    config = TAGRPOConfig(
        output_dir=os.path.join(out, "run"), per_device_train_batch_size=q * (n + 1) * g // split,
        steps_per_generation=split, max_completion_length=setting["max_completion_length"],
        max_steps=steps * iters * split, num_iterations=iters, generation_autocast=setting["generation_autocast"],
        cpu_completion_scoring=setting["cpu_completion_scoring"], learning_rate=learning_rate,
        share_prompt_prefix=setting.get("share_prompt_prefix", False),
        lr_scheduler_type="constant", logging_steps=1, console_every=0, report_to=[], save_strategy="no", seed=seed,
        temperature=TRAIN_TEMPERATURE, beta=beta, use_cpu=device == "cpu",
        bf16=native_bf16(device) if bf16 is None else bf16,
        gradient_checkpointing=setting["gradient_checkpointing"], disable_tqdm=True, shuffle_dataset=shuffle,
        model_init_kwargs={"dtype": "float32"}, **shape,
    )
    job = TrainJob(model=model_dir, data=data, template=setting["template"], chat_template=True,
                   system_prompt=setting["system_prompt"], reward="boxed_or_last_number")
    return job, config


def train(spec: dict, out: str, model_dir: str, setting: dict, rows: list[dict] | None = None):
    """Train the cell's arm (on ``rows``, default ``trainer_job``'s); returns the model (bf16), its tokenizer and
    what training cost and logged."""
    import json

    import torch

    from tagrpo.trainer.run import run_train

    arms = {spec["arm"]: spec["arm_config"]}
    n, g = spec["arm_config"]["num_rephrasings"], spec["arm_config"]["num_generations"]
    job, config = trainer_job(setting, spec["arm"], spec["q0"], model_dir, out, spec["steps"], spec["learning_rate"],
                              spec["seed"], spec["device"], arms=arms, bf16=spec.get("precision") != "fp32", rows=rows)
    start = time.perf_counter()
    trainer = run_train(job, config)
    wall = time.perf_counter() - start
    with open(os.path.join(out, "run", "metrics.jsonl"), encoding="utf-8") as f:
        logged = [json.loads(line) for line in f]
    keep = ("tagrpo/original/zero_std", "tagrpo/original/all_zero", "tagrpo/original/all_one", "tagrpo/pool/zero_std",
            "tagrpo/rescued/from_zero", "tagrpo/rescued/from_one", "tagrpo/reference/rescued/from_zero",
            "tagrpo/reference/rescued/from_one", "reward", "completions/mean_length", "kl")
    steps_log = [{k: r[k] for k in keep if k in r} for r in logged if "tagrpo/rollouts" in r]
    rows = setting["questions"] * (n + 1) * g
    trained = {"rollouts": trainer.rollouts, "optimizer_updates": trainer.state.global_step, "wall_s": wall,
               "completion_tokens": round(sum(s["completions/mean_length"] for s in steps_log) * rows),
               "steps": steps_log, "clip_fraction": [r["clip_ratio/region_mean"] for r in logged
                                                      if "clip_ratio/region_mean" in r]}
    return trainer.model.to(torch.bfloat16), trainer.processing_class, trained


def compute(spec: dict, out: str, held: list[dict] | None = None, train_rows: list[dict] | None = None,
            render=_render) -> dict:
    """One cell (a module-level function: the process pool's workers import it): the premise's accuracy, or the
    base's or the trained arm's evaluation; the arm's saved final model is removed (it is evaluated in memory).
    Another task passes its own held-out questions (``held``), training rows and ``render``. A bf16 cell runs its
    matrix products natively or emulated (``tagrpo.common.bf16``) and records which (``"bf16"``)."""
    if spec.get("precision") == "fp32":
        return _compute(spec, out, held, train_rows, render)
    from tagrpo.common.bf16 import bf16_context, bf16_path

    path = bf16_path(spec["device"])
    with bf16_context(spec["device"], path):
        return {**_compute(spec, out, held, train_rows, render), "bf16": path}


def _compute(spec: dict, out: str, held: list[dict] | None, train_rows: list[dict] | None, render) -> dict:
    import logging
    import shutil

    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tagrpo.models import fetch_model

    transformers.utils.logging.disable_progress_bar()
    logging.getLogger("tagrpo.trainer.run").setLevel(logging.WARNING)
    start = time.perf_counter()
    setting = spec["setting"]
    model_dir = fetch_model("smollm2-135m")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if spec["kind"] == "premise":
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16).to(spec["device"])
        return {"spec": spec, "accuracy": premise_accuracy(model, tokenizer, spec, setting, held, render),
                "cell_wall_s": time.perf_counter() - start}
    embedder = None
    if spec["split"] == "test":
        from tagrpo.evaluation.embed import Embedder

        embedder = Embedder("minilm", device=spec["device"])
    if spec["kind"] == "base":
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16).to(spec["device"])
        result = evaluate(model, tokenizer, spec, spec["q0"], embedder, setting, held, render)
    else:
        model, tokenizer, trained = train(spec, out, model_dir, setting, train_rows)
        shutil.rmtree(os.path.join(out, "run", "final"), ignore_errors=True)
        result = {**trained, **evaluate(model, tokenizer, spec, spec["q0"], embedder, setting, held, render)}
    return {"spec": spec, **result, "cell_wall_s": time.perf_counter() - start}
