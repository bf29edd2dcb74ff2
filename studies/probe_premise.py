"""``tagrpo probe`` against the committed premise: does its hidden share on the regime world match the hard share
that ``studies/results/toy_premise.md`` measured, at h = 0, 0.6 and 0.9?

    .venv/bin/python studies/probe_premise.py              # about 10 to 30 minutes on 2 cores

For each h, runs the probe (library call, the command's defaults: n = 8, temperature 1) on ``--questions``
questions of ``toy_regime`` with the shipped base, cached per h under ``--work-dir`` (resumable), and compares:

- the probe's hidden share (q0 0 of 8, a rephrasing right), with a normal 95% interval over its questions;
- the premise's hard share (q0 0 of 64, ``toy_premise.json``'s knob rows) with its interval;
- the share the probe's definition should give on the premise's own questions: from each premise question's
  counts of 64 (q0 and the symbolic, narrative and words forms), the chance that 8 of its 64 samples, drawn without
  replacement, leave q0 all wrong and some rephrasing right, averaged as the knob mixes the two populations.
  Its difference from the hard share is how much n = 8 instead of 64 changes the definition.

Writes ``studies/results/probe_premise.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

from tagrpo.data.jsonl import read_jsonl
from tagrpo.evaluation.probe import ProbeConfig, run_probe
from tagrpo.evaluation.tables import markdown_table
from tagrpo.experiments.machine import machine
from tagrpo.toy.plugins import toy_regime_data

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
KNOBS = (0.0, 0.6, 0.9)
REPHRASED = ("symbolic", "narrative", "words")


def zero_of(c: int, total: int, n: int) -> float:
    """Chance that ``n`` of ``total`` samples, ``c`` of them right, drawn without replacement, are all wrong."""
    return math.comb(total - c, n) / math.comb(total, n)


def wilson(p: float, q: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson's 95% interval of a share ``p`` of ``q`` questions (not empty at a share of 0 or 1)."""
    centre = (p + z * z / (2 * q)) / (1 + z * z / q)
    half = z * math.sqrt(p * (1 - p) / q + z * z / (4 * q * q)) / (1 + z * z / q)
    return centre - half, centre + half


def expected_hidden(population: dict, total: int, n: int) -> tuple[float, float]:
    """``(P(q0 0 of n), P(q0 0 of n and a rephrasing right))`` averaged over a premise population's questions."""
    counts = population["counts"]
    q0, hidden = [], []
    for i, c in enumerate(counts["spelled"]):
        none = math.prod(zero_of(counts[f][i], total, n) for f in REPHRASED)
        q0.append(zero_of(c, total, n))
        hidden.append(q0[-1] * (1 - none))
    return sum(q0) / len(q0), sum(hidden) / len(hidden)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--work-dir", default="outputs/probe_premise")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default torch's)")
    args = parser.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    premise = json.load(open(os.path.join(RESULTS, "toy_premise.json"), encoding="utf-8"))
    total = premise["samples"]
    kinds = {k: expected_hidden(premise["populations"][k], total, args.n) for k in ("hard", "easy")}
    base = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tagrpo", "toy",
                        "regime_checkpoint")
    start, rows = time.perf_counter(), []
    for h in KNOBS:
        cfg = ProbeConfig(model=base, data="toy_regime", hard_share=h, n=args.n, questions=args.questions,
                          output_dir=os.path.join(args.work_dir, f"h{h:g}"))
        s = run_probe(cfg)
        knob = next(k for k in premise["knob"] if abs(k["hard_share"] - h) < 1e-9)
        p, q = s["shares"]["hidden"], s["questions"]
        lo, hi = wilson(p, q)
        expected = h * kinds["hard"][1] + (1 - h) * kinds["easy"][1]
        hard = {r["id"]: bool(r["hard"]) for r in toy_regime_data(h)}
        drawn = [hard[r["id"]] for r in read_jsonl(os.path.join(cfg.output_dir, "counts.jsonl"))]
        mix = sum(drawn) / len(drawn)  # the hard share of the questions the seeded draw probed
        expected_mix = mix * kinds["hard"][1] + (1 - mix) * kinds["easy"][1]
        rows.append({"hard_share": h, "questions": q, "n": args.n, "probe_hidden": p,
                     "probe_ci95": [lo, hi],
                     "probe_shares": s["shares"], "premise_hard": knob["zero_of_n_on_q0"], "premise_ci95": knob["ci95"],
                     "premise_samples": total, "expected_hidden_at_n": expected,
                     "definition_shift": expected - knob["zero_of_n_on_q0"],
                     "within_premise_interval": knob["ci95"][0] <= p <= knob["ci95"][1],
                     "premise_in_probe_interval": lo <= knob["zero_of_n_on_q0"] <= hi,
                     "expected_in_probe_interval": lo <= expected <= hi,
                     "probed_hard_share": mix, "expected_hidden_at_probed_mix": expected_mix,
                     "expected_at_probed_mix_in_probe_interval": lo <= expected_mix <= hi})
    command = "python studies/probe_premise.py " + " ".join(sys.argv[1:] if argv is None else argv)
    result = {"command": command, "machine": machine(),
              "premise_source": "studies/results/toy_premise.json", "per_kind_expected_at_n": kinds,
              "rows": rows, "wall_s": round(time.perf_counter() - start, 1)}
    with open(os.path.join(RESULTS, "probe_premise.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)

    def pct(x):
        return f"{100 * x:.1f}"

    table = [[f"{r['hard_share']:g}", r["questions"], f"{pct(r['probe_hidden'])} [{pct(r['probe_ci95'][0])}, "
              f"{pct(r['probe_ci95'][1])}]", f"{pct(r['premise_hard'])} [{pct(r['premise_ci95'][0])}, "
              f"{pct(r['premise_ci95'][1])}]", pct(r["expected_hidden_at_n"]), f"{100 * r['definition_shift']:+.1f}",
              "yes" if r["within_premise_interval"] else "no", "yes" if r["premise_in_probe_interval"] else "no",
              "yes" if r["expected_in_probe_interval"] else "no", pct(r["probed_hard_share"]),
              pct(r["expected_hidden_at_probed_mix"]),
              "yes" if r["expected_at_probed_mix_in_probe_interval"] else "no"] for r in rows]
    md = "\n".join([
        "# The probe against the premise: hidden share on the regime world (issue 34)", "",
        f"`{result['command'].strip()}`; machine {result['machine']}; wall {result['wall_s']:.0f} s.", "",
        f"Probe: `tagrpo probe --model tagrpo/toy/regime_checkpoint --data toy_regime --hard-share H --n {args.n}` "
        f"(temperature 1, as the premise), {args.questions} test questions per H. Premise: "
        f"`studies/results/toy_premise.json` (100 hard + 100 easy test questions x {total} samples, mixed per H).", "",
        markdown_table(["h", "questions", f"probe hidden % (0 of {args.n} on q0, a rephrasing right) [Wilson 95% CI]",
                        f"premise hard % (0 of {total} on q0) [95% CI]",
                        "premise questions under the probe's definition %", "definition shift, pp",
                        "probe inside premise CI", "premise inside probe CI", "definition-adjusted inside probe CI",
                        "hard share of the probed questions %", "expected at that mix %", "inside probe CI"],
                       table), "",
        "The last three columns: the seeded draw of the probe's questions holds its own share of hard questions "
        "(binomial around h); the premise's per-kind rates at the probe's definition, mixed at that share, give "
        "what the probe should measure on exactly these questions.", "",
        f"Definition shift: on the premise's own questions, 'q0 0 of {args.n} and a rephrasing right' minus "
        f"'q0 0 of {total}', from their counts (8 of the 64 samples drawn without replacement). Per kind, "
        f"P(q0 0 of {args.n}) / P(hidden): hard {pct(kinds['hard'][0])}% / {pct(kinds['hard'][1])}%, easy "
        f"{pct(kinds['easy'][0])}% / {pct(kinds['easy'][1])}%.", "",
    ])
    with open(os.path.join(RESULTS, "probe_premise.md"), "w", encoding="utf-8") as f:
        f.write(md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
