"""toy_regime.json, toy_regime.md and toy_regime.png from the cells of ``studies/toy_regime.py``."""

from __future__ import annotations

import json
import math
import os
from statistics import mean

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from tagrpo.evaluation.stats import interval, seeds_for_half_width  # noqa: E402
from tagrpo.evaluation.tables import markdown_table  # noqa: E402
from tagrpo.experiments import study  # noqa: E402
from tagrpo.experiments.machine import machine  # noqa: E402
from tagrpo.experiments.report import label, pct  # noqa: E402
from tagrpo.toy.regime import blind_guess_rate  # noqa: E402
from tagrpo.toy.regime_base import RegimePretrainConfig  # noqa: E402

HALF_WIDTH_TARGET = 0.04  # the bound on a primary contrast's 95% half-width


def rescue_share(run: dict, which: str) -> float:
    """Mean over generation steps of the share of questions rescued from an all-wrong (zero) or all-right (one)
    q0 group: by the pool, or for equal-sampling GRPO by all its samples against its first G (the reference keys,
    ``TAGRPOConfig.reference_group_size``). Also the real-model study's."""
    key = "tagrpo/reference/rescued/from_" + which
    if not any(key in s for s in run["steps"]):
        key = "tagrpo/rescued/from_" + which
    return mean(s[key] for s in run["steps"])


def _pool_uniform_2nd_half(run: dict) -> float:
    steps = run["steps"][len(run["steps"]) // 2:]
    return mean(s["tagrpo/pool/zero_std"] for s in steps)


def _slim(cell: dict) -> dict:
    """The cell without its held-out curve, the floats of its per-step logs rounded (a readable JSON)."""
    def r4(v):
        return round(v, 4) if isinstance(v, float) else v

    out = {k: v for k, v in cell.items() if k != "curve"}
    out["steps"] = [{k: r4(v) for k, v in step.items()} for step in cell.get("steps", [])]
    out["clip_fraction"] = [r4(v) for v in cell.get("clip_fraction", [])]
    out["pass_at_k"] = {k: r4(v) for k, v in cell["pass_at_k"].items()}
    return out


def index(cells: list[dict]) -> tuple[dict, dict]:
    runs, bases = {}, {}
    for c in cells:
        spec = c["spec"]
        if spec["kind"] == "base":
            bases[(spec["knob"], spec["seed"])] = c
        else:
            runs[(spec["knob"], spec["seed"], spec["arm"])] = c
    return runs, bases


def _ci(values) -> str:
    return pct(interval(list(values))) if values else "-"


def premise_table(bases: dict) -> str:
    rows = []
    for knob in study.KNOBS:
        bs = [b for (h, _), b in sorted(bases.items()) if h == knob]
        if not bs:
            continue
        k = bs[0]["samples"]
        cells = [f"{knob:g}", len(bs), _ci([float(study.hard_mask(b["counts"]).mean()) for b in bs])]
        for subset in ("all", "hard", "rest"):
            for kk in (1, k):
                vals = [study.subset_pass(b["counts"], k, b["counts"], subset, kk) for b in bs]
                cells.append(_ci([v for v in vals if not math.isnan(v)]))
        for form in ("symbolic", "words", "spelled", "renamed"):
            cells.append(_ci([b["forms"][form] for b in bs if b.get("forms")]))
        rows.append(cells)
    return markdown_table(
        ["hard_share", "seeds", "hard questions % (0 of n on q0)", "q0 pass@1 %", "q0 pass@n %", "hard pass@1 %",
         "hard pass@n %", "rest pass@1 %", "rest pass@n %", "symbolic pass@1 %", "words pass@1 %",
         "spelled (q0) pass@1 %", "renamed q0 pass@1 %"], rows)


def verdict_table(rows: list[dict]) -> str:
    out = []
    for r in rows:
        half = (r["hi"] - r["lo"]) / 2 if not math.isnan(r["lo"]) else math.nan
        p_holm = r.get("p_holm")
        out.append([f"{r['knob']:g}", f"{label(r['arm'])} - {label(r['ref'])}", r["subset"], f"pass@{r['k']}",
                    "-" if math.isnan(r["mean"]) else pct(r, sign=True), r["n"],
                    "-" if math.isnan(half) else f"{100 * half:.1f}",
                    f"{r['p']:.2g}" if not math.isnan(r["p"]) else "-",
                    "" if p_holm is None else (f"{p_holm:.2g}" if not math.isnan(p_holm) else "-"),
                    f"**{r['verdict']}**"])
    return markdown_table(["hard_share", "contrast", "questions", "metric", "mean, pp [95% CI]", "seeds",
                           "half-width, pp", "p", "p (Holm)", "verdict"], out)


def arm_table(runs: dict, bases: dict, knob: float, order: tuple[str, ...] | None = None) -> str:
    """Every arm of ``order`` (v1's arms by default) with cells at ``knob``: cost, pass@k overall and per subset
    (mean over the seeds whose base cell exists, with a t interval), clipping, the rescue split, uniform pools."""
    order = order or study.PRIMARY_ARMS + study.EXPLORATORY_ARMS + study.ADAPTIVE_ARMS
    arms = [a for a in order if any(h == knob and x == a for h, _, x in runs)]
    k = next(b["samples"] for (h, _), b in bases.items() if h == knob)
    rows = []
    for arm in arms:
        cs = [(s, c) for (h, s, a), c in sorted(runs.items()) if h == knob and a == arm and (h, s) in bases]

        def sub(subset, kk, cs=cs):
            vals = [study.subset_pass(c["counts"], c["samples"], bases[(knob, s)]["counts"], subset, kk) for s, c in cs]
            return _ci([v for v in vals if not math.isnan(v)])

        c0 = [c for _, c in cs]
        rows.append([
            label(arm), len(cs), f"{c0[0]['learning_rate']:g}", f"{mean(c['rollouts'] for c in c0):,.0f}",
            f"{mean(c['optimizer_updates'] for c in c0):,.0f}", f"{mean(c['completion_tokens'] for c in c0):,.0f}",
            f"{mean(c['wall_s'] for c in c0):.0f}", sub("all", 1), sub("all", k), sub("hard", 1), sub("hard", k),
            sub("rest", 1), f"{100 * mean(max(c['clip_fraction']) for c in c0):.1f}",
            f"{100 * mean(rescue_share(c, 'zero') for c in c0):.1f}",
            f"{100 * mean(rescue_share(c, 'one') for c in c0):.1f}",
            f"{100 * mean(_pool_uniform_2nd_half(c) for c in c0):.0f}",
            f"{mean(c['strategy_entropy'] for c in c0):.2f}",
        ])
    return markdown_table(
        ["arm", "seeds", "learning rate", "rollouts", "optimizer updates", "completion tokens", "wall s (1 thread)",
         "pass@1 %", f"pass@{k} %", "hard pass@1 %", f"hard pass@{k} %", "rest pass@1 %", "clip fraction % (max)",
         "rescued from all-wrong %", "rescued from all-right %", "uniform pools %, 2nd half",
         "strategy entropy (bits)"], rows)


def mechanism_rows(runs: dict) -> list[list]:
    """Paired per-seed differences (exploratory) of the rescue split and of the uniform-pool share."""
    out = []
    for knob in study.KNOBS:
        for ref in ("equal_sampling", "ta_grpo_control"):
            seeds = sorted(s for (h, s, a) in runs if h == knob and a == "ta_grpo" and (knob, s, ref) in runs)
            for name, fn in (("rescued from all-wrong", lambda c: rescue_share(c, "zero")),
                             ("rescued from all-right", lambda c: rescue_share(c, "one")),
                             ("uniform pools, 2nd half", _pool_uniform_2nd_half)):
                d = [fn(runs[(knob, s, "ta_grpo")]) - fn(runs[(knob, s, ref)]) for s in seeds]
                if d:
                    out.append([f"{knob:g}", f"TA-GRPO - {label(ref)}", name, pct(interval(d), sign=True), len(d)])
    return out


def forms_table(runs: dict, bases: dict) -> str:
    rows = []
    forms = ("symbolic", "words", "narrative", "reordered", "spelled", "renamed")
    for knob in study.KNOBS:
        base = [b["forms"] for (h, _), b in sorted(bases.items()) if h == knob and b.get("forms")]
        if base:
            rows.append([f"{knob:g}", "base model", len(base), *[_ci([f[x] for f in base]) for x in forms]])
        for arm in study.PRIMARY_ARMS + study.EXPLORATORY_ARMS:
            fs = [c["forms"] for (h, _, a), c in sorted(runs.items()) if h == knob and a == arm and c.get("forms")]
            if fs:
                rows.append([f"{knob:g}", label(arm), len(fs), *[_ci([f[x] for f in fs]) for x in forms]])
    return markdown_table(["hard_share", "arm", "seeds", *[f"{f} pass@1 %" for f in forms[:4]],
                           "spelled (q0) pass@1 %", "renamed q0 pass@1 %"], rows)


def adaptive_rows(runs: dict, bases: dict) -> list[list]:
    """At the hardest setting: each adaptive arm's gain over GRPO as a share of full TA-GRPO's, and its rollouts
    as a multiple of GRPO's (the goal: >= 80% of the gain at <= 1.5x the rollouts), on seeds where all ran."""
    knob, out = study.HARDEST, []
    for arm in study.ADAPTIVE_ARMS:
        seeds = sorted(s for (h, s, a) in runs if h == knob and a == arm
                       and all((knob, s, x) in runs for x in ("grpo", "ta_grpo", "grpo_long")))
        if not seeds:
            continue
        k = runs[(knob, seeds[0], arm)]["samples"]
        for subset, kk in (("hard", k), ("all", 1)):
            def v(x, s, subset=subset, kk=kk):
                c = runs[(knob, s, x)]
                return study.subset_pass(c["counts"], c["samples"], bases[(knob, s)]["counts"], subset, kk)

            gain = mean(v(arm, s) - v("grpo", s) for s in seeds)
            full = mean(v("ta_grpo", s) - v("grpo", s) for s in seeds)
            vs_long = interval([v(arm, s) - v("grpo_long", s) for s in seeds])
            rollouts = mean(runs[(knob, s, arm)]["rollouts"] / runs[(knob, s, "grpo")]["rollouts"] for s in seeds)
            share = gain / full if full else math.nan
            out.append([label(arm), f"{subset} pass@{kk}", len(seeds), f"{100 * gain:+.1f}", f"{100 * full:+.1f}",
                        f"{100 * share:.0f}%", f"{rollouts:.2f}x", pct(vs_long, sign=True),
                        "met" if share >= 0.8 and rollouts <= 1.5 else "not met"])
    return out


def plot_map(verdicts: list[dict], bases: dict, path: str) -> None:
    """The primary contrasts against the measured share of hard questions, with their 95% intervals."""
    share = {knob: mean(float(study.hard_mask(b["counts"]).mean()) for (h, _), b in bases.items() if h == knob)
             for knob in study.KNOBS if any(h == knob for h, _ in bases)}
    ks = sorted({r["k"] for r in verdicts if r["primary"]})
    fig, axes = plt.subplots(1, len(ks), figsize=(5.2 * len(ks), 4.2), squeeze=False)
    refs = {"equal_sampling": ("tab:green", "s"), "grpo_long": ("tab:cyan", "v"),
            "ta_grpo_control": ("tab:orange", "X")}
    for ax, k in zip(axes[0], ks, strict=True):
        for j, (ref, (colour, marker)) in enumerate(refs.items()):
            for subset, fill in (("all", colour), ("hard", "white")):
                pts = [r for r in verdicts if r["primary"] and r["k"] == k and r["ref"] == ref and r["subset"] == subset
                       and r["knob"] in share and not math.isnan(r["lo"])]
                if not pts:
                    continue
                xs = np.array([100 * share[r["knob"]] for r in pts]) + (j - 1) * 1.5 + (1.5 if subset == "hard" else 0)
                ys = np.array([100 * r["mean"] for r in pts])
                err = np.array([[100 * (r["mean"] - r["lo"]) for r in pts], [100 * (r["hi"] - r["mean"]) for r in pts]])
                ax.errorbar(xs, ys, yerr=err, fmt=marker + "-", color=colour, mfc=fill, capsize=3,
                            label=f"TA-GRPO - {label(ref)} ({'all' if subset == 'all' else 'hard subset'})")
        ax.axhline(0, color="0.5", lw=0.8)
        ax.set_xlabel("held-out questions the base never solves on q0 (%)")
        ax.set_ylabel(f"difference in pass@{k} (pp, 95% CI over seeds)")
        ax.set_title(f"pass@{k}")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.suptitle("Where TA-GRPO pays: primary contrasts against the share of hard questions")
    fig.tight_layout(rect=(0, 0.12, 1, 0.95))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def sweep_table(rows: list[dict], lrs: dict) -> str:
    out = []
    base = [r for r in rows if r["arm"] == "base"]
    if base:
        out.append(["base model", "-", len(base), f"{100 * mean(r['objective'] for r in base):.1f}",
                    f"{100 * mean(r['pass_at_k']['1'] for r in base):.1f}", "-", ""])
    for arm in dict.fromkeys(r["arm"] for r in rows if r["arm"] != "base"):
        for lr in sorted({r["learning_rate"] for r in rows if r["arm"] == arm}):
            rs = [r for r in rows if r["arm"] == arm and r["learning_rate"] == lr]
            out.append([label(arm), f"{lr:g}", len(rs), f"{100 * mean(r['objective'] for r in rs):.1f}",
                        f"{100 * mean(r['pass_at_k']['1'] for r in rs):.1f}",
                        f"{100 * mean(r['clip_max'] for r in rs):.1f}", "**chosen**" if lrs.get(arm) == lr else ""])
    return markdown_table(["arm", "learning rate", "seeds", "objective (pass@1 + pass@16, %)", "pass@1 %",
                           "clip fraction % (max)", ""], out)


def equivalence_rows(verdicts: list[dict]) -> list[list]:
    """The primary contrasts at the easy end (no hard questions): is TA-GRPO about equal to each baseline there?
    TOST within +-EQUIVALENCE_MARGIN on the same paired values (exploratory: not in the Holm family)."""
    out = []
    for r in verdicts:
        if r["primary"] and r["knob"] == min(study.KNOBS):
            eq = study.about_equal(r["values"])
            out.append([f"{label(r['arm'])} - {label(r['ref'])}", f"pass@{r['k']}", pct(r, sign=True), r["n"],
                        f"{eq['p_tost']:.2g}", "about equal" if eq["equivalent"] else "not shown equal"])
    return out


def conditions(runs: dict, bases: dict, verdicts: list[dict]) -> list[list]:
    """The testbed's own conditions, each computed: RL works at every setting, the ratio clips, the intervals are
    as narrow as the issue asks, the blind guess stays at most 2%."""
    out = []
    for knob in study.KNOBS:
        for arm in ("grpo", "grpo_long"):
            if any(h == knob and a == arm for h, _, a in runs):
                g = study.gain_condition(runs, bases, knob, arm)
                out.append([f"h={knob:g}: {label(arm)} raises pass@1 on the rest (base solves them) above the base, "
                            "lower bound > 0", pct(g, sign=True), g["n"], g["status"]])
    clips = {a: max(max(c["clip_fraction"]) for (h, s, x), c in runs.items() if x == a)
             for a in dict.fromkeys(a for _, _, a in runs)}
    out.append(["the clip acts: largest clip fraction of every arm > 0",
                ", ".join(f"{label(a)} {100 * v:.1f}%" for a, v in clips.items()), "-",
                "met" if all(v > 0 for v in clips.values()) else "not met"])
    wide = [r for r in verdicts if r["primary"] and not math.isnan(r["lo"]) and (r["hi"] - r["lo"]) / 2 >
            HALF_WIDTH_TARGET]
    detail = ""
    if wide:
        widths = [(r["hi"] - r["lo"]) / 2 for r in wide]
        widest = max(widths)
        r = max(wide, key=lambda r: (r["hi"] - r["lo"]) / 2)
        needed = seeds_for_half_width(widest, r["n"], HALF_WIDTH_TARGET)
        detail = (f" ({100 * min(widths):.1f}-{100 * widest:.1f} pp, pass@"
                  f"{'/'.join(sorted({str(r['k']) for r in wide}))} at h = "
                  f"{'/'.join(f'{h:g}' for h in sorted({r['knob'] for r in wide}))}; "
                  f"{sum(r['verdict'] != 'inconclusive' for r in wide)} of them decided; about {needed} seeds would "
                  "bring the widest to the target, not run)")
    out.append([f"primary 95% half-widths <= {100 * HALF_WIDTH_TARGET:.0f} pp",
                f"{len(wide)} of {sum(r['primary'] for r in verdicts)} wider{detail}", "-",
                "met" if not wide else "not met"])
    out.append(["a blind guess hits at most 2% per sample", f"{100 * blind_guess_rate():.2f}%", "-",
                "met" if blind_guess_rate() <= 0.02 else "not met"])
    return out


def write(args, sweep_rows: list[dict], lrs: dict, cells: list[dict], invocations: list[dict]) -> None:
    runs, bases = index(cells)
    k = max(c["samples"] for c in cells)
    verdicts = study.judge(runs, bases, study.primary_contrasts(k) + study.exploratory_contrasts(k))
    primary = [r for r in verdicts if r["primary"]]
    explore = [r for r in verdicts if not r["primary"]]
    conds = conditions(runs, bases, verdicts)
    os.makedirs(args.out, exist_ok=True)
    plot_map(verdicts, bases, os.path.join(args.out, "toy_regime.png"))
    seeds = sorted({s for (_, s, a) in runs if a == "ta_grpo"})
    cell_wall = sum(c["cell_wall_s"] for c in cells) + sum(r.get("cell_wall_s", 0) for r in sweep_rows)
    wall_s = sum(i["wall_s"] for i in invocations)
    argv = invocations[-1]["argv"] if invocations else args.argv  # the invocation that trained the study
    command = "python studies/toy_regime.py " + " ".join(argv)
    if args.render_only:
        command += "`, these files redrawn from its cells by `python studies/toy_regime.py --render-only"
    saved = {"command": command, "machine": machine(),
             "invocations": invocations, "wall_s": wall_s, "cell_wall_s": cell_wall, "learning_rates": lrs,
             "sweep": sweep_rows, "verdicts": verdicts, "conditions": conds,
             "cells": [_slim(c) for c in cells]}
    with open(os.path.join(args.out, "toy_regime.json"), "w", encoding="utf-8") as f:
        json.dump(saved, f, indent=None)
    steps = next(c["max_steps"] for (_, _, a), c in runs.items() if a == "ta_grpo")
    any_cell = next(iter(bases.values()))
    shipped = RegimePretrainConfig()
    md = [
        "# Where TA-GRPO pays: the regime map of the embedded world (issue 19)",
        "",
        f"Command: `{saved['command']}` (cells cached under `{args.work_dir}`, resumable). Rendered on: "
        f"{saved['machine']}. Wall time {wall_s / 60:.1f} min over the invocations that trained cells ("
        + "; ".join(f"`{' '.join(i['argv']) or '(no flags)'}` {i['wall_s'] / 60:.1f} min on {i['workers']} workers"
                    + (f", from {i['recovered_from']}" if i.get("recovered_from") else "") for i in invocations)
        + f"); sum of every cell's own wall time, sweep included, {cell_wall / 60:.1f} min.",
        "",
        "Design, declared in `tagrpo/experiments/study.py` before the study ran: knob `hard_share` in "
        f"{list(study.KNOBS)}; "
        f"primary arms {'; '.join(label(a) for a in study.PRIMARY_ARMS)} over seeds {seeds}; exploratory arms "
        f"{'; '.join(label(a) for a in study.EXPLORATORY_ARMS)} over seeds {args.exploratory_seeds}; the "
        f"adaptive arms at h={study.HARDEST:g} only. Every arm of a seed shares the base (the shipped "
        f"`tagrpo/toy/regime_checkpoint`, recipe {any_cell['spec'].get('base_recipe', 'unrecorded')}: "
        f"`RegimePretrainConfig()`: {shipped.mix['spelled']:.0%} of its corpus in q0's spelled form, "
        f"{shipped.slip:.0%} of those solutions slipping), the training questions, the "
        "held-out questions and the sampling seed. "
        f"Preset `regime` of `tagrpo demo`: N=3, G=4, {steps} generation steps of 8 questions from 64 training "
        "questions (GRPO-long: 4x the steps), two optimizer steps per generation batch (the anchored ratio and the "
        f"clip act), no KL; {k} samples on each of {len(any_cell['counts'])} held-out test questions per seed. "
        "Hard subset: held-out questions whose base got 0 of those samples right on q0.",
        "",
        "Verdicts: paired per-seed differences (arm minus reference, same setting and seed), Student-t 95% "
        "interval, two-sided t-test; the primary family (TA-GRPO against equal-sampling GRPO, GRPO-long and the "
        "renaming-only control, pass@1 and pass@k, overall and on the hard subset, every setting) is "
        "Holm-corrected as one family; everything else is exploratory (uncorrected p). Reproduced / refuted when "
        "p < 0.05 in / against the claimed direction, else inconclusive.",
        "",
        "## The premise at each setting (base model)",
        "",
        premise_table(bases),
        "",
        f"A blind guess hits at most {100 * blind_guess_rate():.2f}% of samples (the most frequent answer).",
        "",
        "## Primary contrasts (pre-registered, Holm-corrected)",
        "",
        verdict_table(primary),
        "",
        "![regime map](toy_regime.png)",
        "",
        f"At h={min(study.KNOBS):g} (no hard questions), is TA-GRPO about equal to each baseline? Equivalence test "
        f"(TOST, both one-sided p < 0.05 within +-{100 * study.EQUIVALENCE_MARGIN:.0f} pp) on the same paired values; "
        "exploratory:",
        "",
        markdown_table(["contrast", "metric", "mean, pp [95% CI]", "seeds", "p (TOST)", "result"],
                       equivalence_rows(verdicts)),
        "",
        "## The testbed's conditions",
        "",
        markdown_table(["condition", "value", "seeds", "status"], conds),
        "",
        "## Every arm, per setting (mean [95% CI] over seeds)",
        "",
    ]
    for knob in study.KNOBS:
        if any(h == knob for h, _ in bases):
            md += [f"### hard_share = {knob:g}", "", arm_table(runs, bases, knob), ""]
    md += [
        "Rescue split: share of questions per generation step whose q0 group (its G=4 samples) was all wrong / all "
        "right and whose pool (all (N+1)G) was mixed; for equal-sampling GRPO the first 4 of its 16 samples of q0 "
        "against all 16 (the same sample size without rephrasing). Strategy entropy: among correct responses, the "
        "entropy of add-first vs subtract-first (1 bit = both equally).",
        "",
        "## Mechanism (exploratory, paired over seeds)",
        "",
        markdown_table(["hard_share", "difference", "quantity", "mean, pp [95% CI]", "seeds"], mechanism_rows(runs)),
        "",
        "## Per-form accuracy after training (exploratory; 64 test problems x 8 samples in every form)",
        "",
        forms_table(runs, bases),
        "",
        "## Exploratory contrasts (uncorrected)",
        "",
        verdict_table(explore),
        "",
        f"## Adaptive pools at h={study.HARDEST:g} (at TA-GRPO's learning rate; exploratory)",
        "",
        markdown_table(["arm", "metric", "seeds", "gain over GRPO, pp", "full TA-GRPO's gain, pp", "share of it",
                        "rollouts vs GRPO", "minus GRPO-long, pp [95% CI]", ">= 80% at <= 1.5x"],
                       adaptive_rows(runs, bases)),
        "",
        f"## Learning-rate sweep (validation problems, h={study.SWEEP_KNOB:g}, seeds {list(study.SWEEP_SEEDS)}, "
        f"{study.SWEEP_SAMPLES} samples per question)",
        "",
        "Objective, the same for every arm: validation pass@1 + pass@16 on q0, averaged over the sweep seeds.",
        "",
        sweep_table(sweep_rows, lrs),
        "",
    ]
    with open(os.path.join(args.out, "toy_regime.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md))
