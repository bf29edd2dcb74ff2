"""The real-model study (``studies/real_study.py``): TA-GRPO against equal-sampling GRPO on SmolLM2-135M-Instruct.

The design, declared before the runs:

- Task (``tagrpo/experiments/real_task.py``, scheme ``ordered``): sums ``a + b`` with operands 0..19 in four surface
  forms, train / validation / test problems disjoint as ordered pairs (issue 33 found 67 of the 140 test sums with
  their swap in train, and the prompt's worked example 3+1 among them; ``real_study_v2`` splits by unordered pair
  and is the study to run now). q0's form: the hardest whose base accuracy on validation problems lies in 10-70%
  (``premise`` cell); TA-GRPO's rephrasings are the other three forms; the control's are q0's form renamed.
- Arms (``ARMS``), 8 completions per question per step except plain GRPO: equal-sampling GRPO (G=8 of q0),
  TA-GRPO (N=3, G=2), its renaming-only control, pooling without anchoring (``anchor="none"``), and plain GRPO
  (G=2, a quarter of the rollouts: the low-compute reference).
- Settings (``STUDY``): ``STEPS`` generation steps of ``questions`` training questions, each generation batch split
  into two optimizer steps (``steps_per_generation=2``: the second half is one update off-policy, so the anchored
  ratio and the clip act), bf16 autocast over fp32 master weights (generation included; fp32 on a CPU without native
  bf16, ``native_bf16``), the one-example prompt in the chat template with an empty system message, 12 completion
  tokens, two cells at once, and TRL's default gradient checkpointing (not set then; ``real_study_v2`` turns it
  off). No KL (the paper's code has 0.001): a reference forward per rollout cost about 15% of a step here, and the
  budget is the constraint; a ``beta`` in ``STUDY`` turns it on.
- Learning rates: each arm's best validation pass@1 + pass@8 on q0 over ``SWEEP_LRS`` (seed ``SWEEP_SEEDS``), at
  ``SWEEP_STEPS`` generation steps (half the study's, for the budget; ties to the smaller rate).
- Evaluation (test problems, every arm and the base, paired by seed): ``EVAL_SAMPLES`` samples per question on
  q0's form (pass@1, pass@8), ``FORM_SAMPLES`` per question in every other form; embedding diversity
  (all-MiniLM-L6-v2) among each question's correct responses; from training, q0's uniform share and the rescue
  split.
- Verdicts (``tagrpo.evaluation.verdicts``): primary, Holm-corrected: TA-GRPO against equal-sampling GRPO and
  against the control at pass@1 and pass@8; everything else exploratory.

Every cell (premise, base, or an arm at a rate and seed) is cached under ``--work-dir`` and reused: an interrupted
study resumes. ``studies/real_study.py`` runs it; ``tagrpo/experiments/real_report.py`` writes ``real_study.json`` and
``real_study.md``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from tagrpo.experiments import real_task

STUDY = {"template": "oneshot", "system_prompt": "", "max_completion_length": 12, "questions": 4, "num_iterations": 1,
         "steps_per_generation": 2, "beta": 0.0, "generation_autocast": True, "cpu_completion_scoring": True,
         "workers": 2, "gradient_checkpointing": True, "scheme": "ordered", "share_prompt_cache": False}
# benchmarks/real_throughput.py times these. gradient_checkpointing: TRL's default, which this study ran with (not set
# then); scheme: real_task's split scheme; share_prompt_cache: tagrpo.generation's, for the evaluation's samples
STEPS = 32  # 32 x 4 questions x 8 = 1,024 rollouts per arm and seed
SWEEP_STEPS = 16  # the sweep at half the budget: the study's 3 hours on 2 cores
ARMS = {
    "equal_sampling": {"num_rephrasings": 0, "num_generations": 8, "reference_group_size": 2},
    "ta_grpo": {"num_rephrasings": 3, "num_generations": 2},
    "ta_grpo_control": {"num_rephrasings": 3, "num_generations": 2, "plan": "control"},
    "pooled_no_anchor": {"num_rephrasings": 3, "num_generations": 2, "anchor": "none"},
    "grpo": {"num_rephrasings": 0, "num_generations": 2},
}
PRIMARY_ARMS = ("ta_grpo", "equal_sampling", "ta_grpo_control")
SEEDS = (0, 1, 2)
SWEEP_SEEDS = (100,)
SWEEP_LRS = (1e-5, 3e-5, 1e-4)  # every arm gets the same grid. History, disclosed: the first sweep (session 6) ran
# 3e-6 / 1e-5 / 3e-5 and left the control, pooling without anchoring and plain GRPO at 3e-5, the edge, so 1e-4 was
# added; its cells were lost with that machine, and the rerun drops 3e-6, every arm's worst rate there (validation
# pass@1 15.6-17.9% against 30.6-52.5% at 1e-5 and 3e-5), to fit the study's 3 hours.
EVAL_SAMPLES = 8
FORM_SAMPLES = 2
PREMISE_SAMPLES = 4
TRAIN_TEMPERATURE = 0.7  # a 135M model at 1.0 writes mostly noise
EVAL_SAMPLING = {"temperature": 0.6, "top_p": 0.95}  # the paper's evaluation
MIXED_BAND = (0.1, 0.7)


def cell_path(work: str, spec: dict) -> str:
    name = spec["kind"] if spec["kind"] != "arm" else f"{spec['arm']}_lr{spec['learning_rate']:g}"
    return os.path.join(work, spec["split"], f"seed{spec['seed']}", name, "result.jsonl")


def choose_q0(premise: dict) -> str:
    """The hardest form whose base accuracy lies in ``MIXED_BAND`` (the hardest of all if none does)."""
    acc = premise["accuracy"]
    mixed = [f for f in real_task.FORMS if MIXED_BAND[0] <= acc[f] <= MIXED_BAND[1]]
    return min(mixed or real_task.FORMS, key=lambda f: acc[f])


def _render(rows: list[dict], form: str) -> list[str]:
    return [real_task.render(r["a"], r["b"], form, r["name"], r["item"]) for r in rows]


def held_out(split: str, count: int | None, setting: dict = STUDY) -> list[dict]:
    """The split's problems with a fixed name and item each: the same questions for every arm and seed."""
    return real_task.questions(split, "symbolic", "main", seed=0, count=count, scheme=setting["scheme"])


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


def evaluate(model, tokenizer, spec: dict, q0: str, embedder, setting: dict = STUDY) -> dict:
    """Counts on q0's form (``samples`` each), per-form accuracy (test only), diversity of correct responses."""
    import numpy as np

    from tagrpo.evaluation.diversity import mean_pairwise_cosine_distance
    from tagrpo.evaluation.sampling import pass_at_k_curve

    rows = held_out(spec["split"], spec.get("questions"), setting)
    n, tokens = spec["samples"], setting["max_completion_length"]
    responses = sample(model, tokenizer, _render(rows, q0), n, spec["seed"], tokens, setting)
    hits = correct(responses, rows)
    counts = np.array([sum(h) for h in hits])  # (Q,)
    out = {"counts": counts.tolist(), "samples": n, "pass_at_k": pass_at_k_curve(counts, n, (1, n)),
           "example": responses[0][0]}
    if spec["split"] == "test":
        forms = {q0: float(counts.sum() / (n * len(rows)))}  # q0's form from its own n samples
        for form in (f for f in real_task.FORMS if f != q0):
            got = sample(model, tokenizer, _render(rows, form), FORM_SAMPLES, spec["seed"] + 1, tokens, setting)
            forms[form] = float(np.mean([x for h in correct(got, rows) for x in h]))
        out["forms"] = forms
        distances = [mean_pairwise_cosine_distance(embedder([r for r, ok in zip(rs, h, strict=True) if ok]))
                     for rs, h in zip(responses, hits, strict=True) if sum(h) > 1]
        out["diversity_correct"] = float(np.mean(distances)) if distances else None
        out["diversity_questions"] = len(distances)
    return out


def premise_accuracy(model, tokenizer, spec: dict, setting: dict = STUDY) -> dict[str, float]:
    """The base model's accuracy in every form on validation problems, ``PREMISE_SAMPLES`` samples each."""
    rows = held_out("validation", spec.get("questions"), setting)
    accuracy = {}
    for form in real_task.FORMS:
        got = sample(model, tokenizer, _render(rows, form), PREMISE_SAMPLES, spec["seed"],
                     setting["max_completion_length"], setting)
        accuracy[form] = sum(x for h in correct(got, rows) for x in h) / (PREMISE_SAMPLES * len(rows))
    return accuracy


def native_bf16(device: str) -> bool:
    """Whether bf16 autocast is native here: a GPU, or a CPU with AVX512-BF16 or AMX. On an AVX2-only CPU a bf16
    matmul measured 35x slower than fp32 (AMD EPYC, torch 2.13), so the study trains in fp32 there and its cells
    say so (``"precision": "fp32"`` in their spec, never mixed with bf16 cells)."""
    if device != "cpu":
        return True
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8").split()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def trainer_job(setting: dict, arm: str, q0: str, model_dir: str, out: str, steps: int, learning_rate: float,
                seed: int, device: str, shuffle: bool = False, arms: dict = ARMS):
    """The ``TrainJob`` and ``TAGRPOConfig`` of ``arm`` (a key of ``arms``, whose ``beta`` overrides the setting's)
    under ``setting`` (``STUDY``, or another setting of the same keys: ``real_study_v2.STUDY``, what
    ``benchmarks/real_throughput.py`` times): ``steps`` generation steps of ``setting["questions"]`` training
    questions in the seed's order, written to ``out/train.jsonl``; the run goes to ``out/run``."""
    from tagrpo.data.jsonl import write_jsonl
    from tagrpo.trainer.config import TAGRPOConfig
    from tagrpo.trainer.run import TrainJob

    shape = {k: v for k, v in arms[arm].items() if k not in ("plan", "questions_factor")}
    beta = shape.pop("beta", setting["beta"])
    n, g, q = shape["num_rephrasings"], shape["num_generations"], setting["questions"]
    rows = real_task.questions("train", q0, arms[arm].get("plan", "main"), seed=seed, count=q * steps,
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
        temperature=TRAIN_TEMPERATURE, beta=beta, use_cpu=device == "cpu", bf16=native_bf16(device),
        gradient_checkpointing=setting["gradient_checkpointing"], disable_tqdm=True, shuffle_dataset=shuffle,
        model_init_kwargs={"dtype": "float32"}, **shape,
    )
    job = TrainJob(model=model_dir, data=data, template=setting["template"], chat_template=True,
                   system_prompt=setting["system_prompt"], reward="boxed_or_last_number")
    return job, config


def train(spec: dict, q0: str, out: str, model_dir: str, setting: dict = STUDY, arms: dict = ARMS):
    import json

    import torch

    from tagrpo.trainer.run import run_train

    arm = arms[spec["arm"]]
    n, g, q = arm["num_rephrasings"], arm["num_generations"], setting["questions"]
    job, config = trainer_job(setting, spec["arm"], q0, model_dir, out, spec["steps"], spec["learning_rate"],
                              spec["seed"], spec["device"], arms=arms)
    start = time.perf_counter()
    trainer = run_train(job, config)
    wall = time.perf_counter() - start
    with open(os.path.join(out, "run", "metrics.jsonl"), encoding="utf-8") as f:
        logged = [json.loads(line) for line in f]
    keep = ("tagrpo/original/zero_std", "tagrpo/original/all_zero", "tagrpo/original/all_one", "tagrpo/pool/zero_std",
            "tagrpo/rescued/from_zero", "tagrpo/rescued/from_one", "tagrpo/reference/rescued/from_zero",
            "tagrpo/reference/rescued/from_one", "reward", "completions/mean_length", "kl")
    steps_log = [{k: r[k] for k in keep if k in r} for r in logged if "tagrpo/rollouts" in r]
    trained = {"rollouts": trainer.rollouts, "optimizer_updates": trainer.state.global_step, "wall_s": wall,
               "completion_tokens": round(sum(s["completions/mean_length"] for s in steps_log) * q * (n + 1) * g),
               "steps": steps_log, "clip_fraction": [r["clip_ratio/region_mean"] for r in logged
                                                      if "clip_ratio/region_mean" in r]}
    return trainer.model.to(torch.bfloat16), trainer.processing_class, trained


def compute(spec: dict, out: str) -> dict:
    """One cell of this study (a module-level function: the process pool's workers import it)."""
    return compute_with(spec, out, STUDY, ARMS, keep_model=True)


def compute_with(spec: dict, out: str, setting: dict, arms: dict, keep_model: bool) -> dict:
    """One cell (premise, base, or an arm) under ``setting`` with ``arms``: the base's premise accuracy, or its or
    the trained arm's evaluation; without ``keep_model`` the arm's saved final model is removed after training
    (it is evaluated in memory)."""
    import logging
    import shutil

    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tagrpo.models import fetch_model

    transformers.utils.logging.disable_progress_bar()
    logging.getLogger("tagrpo.trainer.run").setLevel(logging.WARNING)
    start = time.perf_counter()
    model_dir = fetch_model("smollm2-135m")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if spec["kind"] == "premise":
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16).to(spec["device"])
        return {"spec": spec, "accuracy": premise_accuracy(model, tokenizer, spec, setting),
                "cell_wall_s": time.perf_counter() - start}
    embedder = None
    if spec["split"] == "test":
        from tagrpo.evaluation.embed import Embedder

        embedder = Embedder("minilm", device=spec["device"])
    if spec["kind"] == "base":
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16).to(spec["device"])
        result = evaluate(model, tokenizer, spec, spec["q0"], embedder, setting)
    else:
        model, tokenizer, trained = train(spec, spec["q0"], out, model_dir, setting, arms)
        if not keep_model:
            shutil.rmtree(os.path.join(out, "run", "final"), ignore_errors=True)
        result = {**trained, **evaluate(model, tokenizer, spec, spec["q0"], embedder, setting)}
    return {"spec": spec, **result, "cell_wall_s": time.perf_counter() - start}


def specs_for(args, kind: str, split: str, seed: int, arm: str | None = None, lr: float | None = None,
              q0: str | None = None, steps: int | None = None) -> tuple[dict, str]:
    spec = {"kind": kind, "split": split, "seed": seed, "device": args.device, **args.overrides}
    if kind != "premise":
        spec.update(q0=q0, samples=args.samples)
    if kind == "arm":
        spec.update(arm=arm, learning_rate=lr, steps=steps or args.steps)
    return spec, cell_path(args.work_dir, spec)
