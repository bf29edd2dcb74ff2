"""Tables and plots of one or several demo results (one result per seed): report.md, summary.json and PNGs."""

from __future__ import annotations

import json
import os
from statistics import mean, pstdev

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from tagrpo.toy.demo import CURVE_QUESTIONS, CURVE_SAMPLES  # noqa: E402

LABELS = {
    "base": "base model",
    "grpo": "GRPO",
    "ta_grpo": "TA-GRPO",
    "equal_sampling": "equal-sampling GRPO",
    "ta_grpo_control": "TA-GRPO, control rephrasings",
}
COLORS = {
    "base": "gray",
    "grpo": "tab:blue",
    "ta_grpo": "tab:red",
    "equal_sampling": "tab:green",
    "ta_grpo_control": "tab:orange",
}


def _ms(values) -> tuple[float, float]:
    values = [v for v in values if v is not None]
    return (mean(values), pstdev(values)) if values else (float("nan"), float("nan"))


def _second_half(steps, key):
    values = [s[key] for s in steps if s.get(key) is not None]
    half = values[len(values) // 2 :]
    return mean(half) if half else None


def summarize(results: list[dict]) -> dict:
    """Per method, mean and (population) std over seeds of the headline numbers."""
    methods = list(results[0]["runs"])
    out = {}
    for m in methods:
        runs = [r["runs"][m] for r in results]
        ks = sorted(int(k) for k in runs[0]["pass_at_k"])
        row = {f"pass@{k}": _ms([r["pass_at_k"][str(k)] for r in runs]) for k in ks}
        row["diversity"] = _ms([r["diversity"] for r in runs])
        row["rollouts"] = _ms([r["rollouts"] for r in runs])
        if m != "base":
            row["wall_s"] = _ms([r["wall_s"] for r in runs])
            row["uniform_pool_2nd_half"] = _ms([_second_half(r["steps"], "tagrpo/pool/zero_std") for r in runs])
            row["uniform_q0_2nd_half"] = _ms([_second_half(r["steps"], "tagrpo/original/zero_std") for r in runs])
        out[m] = row
    return out


def targets(summary: dict) -> list[str]:
    """The issue's targets for the default preset, each stated as met or missed with its numbers."""
    k = min(8, _max_k(summary))
    key = f"pass@{k}"
    lines = []
    if "grpo" in summary and "ta_grpo" in summary:
        g, t = summary["grpo"]["uniform_pool_2nd_half"][0], summary["ta_grpo"]["uniform_pool_2nd_half"][0]
        ratio = g / t if t else float("inf")
        lines.append(
            f"uniform-reward share, 2nd half: GRPO {g:.3f} vs TA-GRPO pool {t:.3f} = {ratio:.2f}x "
            f"(target >= 2x): {'met' if ratio >= 2 else 'MISSED'}"
        )
        gp, tp = summary["grpo"][key][0], summary["ta_grpo"][key][0]
        lines.append(f"{key}: TA-GRPO {tp:.3f} vs GRPO {gp:.3f} (target: above): {'met' if tp > gp else 'MISSED'}")
    if "equal_sampling" in summary and "ta_grpo" in summary:
        ep, tp = summary["equal_sampling"][key][0], summary["ta_grpo"][key][0]
        lines.append(
            f"{key}: TA-GRPO {tp:.3f} vs equal-sampling {ep:.3f} (target: not below): {'met' if tp >= ep else 'MISSED'}"
        )
    if "ta_grpo_control" in summary and "equal_sampling" in summary:
        cp, ep = summary["ta_grpo_control"][key][0], summary["equal_sampling"][key][0]
        lines.append(
            f"control: TA-GRPO with renaming-only rephrasings {key} {cp:.3f} vs equal-sampling {ep:.3f} "
            f"(expected: little gain), difference {cp - ep:+.3f}"
        )
    return lines


def _band(ax, xs, series, color, label, style="-"):
    m = [mean(v) for v in zip(*series, strict=True)]
    s = [pstdev(v) for v in zip(*series, strict=True)]
    ax.plot(xs, m, style, color=color, label=label)
    if len(series) > 1:
        ax.fill_between(
            xs,
            [a - b for a, b in zip(m, s, strict=True)],
            [a + b for a, b in zip(m, s, strict=True)],
            color=color,
            alpha=0.15,
        )


def _save(fig, ax, path):
    """The legend below the axes (off the curves), then the PNG."""
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _smooth(values, window):
    return [mean(values[max(0, i - window + 1) : i + 1]) for i in range(len(values))]


def plot_uniform_share(results, path):
    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    n_steps = min(len(r["runs"][m]["steps"]) for r in results for m in r["runs"] if m != "base")
    window = max(1, n_steps // 10)
    for m in [m for m in results[0]["runs"] if m != "base"]:
        runs = [r["runs"][m] for r in results]
        steps = [s["step"] for s in runs[0]["steps"]][:n_steps]
        pool = [_smooth([s["tagrpo/pool/zero_std"] for s in r["steps"][:n_steps]], window) for r in runs]
        label = LABELS[m] + (" (pool)" if runs[0]["num_rephrasings"] else "")
        _band(ax, steps, pool, COLORS[m], label)
        if runs[0]["num_rephrasings"]:
            orig = [_smooth([s["tagrpo/original/zero_std"] for s in r["steps"][:n_steps]], window) for r in runs]
            _band(ax, steps, orig, COLORS[m], LABELS[m] + " (q0's G samples only)", "--")
    ax.set(
        xlabel="training step",
        ylabel="share of questions with uniform rewards",
        ylim=(-0.02, 1.02),
        title=f"Uniform-reward share, moving average of {window} steps ({_seeds(results)})",
    )
    _save(fig, ax, path)


def plot_pass_at_k(results, path):
    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    for m in results[0]["runs"]:
        runs = [r["runs"][m] for r in results]
        ks = sorted(int(k) for k in runs[0]["pass_at_k"])
        series = [[r["pass_at_k"][str(k)] for k in ks] for r in runs]
        _band(ax, ks, series, COLORS[m], f"{LABELS[m]} ({runs[0]['rollouts']:,} rollouts)", "o-")
    ax.set_xscale("log", base=2)
    ax.set(xlabel="k", ylabel="pass@k (unbiased)", title=f"Held-out pass@k on q0 ({_seeds(results)})")
    _save(fig, ax, path)


def plot_accuracy_vs_rollouts(results, path):
    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    for m in [m for m in results[0]["runs"] if m != "base"]:
        runs = [r["runs"][m] for r in results]
        n = min(len(r["curve"]) for r in runs)
        xs = [p["rollouts"] for p in runs[0]["curve"][:n]]
        _band(ax, xs, [[p["pass@1"] for p in r["curve"][:n]] for r in runs], COLORS[m], LABELS[m], "o-")
    ax.set(
        xlabel="rollouts spent (completions generated)",
        ylabel=f"held-out pass@1 ({CURVE_QUESTIONS} questions x {CURVE_SAMPLES} samples)",
        title=f"Held-out accuracy against compute ({_seeds(results)})",
    )
    _save(fig, ax, path)


def _seeds(results) -> str:
    return f"{len(results)} seed" + ("s" if len(results) > 1 else "")


def _fmt(pair, seeds: int) -> str:
    m, s = pair
    return f"{m:.3f} ± {s:.3f}" if seeds > 1 else f"{m:.3f}"


def write_report(output_dir: str, results: list[dict], console: Console | None = None) -> dict:
    """Write report.md, summary.json and three PNGs into ``output_dir``; print the table; return the summary."""
    console = console or Console()
    os.makedirs(output_dir, exist_ok=True)
    summary = summarize(results)
    plot_uniform_share(results, os.path.join(output_dir, "uniform_share.png"))
    plot_pass_at_k(results, os.path.join(output_dir, "pass_at_k.png"))
    plot_accuracy_vs_rollouts(results, os.path.join(output_dir, "accuracy_vs_rollouts.png"))
    k_max, seeds = _max_k(summary), len(results)
    ks = sorted({1, min(8, k_max), k_max})
    headers = [
        "method",
        "rollouts",
        *[f"pass@{k}" for k in ks],
        "uniform, pool",
        "uniform, q0 only",
        "diversity",
        "wall s",
    ]
    rows = []
    for m, row in summary.items():
        trained = m != "base"
        rows.append(
            [
                LABELS[m],
                f"{row['rollouts'][0]:,.0f}",
                *[_fmt(row[f"pass@{k}"], seeds) for k in ks],
                _fmt(row["uniform_pool_2nd_half"], seeds) if trained else "-",
                _fmt(row["uniform_q0_2nd_half"], seeds) if trained else "-",
                _fmt(row["diversity"], seeds),
                f"{row['wall_s'][0]:.0f}" if trained else "-",
            ]
        )
    title = f"Embedded world, {_seeds(results)}; uniform = uniform-reward share over the 2nd half of training"
    table = Table(title=title)
    for h in headers:
        table.add_column(h)
    for r in rows:
        table.add_row(*r)
    console.print(table)
    checks = targets(summary)
    for line in checks:
        console.print(line)
    cfg = results[0]["config"]
    md = [
        f"# TA-GRPO on the embedded world ({_seeds(results)})",
        "",
        f"Preset `{cfg['preset']}`, N={cfg['num_rephrasings']}, G={cfg['num_generations']}, "
        f"{cfg['questions_per_step']} questions per step, {cfg['rl_steps']} steps, seeds "
        f"{[r['config']['seed'] for r in results]}, base seed {cfg['base_seed']}. Machine: {results[0]['machine']}.",
        "Held-out: q0 (spelled-out narrative form) of unseen problems, "
        f"{cfg['eval_samples']} samples at temperature 1; pass@k is the unbiased estimator. 'uniform': share of "
        "questions whose rewards are all equal, over the second half of training. Values are mean ± std over "
        "seeds where there are several.",
        "",
        "| " + " | ".join(headers) + " |",
        "|" + "---|" * len(headers),
    ]
    md += ["| " + " | ".join(r) + " |" for r in rows]
    md += ["", "## Targets", ""] + [f"- {line}" for line in checks]
    md += [
        "",
        "![uniform share](uniform_share.png)",
        "![pass@k](pass_at_k.png)",
        "![accuracy vs rollouts](accuracy_vs_rollouts.png)",
        "",
    ]
    with open(os.path.join(output_dir, "report.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md))
    with open(os.path.join(output_dir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump({"summary": summary, "targets": checks}, f, indent=2)
    return summary


def _max_k(summary) -> int:
    return max(int(k.split("@")[1]) for k in next(iter(summary.values())) if k.startswith("pass@"))
