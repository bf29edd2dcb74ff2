"""The studies' plots: the map of every arm (rest pass@1 against hard pass@k, one panel per setting) of a regime
study. The embedded world beside the real model by difficulty is ``tagrpo.experiments.worlds``."""

from __future__ import annotations

import math
import textwrap

from tagrpo.demo.report import label
from tagrpo.evaluation.stats import interval
from tagrpo.experiments import judge


def _seeds(n: int) -> str:
    return f"{n} seed{'s' * (n != 1)}"


def arm_points(runs: dict, bases: dict, knob: float, k: int, order: tuple[str, ...]) -> dict[str, tuple[dict, dict]]:
    """Per arm at ``knob``: rest pass@1 and hard pass@k, each a t interval over the seeds with a base cell."""
    out = {}
    for arm in (a for a in order if any(h == knob and x == a for h, _, x in runs)):
        cs = [(s, c) for (h, s, a), c in sorted(runs.items()) if h == knob and a == arm and (h, s) in bases]
        vals = {}
        for subset, kk in (("rest", 1), ("hard", k)):
            xs = [judge.subset_pass(c["counts"], c["samples"], bases[(knob, s)]["counts"], subset, kk) for s, c in cs]
            vals[subset] = interval([x for x in xs if not math.isnan(x)])
        out[arm] = (vals["rest"], vals["hard"])
    return out


def plot_map(runs: dict, bases: dict, k: int, path: str, title: str, knobs: tuple, order: tuple[str, ...]) -> None:
    """One panel per knob with cells: every arm at (rest pass@1, hard pass@k) with its 95% intervals over seeds;
    the goal of issue 32 sits to the right of equal-sampling GRPO and near TA-GRPO's height."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    knobs = [h for h in knobs if any(x == h for x, _ in bases)]
    if not knobs:
        return
    fig, axes = plt.subplots(1, len(knobs), figsize=(5.4 * len(knobs), 6.4), squeeze=False)
    drawn = [a for a in order if a != "weighted"]  # the chosen lambda arm is drawn under its own name
    palette = [*plt.get_cmap("tab10").colors, "black", "0.6", "gold"]  # tab10's ten, then three more distinct ones
    colours = dict(zip(drawn, palette, strict=False))
    for ax, knob in zip(axes[0], knobs, strict=True):
        shown = 0
        for arm, (rest, hard) in arm_points(runs, bases, knob, k, order).items():
            if math.isnan(rest["mean"]) or arm == "weighted":
                continue
            shown += 1
            xerr = [[100 * (rest["mean"] - rest["lo"])], [100 * (rest["hi"] - rest["mean"])]] if rest["n"] > 1 else None
            if math.isnan(hard["mean"]):
                ax.errorbar([100 * rest["mean"]], [0], xerr=xerr, fmt="o", mfc="white", color=colours[arm],
                            capsize=3, label=f"{label(arm)} ({_seeds(rest['n'])}; no hard questions)")
                continue
            yerr = [[100 * (hard["mean"] - hard["lo"])], [100 * (hard["hi"] - hard["mean"])]] if hard["n"] > 1 else None
            ax.errorbar([100 * rest["mean"]], [100 * hard["mean"]], xerr=xerr, yerr=yerr, fmt="o", capsize=3,
                        color=colours[arm], label=f"{label(arm)} ({_seeds(rest['n'])})")
        ax.set_xlabel("rest pass@1 (%): questions the base solves at least once")
        ax.set_ylabel(f"hard pass@{k} (%): questions the base never solves")
        ax.set_title(f"hard_share = {knob:g}" + (" (no hard questions: drawn at 0)" if knob == 0 else ""))
        ax.set_xlim(-3, 103)  # a t interval over few seeds can pass 0 or 100: the axes stay on what can happen
        ax.set_ylim(-3, 103)
        ax.grid(alpha=0.3)
        if shown:
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)
        else:  # a base cell and no arm's yet: say so rather than leave the panel blank
            ax.text(50, 50, "no arm's cells yet", ha="center", va="center", color="0.4")
    lines = textwrap.wrap(title, width=55 * len(knobs))  # about 55 characters fit above one panel
    fig.suptitle("\n".join(lines))
    fig.tight_layout(rect=(0, 0, 1, 0.96 - 0.03 * len(lines)))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_contrasts(rows: list[dict], path: str, title: str, show, margin: float | None = None) -> bool:
    """The primary contrasts as a forest: one line per contrast with two or more seeds, its mean difference and 95%
    interval in pp, a line at 0 and, with ``margin`` (the study's equivalence margin), its band and each contrast's
    90% interval (the two one-sided tests', before Holm: inside the band where they show equivalence) where the
    superiority test left it undecided (a reproduced or refuted contrast needs no equivalence test); ``show(setting)``
    writes a setting. False (nothing written) when no contrast has two seeds yet."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    drawn = [r for r in rows if r["n"] > 1 and not math.isnan(r["mean"])]
    if not drawn:
        return False
    tost = False
    fig, ax = plt.subplots(figsize=(8.0, 1.2 + 0.5 * len(drawn)))
    if margin:
        ax.axvspan(-100 * margin, 100 * margin, color="0.9", label=f"equivalence margin +-{100 * margin:g} pp")
    ax.axvline(0, color="0.4", lw=1)
    for i, r in enumerate(reversed(drawn)):
        where = "" if r["knob"] is None else f"{show(r['knob'])}: "
        name = f"{where}{label(r['arm'])} - {label(r['ref'])}, pass@{r['k']} ({_seeds(r['n'])})"
        lo, hi = max(r["lo"], -1.0), min(r["hi"], 1.0)  # drawn within what can happen; the numbers say the rest
        ax.errorbar([100 * r["mean"]], [i], xerr=[[100 * (r["mean"] - lo)], [100 * (hi - r["mean"])]],
                    fmt="o", capsize=3, color="black")
        undecided = r.get("verdict", "inconclusive") in ("inconclusive", "no difference")
        if margin and undecided and not math.isnan(r.get("tost_lo", math.nan)):  # the equivalence test's interval
            ax.plot([100 * max(r["tost_lo"], -1.0), 100 * min(r["tost_hi"], 1.0)], [i, i], color="tab:blue", lw=4,
                    alpha=0.6, solid_capstyle="butt")
            tost = True
        ax.text(100 * hi, i, f"  {100 * r['mean']:+.1f} [{100 * r['lo']:+.1f}, {100 * r['hi']:+.1f}]",
                va="center", fontsize=7)
        ax.annotate(name, (0, i), xycoords=("axes fraction", "data"), xytext=(-6, 0), textcoords="offset points",
                    ha="right", va="center", fontsize=8)
    ax.set_yticks([])
    ax.set_ylim(-0.7, len(drawn) - 0.3)
    # a t interval over few seeds can pass +-100 pp: the axis stays on what a difference of two shares can be
    left = max(-100.0, 100 * min(min(r["lo"] for r in drawn), -(margin or 0), 0))
    right = min(100.0, 100 * max(max(r["hi"] for r in drawn), margin or 0, 0))
    ax.set_xlim(left - 0.05 * (right - left), right + 0.45 * (right - left))  # room for the numbers on the right
    ax.set_xlabel("difference, pp (black: 95% interval over paired seeds" +
                  ("; blue: 90%, the equivalence test's, before Holm)" if tost else ")"))
    ax.grid(axis="x", alpha=0.3)
    if margin:
        ax.legend(fontsize=7, loc="lower right")
    ax.set_title("\n".join(textwrap.wrap(title, width=70)), fontsize=9)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return True
