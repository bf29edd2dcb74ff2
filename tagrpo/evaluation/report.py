"""Markdown and PNG reports of ``tagrpo eval`` runs, and side-by-side comparisons with per-benchmark deltas."""

from __future__ import annotations

import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from rich.console import Console  # noqa: E402

from tagrpo.evaluation.tables import markdown_table, print_table  # noqa: E402


def _ks(report: dict) -> list[str]:
    return sorted(report["average"]["pass_at_k"], key=int) or sorted(
        next(iter(report["benchmarks"].values()))["pass_at_k"], key=int
    )


def write_eval_report(output_dir: str, report: dict, console: Console | None = None) -> None:
    """report.md (pass@k per benchmark and averaged, diversity) and pass_at_k.png in ``output_dir``."""
    console = console or Console()
    ks = _ks(report)
    cfg = report["config"]
    headers = ["benchmark", "questions", *[f"pass@{k}" for k in ks], "lexical div.", "embedding div."]
    rows = []
    for name, r in [*report["benchmarks"].items(), ("average", {**report["average"], "questions": "-"})]:
        rows.append(
            [
                name,
                str(r["questions"]),
                *[_pct(r["pass_at_k"].get(k)) for k in ks],
                _num(r.get("lexical_diversity")),
                _num(r.get("embed_diversity")),
            ]
        )
    title = f"pass@k (%), {cfg['model']}, n={cfg['n']}, T={cfg['temperature']}, top-p={cfg['top_p']}"
    print_table(console, headers, rows, title=title)
    md = [
        f"# Evaluation of `{cfg['model']}`",
        "",
        f"n = {cfg['n']} samples per question, temperature {cfg['temperature']}, top-p {cfg['top_p']}, up to "
        f"{cfg['max_new_tokens']} new tokens, template `{cfg['template']}`, chat template {cfg['chat_template']}. "
        "pass@k is the unbiased estimator 1 - C(n-c, k)/C(n, k), in percent. Diversity: mean over questions of "
        "distinct word bigrams (lexical) and of the mean pairwise cosine distance of response embeddings.",
        "",
        markdown_table(headers, rows),
        "",
        "![pass@k](pass_at_k.png)",
        "",
    ]
    with open(os.path.join(output_dir, "report.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md))
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for name, r in report["benchmarks"].items():
        ax.plot([int(k) for k in ks], [100 * r["pass_at_k"][k] for k in ks], "o-", label=name, alpha=0.8)
    if report["average"]["pass_at_k"]:
        ax.plot(
            [int(k) for k in ks], [100 * report["average"]["pass_at_k"][k] for k in ks], "k--", lw=2, label="average"
        )
    ax.set_xscale("log", base=2)
    ax.set(xlabel="k", ylabel="pass@k (%)", title=f"pass@k of {os.path.basename(cfg['model'].rstrip('/'))}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(output_dir, "pass_at_k.png"), dpi=120)
    plt.close(fig)


def compare_runs(run_dirs: list[str], output_dir: str | None = None, console: Console | None = None) -> str:
    """Side-by-side pass@k of several eval runs, with each run's delta against the first; returns markdown."""
    console = console or Console()
    reports = []
    for d in run_dirs:
        path = os.path.join(d, "report.json")
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path}: not an eval run (run `tagrpo eval --output-dir {d}` first)")
        with open(path, encoding="utf-8") as f:
            reports.append(json.load(f))
    k = max(set.intersection(*(set(r["average"]["pass_at_k"]) for r in reports)) or {"1"}, key=int)
    names = run_names(run_dirs)
    benchmarks = [b for b in reports[0]["benchmarks"] if all(b in r["benchmarks"] for r in reports)]
    warnings = comparability(reports, names, benchmarks)
    for line in warnings:
        console.print(f"[bold yellow]warning: {line}")
    headers = ["benchmark", *[f"{n} pass@{k}" for n in names], *[f"Δ {n}" for n in names[1:]]]
    lines = [
        f"# pass@{k} (%) side by side; Δ against {names[0]}",
        "",
        f"k = {k}: the largest k that every run evaluated. Runs: "
        + ", ".join(f"{n} = `{d}`" for n, d in zip(names, run_dirs, strict=True)) + ".",
        "",
        *[f"- **warning**: {w}" for w in warnings],
        *([""] if warnings else []),
    ]
    rows = []
    for b in [*benchmarks, "average"]:
        values = [(r["average"] if b == "average" else r["benchmarks"][b])["pass_at_k"].get(k) for r in reports]
        deltas = [None if v is None or values[0] is None else v - values[0] for v in values[1:]]
        rows.append([b, *[_pct(v) for v in values], *[_pct(d, sign=True) for d in deltas]])
    text = "\n".join([*lines, markdown_table(headers, rows)]) + "\n"
    console.print(text)
    if output_dir:
        os.makedirs(output_dir, exist_ok=True)
        with open(os.path.join(output_dir, "compare.md"), "w", encoding="utf-8") as f:
            f.write(text)
        _compare_plot(reports, names, benchmarks, k, os.path.join(output_dir, "compare.png"))
    return text


SAMPLING = ("n", "temperature", "top_p", "max_new_tokens", "template", "chat_template", "seed")


def run_names(run_dirs: list[str]) -> list[str]:
    """Short unique labels: the directory names, with as many parent directories as it takes to tell them apart."""
    parts = [os.path.normpath(d).split(os.sep) for d in run_dirs]
    for depth in range(1, max(map(len, parts)) + 1):
        names = ["/".join(p[-depth:]) for p in parts]
        if len(set(names)) == len(names):
            return names
    return [f"{n} #{i + 1}" for i, n in enumerate(names)]


def comparability(reports: list[dict], names: list[str], benchmarks: list[str]) -> list[str]:
    """What makes the runs not comparable, each with the numbers: other sampling settings, other questions."""
    out = []
    for key in SAMPLING:
        values = [r.get("config", {}).get(key) for r in reports]
        if len(set(map(repr, values))) > 1:
            out.append(f"{key} differs: " + ", ".join(f"{n} {v!r}" for n, v in zip(names, values, strict=True)))
    for b in benchmarks:
        counts = [r["benchmarks"][b].get("questions") for r in reports]
        if len(set(counts)) > 1:
            out.append(f"{b}: other questions: " + ", ".join(f"{n} {c}" for n, c in zip(names, counts, strict=True)))
    missing = sorted({b for r in reports for b in r["benchmarks"]} - set(benchmarks))
    if missing:
        out.append(f"benchmarks not in every run, left out: {', '.join(missing)}")
    return out


def _compare_plot(reports, names, benchmarks, k, path):
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(benchmarks) + 2), 4.2))
    width = 0.8 / len(reports)
    groups = [*benchmarks, "average"]
    for i, (r, name) in enumerate(zip(reports, names, strict=True)):
        values = [
            100 * ((r["average"] if b == "average" else r["benchmarks"][b])["pass_at_k"].get(k) or 0) for b in groups
        ]
        ax.bar([j + i * width for j in range(len(groups))], values, width, label=name)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(groups))], groups, rotation=20)
    ax.set(ylabel=f"pass@{k} (%)", title=f"pass@{k} by benchmark")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _pct(value, sign: bool = False) -> str:
    if value is None:
        return "-"
    return f"{100 * value:+.2f}" if sign else f"{100 * value:.2f}"


def _num(value) -> str:
    return "-" if value is None else f"{value:.3f}"
