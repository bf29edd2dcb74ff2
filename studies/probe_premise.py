"""``tagrpo probe`` against the committed premise: does its hidden share on the regime world match the hard share
that ``studies/results/toy_premise.md`` measured, at h = 0, 0.6 and 0.9?

    .venv/bin/python studies/probe_premise.py --questions 200     # about 3 to 30 minutes on 2 cores
    .venv/bin/python studies/probe_premise.py --render-only       # the files from the committed JSON

For each h, runs the probe (library call, the command's defaults: n = 8, temperature 1) on ``--questions`` questions
of ``toy_regime`` with the shipped base, cached per h under ``--work-dir`` (resumable); what it compares:
``tagrpo.toy.premise``. Writes ``studies/results/probe_premise.json`` and ``.md``.
"""

import argparse
import json
import os
import sys
import time

from tagrpo.common.machine import machine
from tagrpo.models import PACKAGE_ROOT, TOY_MODELS
from tagrpo.toy import premise

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--work-dir", default="outputs/probe_premise")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default torch's)")
    parser.add_argument("--render-only", action="store_true", help="no probing: re-render from probe_premise.json")
    args = parser.parse_args()
    path = os.path.join(RESULTS, "probe_premise.json")
    with open(os.path.join(RESULTS, "toy_premise.json"), encoding="utf-8") as f:
        measured_premise = json.load(f)
    if args.render_only:
        with open(path, encoding="utf-8") as f:
            old = json.load(f)
        command, where, wall = old["command"], old["machine"], old["wall_s"]
        rows = [{k: r[k] for k in premise.PROBE_RAW} for r in old["rows"]]
    else:
        if args.threads:
            import torch

            torch.set_num_threads(args.threads)
        start = time.perf_counter()
        base = str(PACKAGE_ROOT / TOY_MODELS["toy_regime"])
        rows = premise.measure_probe(base, args.questions, args.n, args.work_dir)
        command, where = "python studies/probe_premise.py " + " ".join(sys.argv[1:]), machine()
        wall = round(time.perf_counter() - start, 1)
    result = premise.probe_result(command, where, measured_premise, rows, wall)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(RESULTS, "probe_premise.md"), "w", encoding="utf-8") as f:
        f.write(premise.probe_markdown(result, measured_premise))
    print(premise.probe_markdown(result, measured_premise))
