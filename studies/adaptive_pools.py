"""Adaptive TA-GRPO (rephrasings only for questions whose q0 group is uniform) against GRPO, GRPO-long at the same
rollouts and full TA-GRPO, on the embedded world, paired by seed; two designs of the choice side by side.

Command (what produced studies/results/adaptive_pools.*; run after studies/toy_reproduction.py):

    .venv/bin/python studies/adaptive_pools.py --seeds 0 1 2 3 4

GRPO and full TA-GRPO are read from ``toy_reproduction``'s runs of the same seeds (``--reference``, same preset,
learning rate and questions). Per seed and design this script trains the adaptive arm and then GRPO for as many
steps as it takes to spend that run's rollouts: ``ta_grpo_adaptive`` (in-step: this step's q0 group decides, two
generation calls) with ``grpo_matched``, ``ta_grpo_history`` (the question's previous visit decides, one call)
with ``grpo_matched_history``. The goal it tests, per design: at least 80% of full TA-GRPO's gain over GRPO in
pass@1 and in pass@16, for at most 1.5x GRPO's rollouts, and ahead of GRPO-long at equal rollouts; and it
compares the two designs paired by seed. Writes ``adaptive_pools.json``, ``adaptive_pools.md`` and
``adaptive_pools.png`` to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from dataclasses import replace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from rich.console import Console  # noqa: E402

from tagrpo.evaluation.stats import interval, t_test  # noqa: E402
from tagrpo.evaluation.tables import markdown_table  # noqa: E402
from tagrpo.evaluation.verdicts import verdict  # noqa: E402
from tagrpo.experiments.demo import DemoConfig, train_arm
from tagrpo.experiments.machine import machine  # noqa: E402
from tagrpo.experiments.report import STYLE, label, pct  # noqa: E402
from tagrpo.experiments.verdicts import metric  # noqa: E402
from tagrpo.toy.pretrain import resolve_base  # noqa: E402
from tagrpo.toy.world import question_rows  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
DESIGNS = {"ta_grpo_adaptive": "grpo_matched", "ta_grpo_history": "grpo_matched_history"}  # arm -> its GRPO-long
NAMES = {"ta_grpo_adaptive": "in-step", "ta_grpo_history": "history"}
ARMS = ("grpo", "ta_grpo", *(a for pair in DESIGNS.items() for a in pair))
RETAINED, MAX_COST = 0.8, 1.5


def run_seed(reference: dict, work_dir: str, console: Console) -> dict:
    """GRPO and full TA-GRPO from ``reference``; each design and its GRPO-long trained here (cached per design)."""
    runs = {a: reference["runs"][a] for a in ("base", "grpo", "ta_grpo")}
    for arm, matched_name in DESIGNS.items():
        runs.update(_run_design(reference, work_dir, arm, matched_name, console))
    return {"seed": reference["config"]["seed"], "config": reference["config"], "runs": runs}


def _run_design(reference: dict, work_dir: str, arm: str, matched_name: str, console: Console) -> dict:
    path = os.path.join(work_dir, "adaptive.json" if arm == "ta_grpo_adaptive" else f"{arm}.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return {k: v for k, v in json.load(f)["runs"].items() if k in (arm, matched_name)}
    cfg = DemoConfig(**{**reference["config"], "output_dir": work_dir, "arms": arm})
    base = resolve_base(cfg.base_dir, os.path.join(work_dir, "base"), console)
    held_out = question_rows(cfg.eval_questions, seed=2000 + cfg.seed, num_rephrasings=0, split="test")
    start_point = reference["runs"]["grpo"]["curve"][0]
    runs = {arm: train_arm(arm, cfg, base, held_out, console)}
    steps = math.ceil(runs[arm]["rollouts"] / (cfg.questions_per_step * cfg.num_generations))
    folder = "matched" if arm == "ta_grpo_adaptive" else f"matched_{NAMES[arm]}"
    matched = replace(cfg, output_dir=os.path.join(work_dir, folder), rl_steps=steps)
    runs[matched_name] = {**train_arm("grpo", matched, base, held_out, console), "arm": matched_name}
    for name in runs:
        runs[name]["curve"].insert(0, start_point)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"seed": cfg.seed, "config": reference["config"], "runs": runs}, f, indent=1)
    return runs


def analyse(results: list[dict], k_big: int) -> dict:
    return {arm: _analyse_design(results, k_big, arm, matched) for arm, matched in DESIGNS.items()} | {
        "history_vs_in_step": {key: interval([metric(r["runs"]["ta_grpo_history"], key)
                                              - metric(r["runs"]["ta_grpo_adaptive"], key) for r in results])
                               for key in ("pass@1", f"pass@{k_big}")}
    }


def _analyse_design(results: list[dict], k_big: int, arm: str, matched: str) -> dict:
    out = {}
    keys = ("pass@1", f"pass@{k_big}")
    for key in keys:
        gain = {a: [metric(r["runs"][a], key) - metric(r["runs"]["grpo"], key) for r in results]
                for a in ("ta_grpo", arm)}
        full, adaptive = sum(gain["ta_grpo"]) / len(results), sum(gain[arm]) / len(results)
        diffs = [metric(r["runs"][arm], key) - metric(r["runs"][matched], key) for r in results]
        vs_matched = interval(diffs)
        out[key] = {"full_gain": interval(gain["ta_grpo"]), "adaptive_gain": interval(gain[arm]),
                    "retained": adaptive / full if full > 0 else None, "vs_matched": vs_matched,
                    "vs_matched_verdict": verdict(vs_matched["mean"], t_test(diffs), "greater")}
    out["cost"] = interval([r["runs"][arm]["rollouts"] / r["runs"]["grpo"]["rollouts"] for r in results])
    walls = [r["runs"][arm]["wall_s"] / r["runs"][matched]["wall_s"] for r in results]
    out["wall_vs_matched"] = {"median": statistics.median(walls), "min": min(walls), "max": max(walls)}
    expanded = [s.get("tagrpo/expanded") for r in results for s in r["runs"][arm]["steps"]]
    expanded = [e for e in expanded if e is not None]
    out["expanded"] = sum(expanded) / max(1, len(expanded))
    checks = [out["cost"]["mean"] <= MAX_COST]
    checks += [out[k]["retained"] is not None and out[k]["retained"] >= RETAINED for k in keys]
    checks += [out[k]["vs_matched_verdict"] == "reproduced" for k in keys]
    out["goal"] = "met" if all(checks) else "not met"
    return out


DODGE = {"grpo_matched": -0.02, "ta_grpo_adaptive": 0.02, "grpo_matched_history": -0.02, "ta_grpo_history": 0.02}


def plot(results: list[dict], k_big: int, path: str) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    span = max(r["runs"]["ta_grpo"]["rollouts"] for r in results)
    for ax, key in zip(axes, ("pass@1", f"pass@{k_big}"), strict=True):
        for arm in ARMS:
            xs = [r["runs"][arm]["rollouts"] + DODGE.get(arm, 0) * span for r in results]
            ci = interval([metric(r["runs"][arm], key) for r in results])
            colour, marker, _ = STYLE[arm]
            half = 0 if math.isnan(ci["lo"]) else 100 * (ci["hi"] - ci["mean"])
            ax.errorbar(sum(xs) / len(xs), 100 * ci["mean"], yerr=half, fmt=marker, color=colour, ms=9, capsize=4,
                        label=label(arm))
        base = sum(metric(r["runs"]["base"], key) for r in results) / len(results)
        ax.axhline(100 * base, color=STYLE["base"][0], linestyle="--", label="base model")
        ax.set(xlabel="rollouts spent (mean over seeds; each design and its GRPO-long drawn apart)",
               ylabel=f"held-out {key}, % (95% CI over seeds)",
               title=f"{key} against compute ({len(results)} seeds)")
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _ratio(ci: dict) -> str:
    bounds = "" if math.isnan(ci["lo"]) else f" [{ci['lo']:.2f}, {ci['hi']:.2f}]"
    return f"{ci['mean']:.2f}x{bounds}"


def write(results: list[dict], analysis: dict, out: str, command: str) -> None:
    k_big = max(int(k) for k in results[0]["runs"]["base"]["pass_at_k"])
    keys = ("pass@1", f"pass@{k_big}")
    rows = []
    for arm in ARMS:
        runs = [r["runs"][arm] for r in results]
        rows.append([label(arm), f"{sum(r['rollouts'] for r in runs) / len(runs):,.0f}",
                     f"{sum(r['wall_s'] for r in runs) / len(runs):.0f}",
                     pct(interval([metric(r, "pass@1") for r in runs])),
                     pct(interval([metric(r, f"pass@{k_big}") for r in runs]))])
    goal, summary = [], []
    for arm in DESIGNS:
        d = analysis[arm]
        w = d["wall_vs_matched"]
        summary.append([NAMES[arm], f"{100 * d['expanded']:.0f}%", _ratio(d["cost"]),
                        f"{w['median']:.2f}x [{w['min']:.2f}, {w['max']:.2f}]", d["goal"]])
        for key in keys:
            a = d[key]
            retained = "undefined (full TA-GRPO gains nothing)" if a["retained"] is None else f"{a['retained']:.2f}"
            goal.append([NAMES[arm], key, pct(a["full_gain"], sign=True), pct(a["adaptive_gain"], sign=True),
                         retained, pct(a["vs_matched"], sign=True), a["vs_matched_verdict"]])
    versus = analysis["history_vs_in_step"]
    md = [
        f"# Adaptive pools: TA-GRPO at close to GRPO's cost? ({len(results)} seeds, two designs)",
        "",
        f"Command: `{command}`. GRPO and full TA-GRPO from `toy_reproduction` (same seeds and settings). In-step: "
        "this step's G samples of q0 decide (two generation calls per step); history: the question's q0 group at "
        "its previous visit decides, a question not drawn before is expanded (one call per step).",
        "",
        markdown_table(["design", "questions expanded", "rollouts / GRPO's (95% CI)",
                        "wall time / its GRPO-long's (median [range] over seeds)", "goal"], summary),
        "",
        "Each design's wall time is compared with the GRPO-long run of the same seed and sitting. The in-step runs"
        " and their GRPO-long come from an earlier sitting in which other jobs shared the cores (single runs 3-9x"
        " off): hence the median and the range, not a mean.",
        "",
        markdown_table(["arm", "rollouts", "wall s", "pass@1 %", f"pass@{k_big} %"], rows),
        "",
        f"Rollouts and wall time (training and the curve's evaluations) are means over seeds; machine: {machine()}."
        " Wall times of different runs share a noisy 2-core machine: compare them as ratios.",
        "",
        f"Goal: >= {RETAINED:.0%} of full TA-GRPO's gain over GRPO in pass@1 and pass@{k_big}, for <= {MAX_COST}x "
        "GRPO's rollouts, and ahead of GRPO-long at equal rollouts.",
        "",
        markdown_table(["design", "metric", "full TA-GRPO - GRPO, pp", "adaptive - GRPO, pp", "share retained",
                        "adaptive - its GRPO-long (same rollouts), pp", "verdict"], goal),
        "",
        f"History minus in-step, paired by seed: pass@1 {pct(versus['pass@1'], sign=True)} pp, pass@{k_big} "
        f"{pct(versus[f'pass@{k_big}'], sign=True)} pp.",
        "",
        "![pass@1 and pass@16 against rollouts](adaptive_pools.png)",
        "",
    ]
    with open(os.path.join(out, "adaptive_pools.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--reference", default="outputs/toy_reproduction", help="toy_reproduction's --work-dir")
    parser.add_argument("--work-dir", default="outputs/adaptive_pools")
    parser.add_argument("--out", default=RESULTS)
    args = parser.parse_args()
    console = Console()
    results = []
    for seed in args.seeds:
        with open(os.path.join(args.reference, f"seed{seed}", "metrics.json"), encoding="utf-8") as f:
            reference = json.load(f)
        results.append(run_seed(reference, os.path.join(args.work_dir, f"seed{seed}"), console))
    k_big = max(int(k) for k in results[0]["runs"]["base"]["pass_at_k"])
    analysis = analyse(results, k_big)
    command = "python studies/adaptive_pools.py " + " ".join(sys.argv[1:])
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "adaptive_pools.json"), "w", encoding="utf-8") as f:
        json.dump({"command": command, "analysis": analysis, "runs": results}, f, indent=1)
    plot(results, k_big, os.path.join(args.out, "adaptive_pools.png"))
    write(results, analysis, args.out, command)


if __name__ == "__main__":
    main()
