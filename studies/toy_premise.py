"""The regime world's premise, measured on its base model: how hard q0 is, how easy its rephrasings are, per knob.

    .venv/bin/python studies/toy_premise.py                      # pretrains the base first if needed
    .venv/bin/python studies/toy_premise.py --base DIR --questions 100 --samples 64

Draws ``--questions`` held-out problems of each kind (``--split``: test, or validation for choosing a recipe),
hard (a hidden tens word in q0's numbers) and easy, and samples ``--samples`` responses of the base model
(temperature 1) to q0 (spelled) and to each rephrasing form. From the two populations it reports, for each
setting of the knob ``hard_share`` h (a held-out question is hard with probability h):

- the share of held-out questions with 0 correct of n on q0 (the "hard subset": h * z_hard + (1-h) * z_easy, with
  a 95% interval from the two binomial proportions);
- the base's pass@1 on q0 and on each form, and pass@k on q0 up to k = n;
- on the hard subset, pass@1 of the easiest rephrasing (the form with the highest mean);
- the blind-guess rate (the most frequent answer's share) and, among correct responses, the strategy entropy.

Writes ``studies/results/toy_premise.json`` and ``.md``; sampling is cached per (form, kind) under
``--cache`` so an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
import zlib

import numpy as np

from tagrpo.data.jsonl import read_jsonl, write_jsonl
from tagrpo.evaluation import correct_counts, pass_at_k_curve, sample_responses
from tagrpo.evaluation.tables import markdown_table
from tagrpo.rewards import is_correct
from tagrpo.toy.regime import FORMS, blind_guess_rate, question_rows, strategy_entropy, strategy_of

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
KNOB = (0.0, 0.3, 0.6, 0.9)
REPHRASED = ("symbolic", "narrative", "words")  # the main plan's forms, in its order


def held_out(kind: str, count: int, seed: int, split: str) -> list[dict]:
    """``count`` rows of ``split``, all hard or all easy."""
    return question_rows(count, seed=seed, hard_share=1.0 if kind == "hard" else 0.0, split=split)


def sampled(model, tok, rows, form: str, n: int, cache: str, key: str) -> list[list[str]]:
    path = os.path.join(cache, f"{key}.jsonl")
    if os.path.exists(path):
        return [r["responses"] for r in read_jsonl(path)]
    prompts = [r["prompt"] if form == "spelled" else r["rephrasings"][REPHRASED.index(form)] for r in rows]
    out = sample_responses(model, tok, prompts, n=n, temperature=1.0, max_new_tokens=40, seed=zlib.crc32(key.encode()))
    write_jsonl(path, [{"responses": rs} for rs in out])
    return out


def proportion(k: int, n: int) -> tuple[float, float]:
    """A share and its binomial standard error."""
    p = k / n
    return p, math.sqrt(p * (1 - p) / n)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default=None, help="the base model directory (default: pretrain the default)")
    parser.add_argument("--questions", type=int, default=100, help="held-out questions of each kind")
    parser.add_argument("--samples", type=int, default=64, help="samples per question and form")
    parser.add_argument("--seed", type=int, default=7000)
    parser.add_argument("--split", default="test", choices=("validation", "test"),
                        help="validation to choose a recipe, test to report the chosen one")
    parser.add_argument("--cache", default="outputs/toy_premise")
    parser.add_argument("--label", default="toy_premise")
    args = parser.parse_args(argv)

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tagrpo.toy.regime_base import RegimePretrainConfig, pretrain_regime_base

    start = time.perf_counter()
    base = args.base or pretrain_regime_base(RegimePretrainConfig())
    torch.set_num_threads(os.cpu_count() or 1)
    tok = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base)
    n, populations = args.samples, {}
    for kind in ("hard", "easy"):
        rows = held_out(kind, args.questions, args.seed + (kind == "easy"), args.split)
        answers = [r["answer"] for r in rows]
        per_form, strategies = {}, []
        for form in ("spelled", *REPHRASED):
            key = f"{os.path.basename(base)}-{args.split}-{kind}-{form}-{n}"
            responses = sampled(model, tok, rows, form, n, args.cache, key)
            counts = correct_counts(responses, answers, is_correct)  # (Q,)
            per_form[form] = counts.tolist()
            pairs = zip(responses, answers, strict=True)
            strategies += [strategy_of(r) for rs, a in pairs for r in rs if is_correct(r, a)]
        populations[kind] = {"counts": per_form, "strategy_entropy_bits": strategy_entropy(strategies)}

    def summary(kind: str) -> dict:
        counts = {f: np.array(c) for f, c in populations[kind]["counts"].items()}  # form -> (Q,)
        zero = counts["spelled"] == 0  # (Q,)
        easiest = max(REPHRASED, key=lambda f: counts[f].mean())
        return {
            "zero_of_n_on_q0": proportion(int(zero.sum()), len(zero)),
            "pass1": {f: float(c.mean() / n) for f, c in counts.items()},
            "pass_at_k_q0": pass_at_k_curve(counts["spelled"], n, [1, 2, 4, 8, 16, 32, 64]),
            "easiest_rephrasing": easiest,
            "easiest_pass1_on_zero_q0": float(counts[easiest][zero].mean() / n) if zero.any() else None,
            "strategy_entropy_bits": populations[kind]["strategy_entropy_bits"],
        }

    kinds = {kind: summary(kind) for kind in ("hard", "easy")}
    knob = []
    for h in KNOB:
        (zh, sh), (ze, se) = kinds["hard"]["zero_of_n_on_q0"], kinds["easy"]["zero_of_n_on_q0"]
        share, se_share = h * zh + (1 - h) * ze, math.hypot(h * sh, (1 - h) * se)
        forms = [f for f in FORMS if f != "reordered"]
        pass1 = {f: h * kinds["hard"]["pass1"][f] + (1 - h) * kinds["easy"]["pass1"][f] for f in forms}
        ci = [share - 1.96 * se_share, share + 1.96 * se_share]
        knob.append({"hard_share": h, "zero_of_n_on_q0": share, "ci95": ci, "pass1": pass1})
    result = {
        "command": "python studies/toy_premise.py " + " ".join(argv or []),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "base": base,
        "questions_per_kind": args.questions,
        "split": args.split,
        "samples": n,
        "blind_guess_rate": blind_guess_rate(),
        "kinds": kinds,
        "knob": knob,
        "populations": populations,
        "wall_s": round(time.perf_counter() - start, 1),
    }
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, f"{args.label}.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    rows = [
        [f"{k['hard_share']:.1f}", f"{100 * k['zero_of_n_on_q0']:.1f} [{100 * k['ci95'][0]:.1f}, "
         f"{100 * k['ci95'][1]:.1f}]", *(f"{100 * k['pass1'][f]:.1f}" for f in ("spelled", *REPHRASED))]
        for k in knob
    ]  # fmt: skip
    kind_rows = [
        [kind, f"{100 * s['zero_of_n_on_q0'][0]:.1f}",
         *(f"{100 * s['pass1'][f]:.1f}" for f in ("spelled", *REPHRASED)), s["easiest_rephrasing"],
         "-" if s["easiest_pass1_on_zero_q0"] is None else f"{100 * s['easiest_pass1_on_zero_q0']:.1f}",
         f"{s['strategy_entropy_bits']:.2f}"]
        for kind, s in kinds.items()
    ]  # fmt: skip
    md = [
        "# The regime world's premise on its base model",
        "",
        f"`{result['command'].strip()}`",
        "",
        f"{result['machine']}; base `{base}`; {args.questions} {args.split} questions of each kind x {n} samples per "
        f"form (temperature 1); blind-guess rate {100 * result['blind_guess_rate']:.2f}%; "
        f"wall {result['wall_s']:.0f} s.",
        "",
        "Per kind of held-out question (hard: a hidden tens word in q0's numbers):",
        "",
        markdown_table(["kind", f"0/{n} on q0 (%)", "pass@1 q0", "symbolic", "narrative", "words", "easiest",
                        f"easiest pass@1 where q0 0/{n}", "strategy entropy (bits)"], kind_rows),  # fmt: skip
        "",
        "Per knob setting (share of hard questions h; mixtures of the two populations above; the interval is the "
        "normal approximation of the two binomial shares, degenerate where a share is 0 or 1):",
        "",
        markdown_table(
            ["h", f"held-out 0/{n} on q0 (%) [95% CI]", "pass@1 q0 (%)", "symbolic", "narrative", "words"], rows
        ),
        "",
    ]
    with open(os.path.join(RESULTS, f"{args.label}.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
