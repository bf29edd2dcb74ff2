"""The regime world's premise, measured on its base model: how hard q0 is, how easy its rephrasings are, per knob.

    .venv/bin/python studies/toy_premise.py                      # pretrains the base first if needed (~25 min)
    .venv/bin/python studies/toy_premise.py --render-only        # the files from the committed JSON's counts

What it measures and how it renders: ``tagrpo.toy.premise``. Writes ``studies/results/<label>.json`` and
``.md``; sampling is cached per (form, kind) under ``--cache`` so an interrupted run resumes.
"""

import argparse
import json
import os
import platform
import sys
import time

from tagrpo.toy import premise

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default=None, help="the base model directory (default: pretrain the default)")
    parser.add_argument("--questions", type=int, default=100, help="held-out questions of each kind")
    parser.add_argument("--samples", type=int, default=64, help="samples per question and form")
    parser.add_argument("--seed", type=int, default=7000)
    parser.add_argument("--split", default="test", choices=("validation", "test"),
                        help="validation to choose a recipe, test to report the chosen one")
    parser.add_argument("--cache", default="outputs/toy_premise")
    parser.add_argument("--label", default="toy_premise")
    parser.add_argument("--render-only", action="store_true", help="no sampling: re-render from <label>.json")
    args = parser.parse_args()
    path = os.path.join(RESULTS, f"{args.label}.json")
    if args.render_only:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    else:
        from tagrpo.toy.regime_base import RegimePretrainConfig, pretrain_regime_base

        start = time.perf_counter()
        base = args.base or pretrain_regime_base(RegimePretrainConfig())
        from tagrpo.toy.regime import blind_guess_rate

        raw = {"command": "python studies/toy_premise.py " + " ".join(sys.argv[1:]),
               "machine": f"{platform.machine()}, {os.cpu_count()} CPUs", "base": base,
               "questions_per_kind": args.questions, "split": args.split, "samples": args.samples,
               "blind_guess_rate": blind_guess_rate(),
               "populations": premise.measure_premise(base, args.questions, args.samples, args.seed, args.split,
                                                      args.cache)}
        raw["wall_s"] = round(time.perf_counter() - start, 1)
    result = premise.premise_result({k: raw[k] for k in premise.PREMISE_RAW})
    with open(path, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(RESULTS, f"{args.label}.md"), "w", encoding="utf-8") as f:
        f.write(premise.premise_markdown(result))
    print(premise.premise_markdown(result))
