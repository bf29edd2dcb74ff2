"""Pilots for the third real study's reasoning regime: SmolLM2-135M-Instruct's accuracy on a two-step design, on
fresh problems drawn at random (not the study's splits), before a design is declared; or, from the fourth design on
(``minus_le10_train``), on the design's own training problems only, so that no validation or test problem is seen
before the design is declared.

    .venv/bin/python studies/real_study_v3_pilot.py sum3_le15 sum3_1to9      # about 1.5 min per 100 problems

Each design draws ``--problems`` problems (seed 12345; a name ending in ``_b``: seed 999), renders them in one form
with a name and item each, and samples 2 responses per problem as the study's evaluation does (``smollm_sums.sample``:
chat template, temperature 0.6, top-p 0.95, 48 completion tokens, bf16 autocast, one thread), scored by the study's
reward. Prints one line per design; the pilots run so far are in ``studies/results/real_study_v3_reasoning_pilots.md``.
"""

import argparse
import itertools
import random
import time

from tagrpo.data import sum_problems


def story3(a: int, b: int, c: int, name: str, item: str) -> str:
    return sum_problems.render_three(a, b, c, "narrative", name, item)


def capped(r: random.Random, top: int = 9, cap: int = 15) -> tuple[int, int, int]:
    while True:
        t = (r.randint(1, top), r.randint(1, top), r.randint(1, top))
        if sum(t) <= cap:
            return t


def uniform(tops: tuple[int, int, int]):
    return lambda r: tuple(r.randint(1, t) for t in tops)


def training_split(top: int | None = None):
    """The fourth design's training problems (``sum_problems.split_minus`` with a + b at most 10; with ``top``: those
    whose operands are all at most it, the fifth design's), in turn: never a validation or test problem."""
    rows = [t for t in sum_problems.split_minus("train", 9, sum_problems.MINUS_SMALL_CAP,
                                                 sum_problems.MINUS_SMALL_SPLIT_SIZES)
            if top is None or max(t) <= top]
    turn = itertools.cycle(rows)
    return lambda r: next(turn)


def story_minus(a: int, b: int, c: int, name: str, item: str) -> str:
    return sum_problems.render_minus(a, b, c, "narrative", name, item)


DESIGNS = {  # name: (draw, text, answer, template)
    "sum3_1to9": (uniform((9, 9, 9)), story3, sum, "threesum"),
    "sum3_1to9_b": (uniform((9, 9, 9)), story3, sum, "threesum"),
    "sum3_1to9_twostep_template": (uniform((9, 9, 9)), story3, sum, "twostep"),
    "sum3_1to12": (uniform((12, 12, 12)), story3, sum, "threesum"),
    "sum3_1to7": (uniform((7, 7, 7)), story3, sum, "threesum"),
    "sum3_1to7_symbolic": (uniform((7, 7, 7)), lambda a, b, c, n, i: f"What is {a}+{b}+{c}?", sum, "threesum"),
    "sum3_a20_bc5": (uniform((20, 5, 5)), story3, sum, "threesum"),
    "sum3_a12_bc4": (uniform((12, 4, 4)), story3, sum, "threesum"),
    "sum3_le15": (capped, story3, sum, "threesum"),
    "sum3_le15_symbolic": (capped, lambda a, b, c, n, i: f"What is {a}+{b}+{c}?", sum, "threesum"),
    "minus_a20_bc5": (uniform((20, 5, 5)), story_minus, lambda t: t[0] + t[1] - t[2], "twostep"),
    "minus_le10_train": (training_split(), story_minus, lambda t: t[0] + t[1] - t[2], "twostep"),
    "minus_ab5_train": (training_split(5), story_minus, lambda t: t[0] + t[1] - t[2], "twostep"),
}

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("designs", nargs="+", choices=sorted(DESIGNS))
    parser.add_argument("--problems", type=int, default=100)
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tagrpo.models import fetch_model
    from tagrpo.toy import smollm_sums

    torch.set_num_threads(1)
    path = fetch_model("smollm2-135m")
    tokenizer, model = AutoTokenizer.from_pretrained(path), AutoModelForCausalLM.from_pretrained(path).eval()
    for name in args.designs:
        draw, text, answer, template = DESIGNS[name]
        r = random.Random(999 if name.endswith("_b") else 12345)
        rows = []
        for _ in range(args.problems):
            t = draw(r)
            rows.append({"text": text(*t, r.choice(sum_problems.NAMES), r.choice(sum_problems.ITEMS)),
                         "answer": str(answer(t))})
        start = time.time()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            got = smollm_sums.sample(model, tokenizer, [x["text"] for x in rows], 2, 7, 48, {**smollm_sums.TWO_STEP,
                                                                                     "template": template})
        right = sum(map(sum, smollm_sums.correct(got, rows))) / (2 * len(rows))
        print(f"{name}: {100 * right:.1f}% of {2 * len(rows)} ({time.time() - start:.0f} s) e.g. {got[0][0]!r}",
              flush=True)
