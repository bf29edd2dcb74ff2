"""How long ``tagrpo probe`` takes on SmolLM2-135M-Instruct, and what it says about the real study's sums task.

Command (what produced benchmarks/results/probe_time.*):

    .venv/bin/python benchmarks/probe_time.py          # after make .venv/.installed-real

Writes the real study's test sums (``tagrpo/data/sum_problems.py``: q0 in its spelled form, the other forms
as typed rephrasings) to a data file, then runs the probe from scratch on them (``--overwrite``): ``--questions``
questions x ``--n`` samples of q0 and of each rephrasing, the study's prompt (the one-example template in the chat
template, an empty system message), 12 new tokens, its training temperature and reward, transformers on the CPU.
Records the machine, the load average before and after, and the wall time (the issue's bound: 10 minutes for 100
questions x n = 8 on 2 cores), and sets the probe's shares beside the study's measurements: its base's share of
test questions with q0 0 of 8, and the share of questions per step its TA-GRPO pools rescued from an all-wrong q0
group (the probe prices N=3, G=2, the study's). Writes ``probe_time.json`` and ``probe_time.md`` into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from tagrpo.common.machine import machine
from tagrpo.data import sum_problems
from tagrpo.data.jsonl import write_jsonl
from tagrpo.evaluation.probe import ProbeConfig, run_probe
from tagrpo.evaluation.probe_report import load_map
from tagrpo.evaluation.tables import markdown_table
from tagrpo.toy import smollm_sums

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
LIMIT_S = 600


def sums_rows(seed: int) -> list[dict]:
    """The first study's test problems (its ``ordered`` splits), q0 spelled, rephrased into the other forms (their
    names as types)."""
    q0 = "spelled"
    types = [f for f in sum_problems.FORMS if f != q0]
    return [{**r, "rephrasing_provenance": [{"type": t} for t in types]}
            for r in sum_problems.questions("test", q0, "main", seed, scheme="ordered")]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="default: tagrpo models fetch smollm2-135m")
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--work-dir", default="outputs/probe_time")
    parser.add_argument("--out", default=RESULTS)
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (default torch's; 1 is far faster on a machine shared with other jobs)")
    args = parser.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    from tagrpo.models import fetch_model

    model = args.model or fetch_model("smollm2-135m")
    data = write_jsonl(os.path.join(args.work_dir, "sums.jsonl"), sums_rows(0))
    cfg = ProbeConfig(model=model, data=data, n=args.n, questions=args.questions,
                      output_dir=os.path.join(args.work_dir, "probe"), reward="boxed_or_last_number",
                      num_rephrasings=3, num_generations=2, temperature=smollm_sums.TRAIN_TEMPERATURE,
                      max_new_tokens=smollm_sums.STUDY["max_completion_length"], template=smollm_sums.STUDY["template"],
                      chat_template=True, system_prompt=smollm_sums.STUDY["system_prompt"], engine="transformers",
                      overwrite=True)
    load_before = os.getloadavg()
    start = time.perf_counter()
    summary = run_probe(cfg)
    wall = time.perf_counter() - start
    (real,) = [p for p in load_map()["points"] if p["source"] == "studies/results/real_study_v2.json"]
    result = {
        "command": "python benchmarks/probe_time.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine(), "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "model": model, "questions": summary["questions"], "n": summary["n"], "wall_s": round(wall, 1),
        "limit_s": LIMIT_S, "within_limit": wall <= LIMIT_S, "probe": {k: summary[k] for k in (
            "shares", "per_type", "grpo", "ta_grpo", "q0_pass_rate", "placement")},
        "study": {"q0_zero_share": real["measured"]["q0_all_wrong"], "questions": real["measured"]["questions"],
                  "rescued_from_all_wrong": real["rescued_from_all_wrong"]},
    }
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "probe_time.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    sh, study = summary["shares"], result["study"]

    def ci(v):
        return f"{100 * v['mean']:.1f} [{100 * v['lo']:.1f}, {100 * v['hi']:.1f}]"

    compare = [
        ["q0 all wrong (0 of 8): hidden + unreachable", f"{100 * (sh['hidden'] + sh['unreachable']):.1f}",
         f"base, {study['q0_zero_share']['n']} seeds x {study['questions']} test questions: "
         f"{ci(study['q0_zero_share'])}"],
        ["hidden (q0 0 of 8, a rephrasing right)", f"{100 * sh['hidden']:.1f}", "-"],
        ["rescued from an all-wrong q0 group at N=3, G=2",
         f"{100 * summary['ta_grpo']['rescued_from_all_wrong']:.1f} (expected, base model)",
         f"TA-GRPO, per step during training: {ci(study['rescued_from_all_wrong']['ta_grpo'])}"],
    ]
    md = "\n".join([
        "# `tagrpo probe` on SmolLM2-135M-Instruct: wall time, and the real study's sums (issue 34)", "",
        f"`{result['command'].strip()}`", "",
        f"Machine: {result['machine']}. Load average (1, 5, 15 min) before {tuple(round(x, 2) for x in load_before)}, "
        f"after {tuple(round(x, 2) for x in result['load_average_after'])} (the machine is shared).", "",
        f"**{summary['questions']} questions x n = {summary['n']}** (q0 and 3 rephrasings: "
        f"{summary['questions'] * 4 * summary['n']} responses of at most {cfg.max_new_tokens} tokens), transformers on "
        f"the CPU ({result['machine'].get('torch_threads')} torch threads), from scratch: **{wall:.0f} s** "
        f"(bound {LIMIT_S} s: {'met' if wall <= LIMIT_S else 'NOT met'}).", "",
        "## The probe against the real study (studies/results/real_study_v2.json, via the regime map)",
        "", markdown_table(["quantity", "probe %", "study %"], compare), "",
        "The study's rescue is measured on the model as it trains (the share falls as q0 is learned), the probe's on "
        "the base: the probe predicts the first steps' rescue, not the run's mean.", "",
        "Classes: " + ", ".join(f"{k} {100 * v:.1f}%" for k, v in sh.items()) + ". Per type (shift against q0, pp): "
        + ", ".join(f"{t} {100 * v['shift']:+.1f}" for t, v in summary["per_type"].items()) + ".", "",
    ])
    with open(os.path.join(args.out, "probe_time.md"), "w", encoding="utf-8") as f:
        f.write(md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
