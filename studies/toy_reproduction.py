"""The paper's claims on the embedded world: every arm of ``tagrpo.experiments.arms`` over several seeds, with verdicts.

Command (what produced studies/results/toy_reproduction.*):

    .venv/bin/python studies/toy_reproduction.py --seeds 0 1 2 3 4

1. Sweep: GRPO and TA-GRPO on ``--sweep-seed`` (not a reported seed) at each of ``--sweep-lrs``; the learning rate
   with GRPO's best held-out pass@1 (tuned for the baseline) is then used by every arm of every seed.
2. Each seed is one ``run_demo`` of the default preset with all arms (the code path of ``make demo``), from the
   shipped base model. Seeds finished earlier are reused from ``--work-dir`` (a crash loses at most one seed).
3. ``tagrpo.experiments.verdicts`` judges each claim from the paired per-seed differences (Student-t 95% intervals).

Writes ``toy_reproduction.json`` (every run, the sweep, the verdicts, machine, wall times), ``toy_reproduction.md``
and the plots under ``toy_reproduction/`` into ``--out``. ``--render-only`` redraws them from the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict

from tagrpo.evaluation.tables import markdown_table
from tagrpo.experiments.arms import ARMS, PAPER_ARMS
from tagrpo.experiments.demo import DemoConfig, run_demo
from tagrpo.experiments.report import arm_rows, k_max, label, pct, plot_all, premise_rows
from tagrpo.experiments.verdicts import MARGIN, judge, requirements

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def cached_run(cfg: DemoConfig) -> dict:
    """``run_demo(cfg)``, or its earlier result when ``output_dir/metrics.json`` holds the same configuration."""
    path = os.path.join(cfg.output_dir, "metrics.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            done = json.load(f)
        if done["config"] == asdict(cfg):
            print(f"reusing {path}")
            return done
    return run_demo(cfg)


def sweep(args) -> tuple[float, list[dict]]:
    rows = []
    for lr in args.sweep_lrs:
        cfg = DemoConfig(output_dir=os.path.join(args.work_dir, f"sweep_lr{lr:g}"), seed=args.sweep_seed,
                         arms="grpo,ta_grpo", learning_rate=lr, preset=args.preset)
        result = cached_run(cfg)
        runs = result["runs"]
        rows.append({"learning_rate": lr, "wall_s": result["wall_s"],
                     **{a: runs[a]["pass_at_k"]["1"] for a in ("base", "grpo", "ta_grpo")}})
    best = max(rows, key=lambda r: r["grpo"])["learning_rate"]
    return best, rows


def _slim(result: dict) -> dict:
    """Floats of the per-step logs rounded, to keep the JSON readable."""
    for run in result["runs"].values():
        run["steps"] = [{k: round(v, 4) if isinstance(v, float) else v for k, v in s.items()}
                        for s in run.get("steps", [])]
    return result


def _p(value) -> str:
    return "" if value is None or value != value else f"{value:.3f}"


def verdict_table(verdicts: list[dict]) -> str:
    rows = []
    for v in sorted(verdicts, key=lambda v: v.get("family") != "primary"):
        ref = f" - {label(v['ref'])}" if v["ref"] else ""
        rows.append([v["number"], v.get("family", ""), v["text"], f"{label(v['arm'])}{ref}", pct(v, sign=True),
                     v["n"], _p(v.get("p")), _p(v.get("p_holm")), f"**{v['verdict']}**"])
    return markdown_table(["claim", "family", "statement", "difference", "mean, pp [95% CI]", "seeds", "p",
                           "p (Holm)", "verdict"], rows)


def decomposition(verdicts: list[dict], key: str) -> str:
    """How TA-GRPO's gain over GRPO splits into augmentation, pooling and anchoring (shares of the total)."""
    steps = {(v["arm"], v["ref"]): v for v in verdicts if v["metric"] == key}
    parts = [("augmentation", "grpo"), ("pooled_no_anchor", "augmentation"), ("ta_grpo", "pooled_no_anchor")]
    if not all(p in steps for p in parts) or ("ta_grpo", "grpo") not in steps:
        return ""
    total = steps[("ta_grpo", "grpo")]["mean"]
    names = ("augmentation", "pooling", "anchoring")
    shares = [f"{n} {100 * steps[p]['mean']:+.1f} pp ({100 * steps[p]['mean'] / total:.0f}%)" if total else n
              for n, p in zip(names, parts, strict=True)]
    return f"- {key}: TA-GRPO - GRPO = {100 * total:+.1f} pp = " + " + ".join(shares)


def write(args, saved: dict) -> None:
    results, plots = saved["runs"], os.path.join(args.out, "toy_reproduction")
    os.makedirs(plots, exist_ok=True)
    pngs = plot_all(results, plots)
    kk = k_max(results)
    verdicts, reqs = saved["verdicts"], saved["requirements"]
    cfg = results[0]["config"]
    headers, rows = arm_rows(results)
    sweep_rows = [[f"{r['learning_rate']:g}", f"{100 * r['base']:.1f}", f"{100 * r['grpo']:.1f}",
                   f"{100 * r['ta_grpo']:.1f}"] for r in saved["sweep"]]
    arms_text = [f"`{a}`: {ARMS[a].label}" for a in results[0]["runs"] if a != "base"]
    md = [
        f"# The paper's claims on the embedded world ({len(results)} seeds)",
        "",
        f"Command: `{saved['command']}`. Wall time of every run, sweep included: "
        f"{saved['total_wall_s'] / 60:.1f} min on {results[0]['machine']}.",
        f"Seeds {[r['config']['seed'] for r in results]}; every arm of a seed shares the base model, the "
        f"{cfg['train_questions']} training questions, the {cfg['eval_questions']} held-out questions and the "
        f"sampling seed. N={cfg['num_rephrasings']}, G={cfg['num_generations']}, {cfg['questions_per_step']} "
        f"questions per step, {cfg['rl_steps']} GRPO steps, learning rate {cfg['learning_rate']:g} (from the sweep "
        f"below), completions up to {cfg['max_completion_length']} tokens, temperature 1, no KL.",
        "Arms (`tagrpo/experiments/arms.py`): " + "; ".join(arms_text) + ".",
        "",
        "Verdicts are computed from the paired per-seed differences (arm minus reference, same seed): their "
        "Student-t 95% interval and the two-sided t-test p-value. The primary claims (declared in "
        "`tagrpo/experiments/verdicts.py`: TA-GRPO against equal-sampling GRPO, GRPO-long and the renaming-only "
        "control, "
        "at pass@1 and pass@k_max) are one family, Holm-corrected; every other claim is exploratory, judged on "
        "its own p. Reproduced when p (Holm for the primary family) < 0.05 in the claimed direction, refuted when "
        f"< 0.05 in the other, inconclusive otherwise; 'matches' is non-inferiority within {100 * MARGIN:.0f} pp. "
        "A condition 'by >= x' is met when the interval's lower bound reaches x; 'about 0' is an equivalence test "
        "(TOST). pp = percentage points.",
        "",
        "## Verdicts",
        "",
        *([f"Rejudged from the saved runs with the current verdict code (`{saved['rejudged_with']}`); the primary "
           "family was written into the code after these runs had been seen, so for them it is post hoc.", ""]
          if saved.get("rejudged_with") else []),
        verdict_table(verdicts),
        "",
        *[decomposition(verdicts, k) for k in ("pass@1", f"pass@{kk}")],
        "",
        "## The testbed's conditions",
        "",
        markdown_table(["condition", "mean, pp [95% CI]", "seeds", "status"],
                       [[r["text"], pct(r, sign=True), r["n"], r["status"]] for r in reqs]),
        "",
        "Base model on held-out problems in each form (pass@1 %, mean [95% CI] over seeds):",
        "",
        markdown_table(*premise_rows(results)),
        "",
        "## Every arm (mean [95% CI] over seeds)",
        "",
        markdown_table(headers, rows),
        "",
        f"Learning-rate sweep on seed {saved['sweep_seed']} (held-out pass@1 %; chosen: GRPO's best):",
        "",
        markdown_table(["learning rate", "base", "GRPO", "TA-GRPO"], sweep_rows),
        "",
        *[f"![{p}](toy_reproduction/{p})" for p in pngs],
        "",
    ]
    with open(os.path.join(args.out, "toy_reproduction.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4], help="reported seeds")
    parser.add_argument("--sweep-seed", type=int, default=99, help="seed of the learning-rate sweep (not reported)")
    parser.add_argument("--sweep-lrs", type=float, nargs="+", default=[1e-5, 3e-5, 6e-5])
    parser.add_argument("--arms", default=",".join(PAPER_ARMS), help="comma-separated arms of tagrpo.experiments.arms")
    parser.add_argument("--preset", default="default", help="demo preset (quick: a smoke test of this script)")
    parser.add_argument("--work-dir", default="outputs/toy_reproduction", help="run directories (reused)")
    parser.add_argument("--out", default=RESULTS, help="where the JSON, markdown and plots go")
    parser.add_argument("--render-only", action="store_true", help="redraw from the existing JSON, no training")
    parser.add_argument("--rejudge", action="store_true",
                        help="recompute the verdicts and conditions of the existing JSON's runs with the current "
                        "verdict code, save and redraw (no training)")
    args = parser.parse_args()
    json_path = os.path.join(args.out, "toy_reproduction.json")
    if args.render_only or args.rejudge:
        if not os.path.exists(json_path):
            raise SystemExit(f"no {json_path}: run without --render-only / --rejudge first")
        with open(json_path, encoding="utf-8") as f:
            saved = json.load(f)
        if args.rejudge:
            saved["verdicts"] = judge(saved["runs"], k_max(saved["runs"]))
            saved["requirements"] = requirements(saved["runs"])
            saved["rejudged_with"] = "python studies/toy_reproduction.py --rejudge"
            with open(json_path, "w", encoding="utf-8") as f:
                json.dump(saved, f, indent=1)
        write(args, saved)
        return
    lr, sweep_rows = sweep(args)
    print(f"learning rate from the sweep: {lr:g}")
    results = [
        _slim(cached_run(DemoConfig(output_dir=os.path.join(args.work_dir, f"seed{s}"), seed=s, arms=args.arms,
                                    learning_rate=lr, preset=args.preset)))
        for s in args.seeds
    ]
    saved = {
        "command": "python studies/toy_reproduction.py " + " ".join(sys.argv[1:]),
        "total_wall_s": sum(r["wall_s"] for r in results) + sum(r["wall_s"] for r in sweep_rows),
        "sweep_seed": args.sweep_seed,
        "sweep": sweep_rows,
        "verdicts": judge(results, k_max(results)),
        "requirements": requirements(results),
        "runs": results,
    }
    os.makedirs(args.out, exist_ok=True)
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(saved, f, indent=1)
    write(args, saved)


if __name__ == "__main__":
    main()
