"""A real pretrained model end to end: GRPO and TA-GRPO from SmolLM2-135M-Instruct on short arithmetic.

Command (what produced studies/results/real_model.*; the model comes from `tagrpo models fetch smollm2-135m`):

    .venv/bin/python studies/real_model.py

1. Probe: the base model's accuracy on 32 held-out sums ``a + b`` (single digits) in four surface forms, with the
   ``fewshot`` template (two worked examples with a boxed answer) and its chat template, sampled at
   ``--temperature``: under the math reward
   (a boxed answer) and under the named lenient reward ``boxed_or_last_number``. The task of step 2 is the
   form whose accuracy lies in the mixed band, rephrased into the easier forms.
2. Training, same rollouts: TA-GRPO (N=3, G=2: 8 completions per question) and GRPO with G=8, both ``--steps``
   steps of ``--questions`` questions, lr ``--lr``, from the same base; held-out pass@1 and pass@k (k = ``--samples``)
   before and after, the uniform-reward shares of training, wall time. One seed: a smoke-sized real run, not a verdict.

Also times one forward+backward pass in fp32 and in bf16 autocast on this CPU (the choice of the CPU dtype).
Training keeps fp32 master weights (TRL's default load dtype) with ``--bf16`` autocast; generation for the
evaluation runs on a bf16 copy.
Writes ``real_model.json`` and ``real_model.md`` into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time

import torch

from tagrpo.data.jsonl import write_jsonl
from tagrpo.data.prompts import TEMPLATES
from tagrpo.evaluation.sampling import pass_at_k_curve, sample_responses
from tagrpo.evaluation.tables import markdown_table
from tagrpo.models import fetch_model
from tagrpo.rewards import boxed_or_last_number, is_correct
from tagrpo.toy.world import ITEMS, NAMES, WORDS

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
FORMS = {
    "symbolic": lambda a, b, name, item: f"What is {a}+{b}?",
    "words": lambda a, b, name, item: f"What is {WORDS[a]} plus {WORDS[b]}?",
    "narrative": lambda a, b, name, item: f"{name} has {a} {item} and gets {b} more. How many {item} does {name} have?",
    "spelled": lambda a, b, name, item: (
        f"{name} has {WORDS[a]} {item} and gets {WORDS[b]} more. How many {item} does {name} have?"
    ),
}


PILOT = (
    "The first pilot: one seed, held-out sums that overlap the training sums, and an arm named GRPO that is "
    "equal-sampling GRPO. The verdict is `real_study.md` (`studies/real_study.py`: disjoint problems, per-arm "
    "rates from validation, 3 seeds, Holm-corrected)."
)


def problems(count: int, seed: int) -> list[tuple[int, int, str, str]]:
    rng = random.Random(seed)
    return [(rng.randrange(10), rng.randrange(10), rng.choice(NAMES), rng.choice(ITEMS)) for _ in range(count)]


def chat(tokenizer, text: str) -> str:
    message = [{"role": "user", "content": TEMPLATES["fewshot"].replace("{question}", text)}]
    return tokenizer.apply_chat_template(message, tokenize=False, add_generation_prompt=True)


def accuracy(model, tokenizer, rows, form, samples, temperature, max_new_tokens, seed):
    prompts = [chat(tokenizer, FORMS[form](*p)) for p in rows]
    responses = sample_responses(model, tokenizer, prompts, samples, temperature=temperature,
                                 max_new_tokens=max_new_tokens, seed=seed, progress=False)
    golds = [str(a + b) for a, b, _, _ in rows]
    strict = [sum(is_correct(r, g) for r in rs) for rs, g in zip(responses, golds, strict=True)]
    lenient = [sum(boxed_or_last_number([r], [g])[0] for r in rs) for rs, g in zip(responses, golds, strict=True)]
    total = samples * len(rows)
    return {"boxed": sum(strict) / total, "lenient": sum(lenient) / total, "lenient_counts": lenient,
            "example": responses[0][0]}


def time_dtypes(model, tokenizer) -> dict:
    batch = tokenizer([chat(tokenizer, FORMS["spelled"](3, 4, "Tom", "pens"))] * 16, return_tensors="pt")
    out = {}
    for name, ctx in (("fp32", torch.autocast("cpu", enabled=False)), ("bf16", torch.autocast("cpu", torch.bfloat16))):
        times = []
        for _ in range(3):
            start = time.perf_counter()
            with ctx:
                loss = model(**batch, labels=batch["input_ids"]).loss
            loss.backward()
            model.zero_grad(set_to_none=True)
            times.append(time.perf_counter() - start)
        out[name] = min(times)
    out["bf16_speedup"] = out["fp32"] / out["bf16"]
    return out


def evaluate(model, tokenizer, rows, form, args, seed) -> dict:
    got = accuracy(model, tokenizer, rows, form, args.samples, args.temperature, args.max_new_tokens, seed)
    import numpy as np

    counts = np.array(got["lenient_counts"])
    return {"pass_at_k": pass_at_k_curve(counts, args.samples, (1, args.samples)), "boxed": got["boxed"],
            "example": got["example"]}


def train(name: str, model_dir: str, data: str, out: str, args) -> tuple[dict, object]:
    from tagrpo.trainer.config import TAGRPOConfig
    from tagrpo.trainer.run import TrainJob, run_train

    n, g = (3, 2) if name == "ta_grpo" else (0, 8)
    config = TAGRPOConfig(
        output_dir=os.path.join(out, name), num_rephrasings=n, num_generations=g,
        per_device_train_batch_size=args.questions * (n + 1) * g, max_completion_length=args.max_new_tokens,
        max_steps=args.steps, learning_rate=args.lr, lr_scheduler_type="constant", logging_steps=1,
        console_every=0, report_to=[], save_strategy="no", seed=args.seed, temperature=args.temperature, beta=0.0,
        use_cpu=not torch.cuda.is_available(), bf16=args.bf16, disable_tqdm=False,
        model_init_kwargs={"dtype": "float32"},  # fp32 master weights; bf16 only inside autocast
    )
    job = TrainJob(model=model_dir, data=data, template="fewshot", chat_template=True, reward="boxed_or_last_number")
    start = time.perf_counter()
    trainer = run_train(job, config)
    wall = time.perf_counter() - start
    with open(os.path.join(out, name, "metrics.jsonl"), encoding="utf-8") as f:
        steps = [r for r in map(json.loads, f) if "tagrpo/rollouts" in r]
    keys = ("reward", "tagrpo/original/zero_std", "tagrpo/pool/zero_std", "tagrpo/original/all_one")
    return {"rollouts": trainer.rollouts, "wall_s": wall, "N": n, "G": g,
            "steps": [{k: s.get(k) for k in ("step", *keys)} for s in steps]}, trainer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--questions", type=int, default=2, help="questions per step")
    parser.add_argument("--lr", type=float, default=2e-6)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--samples", type=int, default=4, help="evaluation samples per question")
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=True,
                        help="generate and train in bf16 (the fetched checkpoint's dtype; about 2x faster on AMX CPUs)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work-dir", default="outputs/real_model")
    parser.add_argument("--out", default=RESULTS)
    args = parser.parse_args()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    start = time.perf_counter()
    model_dir = fetch_model("smollm2-135m")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    dtypes = time_dtypes(base, tokenizer)
    if args.bf16:
        base = base.to(torch.bfloat16)
    held = problems(32, seed=7)
    probe = {f: accuracy(base, tokenizer, held, f, args.samples, args.temperature, args.max_new_tokens, args.seed)
             for f in FORMS}
    mixed = [f for f in FORMS if 0.1 <= probe[f]["lenient"] <= 0.7]
    q0 = min(mixed or FORMS, key=lambda f: probe[f]["lenient"])  # the hardest form in the mixed band
    others = [f for f in FORMS if f != q0]
    rows = [{"id": f"s{i}", "prompt": FORMS[q0](*p), "answer": str(p[0] + p[1]),
             "rephrasings": [FORMS[o](*p) for o in others]}
            for i, p in enumerate(problems(args.questions * args.steps, seed=1))]
    data = write_jsonl(os.path.join(args.work_dir, "train.jsonl"), rows)
    held_out = problems(24, seed=11)
    runs = {"base": {"rollouts": 0, **evaluate(base, tokenizer, held_out, q0, args, args.seed)}}
    for name in ("grpo", "ta_grpo"):
        result, trainer = train(name, model_dir, data, args.work_dir, args)
        model = trainer.model.to(torch.bfloat16) if args.bf16 else trainer.model
        runs[name] = {**result, **evaluate(model, tokenizer, held_out, q0, args, args.seed)}
    saved = {"command": " ".join(["python studies/real_model.py", *sys.argv[1:]]), "model": "smollm2-135m",
             "args": {**vars(args), "out": os.path.relpath(args.out)},
             "probe": {f: {k: v for k, v in p.items() if k != "lenient_counts"} for f, p in probe.items()},
             "q0_form": q0, "rephrasing_forms": others, "dtype_seconds": dtypes, "runs": runs,
             "wall_s": time.perf_counter() - start, "threads": torch.get_num_threads()}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "real_model.json"), "w", encoding="utf-8") as f:
        json.dump(saved, f, indent=1)
    write(saved, args.out)


def write(saved: dict, out: str) -> None:
    probe_rows = [[f, f"{100 * p['boxed']:.0f}", f"{100 * p['lenient']:.0f}", repr(p["example"][:60])]
                  for f, p in saved["probe"].items()]
    k = saved["args"]["samples"]
    rows = []
    for name, r in saved["runs"].items():
        steps = r.get("steps") or []
        first, last = (steps[0], steps[-1]) if steps else ({}, {})
        rows.append([name, r["rollouts"], f"{100 * r['pass_at_k']['1']:.1f}", f"{100 * r['pass_at_k'][str(k)]:.1f}",
                     f"{100 * r['boxed']:.0f}", f"{r.get('wall_s', 0):.0f}",
                     "-" if not steps else f"{first.get('tagrpo/original/zero_std', 0):.2f} -> "
                     f"{last.get('tagrpo/original/zero_std', 0):.2f}"])
    d = saved["dtype_seconds"]
    md = [
        "# SmolLM2-135M-Instruct: GRPO and TA-GRPO on short arithmetic (one seed)",
        "",
        PILOT,
        "",
        f"Command: `{saved['command']}`. Wall time {saved['wall_s'] / 60:.1f} min, {saved['threads']} threads, CPU.",
        "Few-shot template and chat template; reward `boxed_or_last_number` (a boxed answer, else the last number).",
        "",
        f"Base model, 32 held-out sums x {k} samples per form (accuracy %, boxed = with a box and right):",
        "",
        markdown_table(["form", "boxed", "boxed or last number", "example"], probe_rows),
        "",
        f"q0 form: `{saved['q0_form']}` (the hardest in the 10-70% band); rephrasings: {saved['rephrasing_forms']}.",
        "",
        markdown_table(["run", "rollouts", "pass@1 %", f"pass@{k} %", "boxed %", "wall s",
                        "q0 uniform share, first -> last step"], rows),
        "",
        f"One forward+backward of 16 few-shot prompts: fp32 {d['fp32']:.2f} s, bf16 autocast {d['bf16']:.2f} s "
        f"({d['bf16_speedup']:.2f}x).",
        "",
        f"One seed, 24 held-out questions x {k} samples: differences of several points are noise.",
        "",
    ]
    with open(os.path.join(out, "real_model.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md))


if __name__ == "__main__":
    main()
