"""Tables and plots of embedded-world results (a list of ``run_demo`` outputs, one per seed).

Units: pass@k and shares in percent, as in ``tagrpo eval``. With one result, intervals are 95% over the held-out
questions (normal approximation over per-question pass@k); with several, 95% Student-t intervals over seeds.
Bands in the plots are ±1 standard deviation over seeds.
"""

from __future__ import annotations

import math
import os
from statistics import mean, pstdev

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from tagrpo.core import pass_at_k  # noqa: E402
from tagrpo.demo.arms import ARMS  # noqa: E402
from tagrpo.demo.metrics import hard_mask, metric, zero_advantage_key  # noqa: E402
from tagrpo.evaluation.stats import interval  # noqa: E402

STYLE = {  # arm: (colour, marker, line style)
    "base": ("0.35", "x", "--"),
    "grpo": ("tab:blue", "o", "-"),
    "grpo_long": ("tab:cyan", "v", "-."),
    "equal_sampling": ("tab:green", "s", "-"),
    "grpo_more_data": ("tab:purple", "D", ":"),
    "augmentation": ("tab:olive", "^", "--"),
    "pooled_no_anchor": ("tab:brown", "P", "-."),
    "ta_grpo": ("tab:red", "*", "-"),
    "ta_grpo_control": ("tab:orange", "X", ":"),
    "ta_grpo_behavior": ("darkred", "8", "--"),
    "ta_grpo_adaptive": ("tab:pink", "h", "--"),
    "ta_grpo_history": ("tab:purple", "p", "-."),
    "grpo_matched": ("tab:gray", "d", ":"),
    "grpo_matched_history": ("0.6", "<", ":"),
    "ta_grpo_gated": ("teal", ">", "--"),
    "ta_grpo_w25": ("gold", "H", "-."),
    "ta_grpo_w50": ("black", "*", "--"),
    "ta_grpo_kl": ("darkblue", "1", ":"),
    "ta_grpo_variant": ("darkgreen", "2", "-."),
}


EXTRA_LABELS = {
    "base": "base model",
    "grpo_matched": "GRPO-long at in-step's rollouts",
    "grpo_matched_history": "GRPO-long at history's rollouts",
    "weighted": "TA-GRPO, rephrased weight (chosen per knob)",
    "cost change": "equal-sampling GRPO, on the 4x base minus on the shipped base (Welch)",
}


def label(arm: str) -> str:
    """An arm's name in tables; ``arm@rate`` (one arm's cells at one fixed rate) reads "<its label> at <rate>"."""
    if "@" in arm:
        name, rate = arm.split("@", 1)
        return f"{label(name)} at {rate}"
    return EXTRA_LABELS.get(arm) or ARMS[arm].label


def k_max(results: list[dict]) -> int:
    return max(int(k) for k in results[0]["runs"]["base"]["pass_at_k"])


def question_interval(run: dict, k: int) -> dict:
    """pass@k of one run with a 95% normal interval over its questions, clipped to [0, 1] where it would leave
    the range (a pass@k near 1 over few questions)."""
    counts = np.asarray(run["counts"])  # (Q,)
    per_q = pass_at_k(np.full_like(counts, run["samples"]), counts, k)  # (Q,)
    m = float(per_q.mean())
    half = 1.96 * float(per_q.std(ddof=1)) / math.sqrt(len(per_q)) if len(per_q) > 1 else math.nan
    return {"mean": m, "lo": max(0.0, m - half), "hi": min(1.0, m + half), "n": len(per_q)}


def _hard(result: dict) -> np.ndarray:
    return hard_mask(result["runs"]["base"]["counts"])  # (Q,)


def restrict(run: dict, keep: np.ndarray) -> dict:
    """``run`` with its per-question counts limited to the questions where ``keep`` (Q,) is True."""
    return {**run, "counts": np.asarray(run["counts"])[keep].tolist()}


def subset_rows(results: list[dict]) -> tuple[list[str], list[list[str]]]:
    """pass@1 and pass@k_max per arm on the hard subset (held-out questions with 0 correct of n at base on q0)
    and on the rest; intervals as in the main table (over seeds, or over one seed's questions)."""
    kk = k_max(results)
    hard = [_hard(r) for r in results]  # per seed (Q,)
    headers = ["arm", "hard questions", "pass@1 % hard", f"pass@{kk} % hard", "pass@1 % rest", f"pass@{kk} % rest"]
    rows = []
    for arm in results[0]["runs"]:
        cells = [label(arm), f"{mean(float(h.mean()) for h in hard) * 100:.0f}%"]
        for subset in (True, False):
            for k in (1, kk):
                parts = [restrict(r["runs"][arm], h == subset) for r, h in zip(results, hard, strict=True)]
                if any(not p["counts"] for p in parts):
                    cells.append("-")
                elif len(parts) == 1:
                    cells.append(pct(question_interval(parts[0], k)))
                else:
                    cells.append(pct(interval([question_interval(p, k)["mean"] for p in parts])))
        rows.append(cells)
    return headers, rows


def pct(ci: dict, sign: bool = False) -> str:
    """``12.3 [10.1, 14.5]`` in percent; the mean alone when there is no interval."""
    fmt = "{:+.1f}" if sign else "{:.1f}"
    text = fmt.format(100 * ci["mean"])
    if not math.isnan(ci["lo"]):
        text += f" [{100 * ci['lo']:.1f}, {100 * ci['hi']:.1f}]"
    return text


def _strategy_entropy(runs: list[dict]) -> str:
    if any("strategy_entropy" not in r for r in runs):  # results from before it was measured
        return "-"
    return f"{mean(r['strategy_entropy'] for r in runs):.2f}"


def arm_rows(results: list[dict]) -> tuple[list[str], list[list[str]]]:
    """The main table: per arm the compute spent and the held-out numbers."""
    kk = k_max(results)
    headers = [
        "arm", "rollouts", "optimizer updates", "completion tokens", "wall s", "pass@1 %", f"pass@{kk} %",
        "diversity", "strategy entropy (bits)",
        "q0 all-correct %, first → last quarter", "q0 all-wrong %, first → last quarter",
        "zero-advantage groups %, 2nd half",
    ]
    rows = []
    for arm in results[0]["runs"]:
        runs = [r["runs"][arm] for r in results]
        if len(results) == 1:
            p1, pk = question_interval(runs[0], 1), question_interval(runs[0], kk)
        else:
            p1 = interval([metric(r, "pass@1") for r in runs])
            pk = interval([metric(r, f"pass@{kk}") for r in runs])
        row = [
            label(arm),
            f"{mean(r['rollouts'] for r in runs):,.0f}",
            "-" if arm == "base" else f"{mean(r.get('optimizer_updates', r['max_steps']) for r in runs):,.0f}",
            f"{mean(r['completion_tokens'] for r in runs):,.0f}",
            f"{mean(r['wall_s'] for r in runs):.0f}" if arm != "base" else "-",
            pct(p1),
            pct(pk),
            f"{mean(r['diversity'] for r in runs):.3f}",
            _strategy_entropy(runs),
        ]
        if arm == "base":
            row += ["-", "-", "-"]
        else:
            row += [_first_last(runs, "all_one"), _first_last(runs, "all_zero"), _pool_2nd_half(runs)]
        rows.append(row)
    return headers, rows


def _first_last(runs, key) -> str:
    full = f"tagrpo/original/{key}"
    first = mean(_part(r["steps"], full, False) for r in runs)
    last = mean(_part(r["steps"], full, True) for r in runs)
    return f"{100 * first:.0f} → {100 * last:.0f}"


def _part(steps, key, last):
    values = [s[key] for s in steps if key in s]
    q = max(1, len(values) // 4)
    return mean(values[-q:] if last else values[:q])


def _pool_2nd_half(runs) -> str:
    return f"{100 * mean(metric(r, 'zero_advantage_2nd_half') for r in runs):.0f}"


def premise_rows(results: list[dict]) -> tuple[list[str], list[list[str]]]:
    forms = list(results[0]["premise"])
    names = {"spelled": "spelled (q0)", "renamed": "renamed q0 (control)"}
    row = [pct(interval([r["premise"][f] for r in results])) for f in forms]
    return [names.get(f, f) for f in forms], [row]


def _seeds(results) -> str:
    n = len(results)
    return f"{n} seed{'s' * (n > 1)}"


def _smooth(values, window):
    return [mean(values[max(0, i - window + 1) : i + 1]) for i in range(len(values))]


def _band(ax, xs, series, arm, label_text, markevery=None):
    """Mean over seeds with a ±1 s.d. band; markers of different arms are staggered so that none hides another."""
    colour, marker, style = STYLE[arm]
    if markevery:
        markevery = (list(STYLE).index(arm) % markevery, markevery)
    n = min(len(s) for s in series)
    xs, series = xs[:n], [s[:n] for s in series]
    m = [mean(v) for v in zip(*series, strict=True)]
    ax.plot(xs, m, linestyle=style, marker=marker, color=colour, label=label_text, markevery=markevery, ms=6)
    if len(series) > 1:
        s = [pstdev(v) for v in zip(*series, strict=True)]
        ax.fill_between(xs, [a - b for a, b in zip(m, s, strict=True)], [a + b for a, b in zip(m, s, strict=True)],
                        color=colour, alpha=0.12)


def _legend_below(fig, ax, path, ncol=3):
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.06 + 0.035 * math.ceil(len(labels) / ncol), 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _bands(results) -> str:
    return f"{_seeds(results)}; band ±1 s.d. over seeds" if len(results) > 1 else _seeds(results)


def plot_uniform_share(results, path):
    """Three panels over training: q0 groups all correct, q0 groups all wrong, and the groups each arm normalises
    over (pools, or prompt groups) with all rewards equal, hence zero advantage."""
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.8), sharey=True)
    panels = [(lambda run: "tagrpo/original/all_one", "q0's G samples all correct"),
              (lambda run: "tagrpo/original/all_zero", "q0's G samples all wrong"),
              (zero_advantage_key, "groups normalised over: all rewards equal")]
    for ax, (key_of, title) in zip(axes, panels, strict=True):
        for arm in [a for a in results[0]["runs"] if a != "base"]:
            runs = [r["runs"][arm] for r in results]
            key = key_of(runs[0])
            steps = [s["step"] for s in runs[0]["steps"]]
            window = max(1, len(steps) // 10)
            series = [_smooth([s[key] * 100 for s in r["steps"]], window) for r in runs]
            _band(ax, steps, series, arm, label(arm), markevery=max(1, len(steps) // 8))
        ax.set(title=title, xlabel="training step", ylim=(-2, 102))
    window = max(1, len(steps) // 10)
    axes[0].set_ylabel(f"share of groups, % (moving average of {window} step{'s' * (window > 1)})")
    fig.suptitle(f"Uniform-reward groups during training ({_bands(results)})")
    _legend_below(fig, axes[0], path, ncol=5)


def plot_pass_at_k(results, path):
    fig, ax = plt.subplots(figsize=(7.5, 5.6))
    ks = sorted(int(k) for k in results[0]["runs"]["base"]["pass_at_k"])
    for arm in results[0]["runs"]:
        runs = [r["runs"][arm] for r in results]
        series = [[100 * r["pass_at_k"][str(k)] for k in ks] for r in runs]
        _band(ax, ks, series, arm, f"{label(arm)} ({mean(r['rollouts'] for r in runs):,.0f} rollouts)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks if len(ks) <= 8 else [k for k in ks if k & (k - 1) == 0])
    ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    q = len(results[0]["runs"]["base"]["counts"])
    n = results[0]["runs"]["base"]["samples"]
    ax.set(xlabel="k", ylabel="pass@k, % (unbiased)",
           title=f"Held-out q0: {q} questions x {n} samples ({_bands(results)})")
    ax.grid(alpha=0.3)
    _legend_below(fig, ax, path, ncol=2)


def plot_pass1_vs_rollouts(results, path):
    fig, ax = plt.subplots(figsize=(7.5, 5.6))
    base = mean(r["runs"][a]["curve"][0]["pass@1"] for r in results for a in r["runs"] if a != "base")
    ax.axhline(100 * base, color=STYLE["base"][0], linestyle="--", label="base model")
    for arm in [a for a in results[0]["runs"] if a != "base"]:
        runs = [r["runs"][arm] for r in results]
        xs = [p["rollouts"] for p in runs[0]["curve"]]
        _band(ax, xs, [[100 * p["pass@1"] for p in r["curve"]] for r in runs], arm, label(arm))
    trained = next(r for r in results[0]["runs"].values() if "curve_questions" in r)
    samples = max(int(k[5:]) for k in trained["curve"][-1] if k.startswith("pass@"))  # pass@n with n samples
    ax.set(xlabel="rollouts spent (completions generated)",
           ylabel=f"held-out pass@1, % ({trained['curve_questions']} questions x {samples} samples)",
           title=f"Held-out accuracy against compute ({_bands(results)})")
    ax.grid(alpha=0.3)
    _legend_below(fig, ax, path, ncol=3)


def plot_all(results, output_dir) -> list[str]:
    names = ["uniform_share.png", "pass_at_k.png", "pass1_vs_rollouts.png"]
    for name, fn in zip(names, (plot_uniform_share, plot_pass_at_k, plot_pass1_vs_rollouts), strict=True):
        fn(results, os.path.join(output_dir, name))
    return names


def flags(result: dict) -> list[str]:
    """What in one run contradicts the testbed's expectations, each said plainly."""
    runs, out = result["runs"], []
    base = runs["base"]["pass_at_k"]["1"]
    if "grpo" in runs and runs["grpo"]["pass_at_k"]["1"] <= base:
        out.append(f"GRPO did not raise held-out pass@1 above the base model ({runs['grpo']['pass_at_k']['1']:.3f} "
                   f"vs {base:.3f}): RL did not work in this run.")
    if "ta_grpo_control" in runs and "ta_grpo" in runs:
        control, ta = question_interval(runs["ta_grpo_control"], 1), question_interval(runs["ta_grpo"], 1)
        if control["mean"] >= ta["mean"]:
            out.append(f"CONTRARY TO EXPECTATION: the renaming-only control reached pass@1 {pct(control)} %, not "
                       f"below TA-GRPO's {pct(ta)} %: the gain of this run is not explained by easier rephrasings.")
    hard = _hard(result)  # (Q,)
    if hard.any() and "equal_sampling" in runs and "ta_grpo" in runs:
        kk = k_max([result])
        es, ta = (question_interval(restrict(runs[a], hard), kk) for a in ("equal_sampling", "ta_grpo"))
        if es["mean"] >= ta["mean"]:
            out.append(f"CONTRARY TO EXPECTATION: on the hard subset equal-sampling GRPO reached pass@{kk} "
                       f"{pct(es)} %, not below TA-GRPO's {pct(ta)} %: in this run the rephrasings did not reach "
                       "what q0 hides.")
    for arm, run in runs.items():
        clipped = run.get("clip_fraction")  # per optimizer update; absent in results from before it was recorded
        if arm != "base" and result["config"].get("num_iterations", 1) > 1 and clipped is not None and not any(clipped):
            out.append(f"{label(arm)} took several optimizer steps per generation but its ratio never left the clip "
                       "range (clip fraction 0 at every update): the clip did not act.")
    p = result.get("premise") or {}
    if p and p["symbolic"] - p["spelled"] < 0.3:
        out.append(f"The premise is weak in this base model: symbolic {p['symbolic']:.2f} vs q0's form "
                   f"{p['spelled']:.2f}.")
    return out


VERDICTS = {  # world: where its verdicts over seeds are
    "basic": "`studies/results/toy_reproduction.md` (superseded; its code at commit d16ff59)",
    "regime": "`studies/results/toy_regime_v2.md` (10 seeds per arm and knob setting, learning rates swept)",
}


def _rates(result: dict) -> str:
    rates = {a: r["learning_rate"] for a, r in result["runs"].items() if "learning_rate" in r}
    if len(set(rates.values())) == 1:
        return f"{next(iter(rates.values())):g} (every arm)"
    return ", ".join(f"{label(a)} {v:g}" for a, v in rates.items()) or f"{result['config']['learning_rate']:g}"


def write_report(output_dir: str, results: list[dict], console=None) -> str:
    """report.md and the plots of the demo (one result) in ``output_dir``; prints the table; returns the text."""
    from rich.console import Console

    from tagrpo.evaluation.tables import markdown_table, print_table

    console = console or Console()
    os.makedirs(output_dir, exist_ok=True)
    pngs = plot_all(results, output_dir)
    cfg = results[0]["config"]
    world = cfg.get("world") or "basic"
    headers, rows = arm_rows(results)
    compact = [0, 1, 4, 5, 6]  # arm, rollouts, wall, pass@1, pass@k: what fits a terminal
    print_table(console, [headers[i] for i in compact], [[r[i] for i in compact] for r in rows],
                title=f"Embedded world, {_seeds(results)}, held-out q0 (95% intervals); full table in report.md")
    sub_headers, sub_rows = subset_rows(results)
    shares = [float(_hard(r).mean()) for r in results]
    if min(shares) > 0 and round(100 * mean(shares)) > 0:  # hard questions in every seed, a share the table shows
        print_table(console, sub_headers[:4], [r[:4] for r in sub_rows],
                    title="The hard subset: held-out questions the base never solved on q0")
    notes = [f for r in results for f in flags(r)]
    for line in notes:
        console.print(f"[bold red]{line}")
    held = f"{cfg['eval_questions']} held-out questions x {cfg['eval_samples']} samples"
    lines = [f"# TA-GRPO on the embedded world: `tagrpo demo`, preset `{cfg['preset']}`", ""]
    if cfg["preset"] == "quick":
        lines += ["**Quick preset: a smoke test of the pipeline (a few steps); its numbers mean nothing.**", ""]
    lines += [
        f"**One seed** (seed {cfg['seed']}). Intervals are 95% over the {held}, not over seeds: they do not show "
        "how much another seed would differ. Whether the paper's claims hold is decided over seeds in "
        f"{VERDICTS[world]}; this report decides nothing."
        if len(results) == 1 else f"{_seeds(results)}; intervals are 95% over seeds.",
        "",
        f"N={cfg['num_rephrasings']} rephrasings, G={cfg['num_generations']} samples per prompt, "
        f"{cfg['questions_per_step']} questions per step, {cfg['rl_steps']} steps (GRPO), "
        f"{cfg.get('num_iterations', 1)} optimizer step(s) per generation batch, learning rates "
        f"{_rates(results[0])}, completions up to {cfg['max_completion_length']} tokens, sampling at "
        f"temperature 1. Base model: `{results[0]['base_dir']}`. Machine: {results[0]['machine']}. "
        f"Wall time {results[0]['wall_s']:.0f} s.",
        "",
        "Held-out questions are q0 (the spelled-out narrative) of number triples never seen in pretraining or "
        "training. pass@k is the unbiased estimator; diversity is the share of distinct character bigrams among a "
        "question's responses, averaged over questions. 'all-correct' / 'all-wrong': share of questions whose G "
        "samples of q0 all got reward 1 / 0, over the first and the last quarter of training.",
        "",
        markdown_table(headers, rows),
        "",
        f"The hard subset: held-out questions whose {cfg['eval_samples']} base samples on q0 were all wrong, and "
        "the rest (GRPO has no signal on a question it never solves).",
        "",
        markdown_table(*subset_rows(results)),
        "",
        "Base model on the same held-out problems in each form (pass@1 %, 8 samples): the premise.",
        "",
        markdown_table(*premise_rows(results)),
        "",
    ]
    if notes:
        lines += ["## Flags", "", *[f"- {n}" for n in notes], ""]
    lines += [f"![{p}]({p})" for p in pngs] + [""]
    text = "\n".join(lines)
    with open(os.path.join(output_dir, "report.md"), "w", encoding="utf-8") as f:
        f.write(text)
    return text
