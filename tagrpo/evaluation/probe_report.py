"""What ``tagrpo probe`` reports: one conclusion, the evidence behind it (each line naming the file its numbers come
from), the probe's counts, and ``probe.json``, ``probe.md`` and ``probe.png`` (per question, q0's pass rate against
its best rephrasing's).

The evidence is ``regime_map.json`` beside this module, written by ``tools/regime_map.py`` from the current studies:
points where TA-GRPO was trained against equal-sampling GRPO (the same rollouts per question), each with what the
probe would measure there and the measured difference. ``real`` points are a pretrained LLM
(``studies/results/real_study_v2.json``, ``real_study_v3.json`` when present), ``embedded`` points the toy bases of
the embedded regime world (``toy_regime_v2.json``, ``toy_capacity.json``).

Placement rule, declared before the third real study's verdicts existed:

1. Which points. A shipped toy model (``toy_regime``, ``toy_world``: the names of ``tagrpo.models.TOY_MODELS`` or
   their directories) is placed on the embedded points of the shipped base; any other model, a pretrained LLM, on the
   real points only. For an LLM the nearest embedded point is shown as weaker context, labelled as a toy's.
2. What is compared. The probe's share of questions whose q0 is all wrong (hidden + unreachable) and the mean shift
   of its rephrasings (their pass rate minus q0's, averaged over questions) against each point's, measured on the
   point's base model (``q0_all_wrong`` at 8 samples and ``mean_shift``). The share says how many questions leave
   GRPO's q0 group without signal; the shift says how much easier the rephrasings are, which is what a pool lends
   q0. A point without a measured shift is compared on the share alone. Changed 2026-12-07, before the reasoning
   regime's verdict, which checks it: a real point is measured by ``tagrpo probe`` on its regime's training data
   (the committed probe runs), as a user's probe measures, no longer on its base cells at evaluation sampling, which
   read 8-15 pp fewer questions all wrong on the same regimes (``tools/regime_map.py``).
3. Near. A point is near when both differences are within ``SHARE_GAP`` and ``SHIFT_GAP``; of the near points the
   nearest (the larger of the two differences, each divided by its gap) is the place, and the conclusion expects
   what TA-GRPO did there against equal-sampling GRPO at pass@1 (raised, lowered, no difference shown at Holm's
   ``ALPHA``), confirmed with a pilot of both arms.
4. Cannot tell. With fewer than ``MIN_QUESTIONS`` probed questions, or no near point, the conclusion says it cannot
   tell and what to run: a pilot of both arms, ``PILOT_SEEDS`` seeds each, on the user's data.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

from rich.console import Console

from tagrpo.data.jsonl import atomic_write
from tagrpo.evaluation import probe_math as pm
from tagrpo.evaluation.tables import markdown_table
from tagrpo.models import PACKAGE_ROOT, TOY_MODELS

MAP = Path(__file__).with_name("regime_map.json")
SHARE_GAP = 0.10  # near: q0-all-wrong shares within 10 pp (the probe's 95% half-width at 100 questions, p = 0.5)
SHIFT_GAP = 0.10  # and mean shifts within 10 pp
MIN_QUESTIONS = 100  # fewer probed questions: cannot tell
ALPHA = 0.05  # a difference is shown when its Holm-corrected p is below this
PILOT_SEEDS = 3
SUBSETS = {"all": "", "hard": " on the hard questions", "rest": " on the rest"}
COLORS = {"solved": "#2b8a3e", "readable": "#1c7ed6", "hidden": "#e8590c", "unreachable": "#868e96"}


def load_map(path: str | os.PathLike = MAP) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def is_toy_model(model: str) -> bool:
    """Whether ``model`` names a shipped toy model or is its directory."""
    shipped = {os.path.realpath(PACKAGE_ROOT / path) for path in TOY_MODELS.values()}
    return model in TOY_MODELS or os.path.realpath(str(model)) in shipped


def question_shifts(records: list[dict]) -> list[float]:
    """Per question with rephrasings, their mean pass rate minus q0's."""
    return [(sum(r["rephrasings"]) / len(r["rephrasings"]) - r["q0"]) / r["n"] for r in records if r["rephrasings"]]


def mean_shift(records: list[dict]) -> float:
    """Per question, the rephrasings' mean pass rate minus q0's, averaged over questions."""
    shifts = question_shifts(records)
    return sum(shifts) / len(shifts) if shifts else 0.0


def summarize(records: list[dict], cfg, rows: int, notes: list[str]) -> dict:
    """Shares, per-type shifts, expected uniform groups and pools, rollouts, the place on the map, the report."""
    big_n, g = cfg.num_rephrasings, cfg.num_generations
    zero = pm.grpo_zero_signal(records, g)
    q0, best = pm.best_rephrasing_rates(records)
    shares = pm.class_shares(records)
    out = {
        "model": cfg.model, "data": cfg.data, "hard_share": cfg.hard_share, "reward": cfg.reward,
        "n": cfg.n, "questions": len(records), "rows": rows, "requested_questions": cfg.questions, "notes": notes,
        "shares": shares, "q0_all_wrong": shares["hidden"] + shares["unreachable"], "mean_shift": mean_shift(records),
        "q0_pass_rate": float(q0.mean()) if len(q0) else 0.0,
        "best_rephrasing_pass_rate": float(best.mean()) if len(best) else 0.0,
        "per_type": pm.per_type(records),
        "grpo": {"num_generations": g, "zero_signal_share": zero, "estimator": pm.estimator(cfg.n, g)},
        "ta_grpo": {"num_rephrasings": big_n, "num_generations": g,
                    "pool_uniform_share": pm.pool_uniform(records, big_n, g),
                    "rescued_from_all_wrong": pm.rescued_from_all_wrong(records, big_n, g)},
        "rollouts_per_question": pm.rollouts(big_n, g, zero),
    }
    regime = load_map()
    out["placement"] = place(out, regime, toy=is_toy_model(cfg.model))
    out["conclusion"] = conclusion(out, regime)
    out["recommendation"] = recommend(out, regime)
    return out


def _distance(s: dict, point: dict) -> dict:
    m = point["measured"]
    share = s["q0_all_wrong"] - m["q0_all_wrong"]["mean"]
    shift = None if m.get("mean_shift") is None else s["mean_shift"] - m["mean_shift"]["mean"]
    scaled = max(abs(share) / SHARE_GAP, 0.0 if shift is None else abs(shift) / SHIFT_GAP)
    return {"share": share, "shift": shift, "scaled": scaled}


def nearest(s: dict, points: list[dict]) -> tuple[int | None, dict | None]:
    """The index (in ``points``) of the point nearest the probe's measurement, and the distance to it."""
    measured = [(i, _distance(s, p)) for i, p in enumerate(points) if p.get("measured")]
    return min(measured, key=lambda x: x[1]["scaled"], default=(None, None))


def candidates(regime: dict, toy: bool) -> list[dict]:
    if toy:
        return [p for p in regime["points"] if p["world"] == "embedded" and p.get("toy_base") == "toy_regime"]
    return [p for p in regime["points"] if p["world"] == "real"]


def place(s: dict, regime: dict, toy: bool) -> dict:
    """The placement rule of the module docstring: the point the conclusion goes by, or why there is none."""
    points = candidates(regime, toy)
    index, distance = nearest(s, points)
    point = None if index is None else points[index]
    near = distance is not None and distance["scaled"] <= 1.0 and s["questions"] >= MIN_QUESTIONS
    reason = None
    if s["questions"] < MIN_QUESTIONS:
        reason = f"only {s['questions']} questions were probed, and the rule needs {MIN_QUESTIONS}"
    elif not near:
        kind = "toy point" if toy else "real model"
        reason = (f"no measured {kind} reads like this data (within {100 * SHARE_GAP:.0f} pp of its share of "
                  f"questions with q0 all wrong and {100 * SHIFT_GAP:.0f} pp of its rephrasings' mean shift)")
    return {"rule": "embedded points (a shipped toy model)" if toy else "real points (a pretrained model)",
            "world": "embedded" if toy else "real", "near": near, "reason": reason,
            "point": None if point is None else label(point), "source": None if point is None else point["source"],
            "index": None if point is None else regime["points"].index(point), "distance": distance,
            "share_gap": SHARE_GAP, "shift_gap": SHIFT_GAP, "min_questions": MIN_QUESTIONS}


def label(point: dict) -> str:
    if point["world"] == "real":
        return f"{point['model']} on {point['task']}, {point['regime']}"
    return f"{point['model']} at hard share {point['hard_share']:g}"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _pp(v: dict) -> str:
    """The size of a shown difference with its interval, as magnitudes: ``12.8 pp [9.7, 15.8]``."""
    m, lo, hi = (v["mean"], v["lo"], v["hi"]) if v["mean"] >= 0 else (-v["mean"], -v["hi"], -v["lo"])
    return f"{100 * m:.1f} pp [{100 * lo:.1f}, {100 * hi:.1f}]"


def direction(v: dict) -> str:
    """``raised``, ``lowered`` or ``no difference``: the sign of a contrast shown at Holm's ``ALPHA``."""
    if v.get("p_holm") is not None and v["p_holm"] < ALPHA:
        return "raised" if v["mean"] > 0 else "lowered"
    return "no difference"


def effect(v: dict) -> str:
    """``raised pass@1 by 11.8 pp [6.6, 17.1]``, ``lowered ...``, ``showed no difference in ... (+2.0 pp [...])``."""
    where, d = SUBSETS.get(v["subset"], f" on {v['subset']}"), direction(v)
    if d == "no difference":
        return (f"showed no difference in pass@{v['k']}{where} ({100 * v['mean']:+.1f} pp [{100 * v['lo']:+.1f}, "
                f"{100 * v['hi']:+.1f}])")
    return f"{d} pass@{v['k']}{where} by {_pp(v)}"


def _effects(point: dict, k: int | None = None) -> str:
    parts = [effect(v) for v in point["contrasts"] if k is None or v["k"] == k]
    return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]


def _pass1(point: dict) -> dict | None:
    ones = sorted((v for v in point["contrasts"] if v["k"] == 1), key=lambda v: v["subset"] != "all")
    return ones[0] if ones else None


def pilot(s: dict) -> str:
    big_n, g = s["ta_grpo"]["num_rephrasings"], s["grpo"]["num_generations"]
    return (f"a pilot of both arms on your data, {PILOT_SEEDS} seeds each: `tagrpo train` with "
            f"`num_rephrasings={big_n} num_generations={g}` against `num_rephrasings=0 "
            f"num_generations={(big_n + 1) * g}` (the same rollouts), compared on held-out questions with "
            "`tagrpo eval --compare`")


def conclusion(s: dict, regime: dict) -> str:
    """One sentence: ``Expect ...; confirm it with ...`` or ``Cannot tell ...; find out with ...``."""
    where = s["placement"]
    if not where["near"]:
        more = f"a probe of {MIN_QUESTIONS} questions, then " if s["questions"] < MIN_QUESTIONS else ""
        return (f"Cannot tell whether TA-GRPO beats equal-sampling GRPO on this model and data: {where['reason']}; "
                f"find out with {more}{pilot(s)}.")
    point = regime["points"][where["index"]]
    one = _pass1(point)
    verbs = {"raised": "raise", "lowered": "lower", "no difference": "make no clear difference to"}
    expect = f"{verbs[direction(one)]} pass@1"
    wider = [v for v in point["contrasts"] if v["subset"] == one["subset"] and v["k"] > 1]
    if wider and direction(wider[0]) not in (direction(one), "no difference"):
        expect += f" but {verbs[direction(wider[0])]} pass@{wider[0]['k']}"
    kind = "toy point" if point["world"] == "embedded" else "model"
    return (f"Expect TA-GRPO to {expect} compared with equal-sampling GRPO at the same rollouts, as on the nearest "
            f"measured {kind} ({label(point)}); confirm it with {pilot(s)}.")


def _point_numbers(point: dict) -> str:
    m = point["measured"]
    shift = "" if m.get("mean_shift") is None else f", rephrasings {100 * m['mean_shift']['mean']:+.1f} pp against q0"
    on = m.get("on", "test questions")
    return f"{_pct(m['q0_all_wrong']['mean'])} of {on} with q0 all wrong in {m['probe_n']} samples{shift}"


def recommend(s: dict, regime: dict) -> list[str]:
    """The evidence, at most six lines, each ending with the file its numbers come from."""
    sh, where, r = s["shares"], s["placement"], s["rollouts_per_question"]
    big_n, g = s["ta_grpo"]["num_rephrasings"], s["grpo"]["num_generations"]
    out = [f"Your probe: {_pct(s['q0_all_wrong'])} of {s['questions']} questions have q0 all wrong in {s['n']} "
           f"samples ({_pct(sh['hidden'])} with a rephrasing right, {_pct(sh['unreachable'])} with none); the "
           f"rephrasings score {100 * s['mean_shift']:+.1f} pp against q0 on average (probe.json)."]
    if where["index"] is not None:
        point = regime["points"][where["index"]]
        d = where["distance"]
        fit = "within" if d["scaled"] <= 1.0 else "outside"
        other = "" if s["n"] == point["measured"]["probe_n"] else f"; yours counts 0 of {s['n']}"
        out.append(f"Nearest measured {'toy point' if point['world'] == 'embedded' else 'real model'}: "
                   f"{label(point)}, {_point_numbers(point)}{other}: {fit} the rule's distance ({100 * SHARE_GAP:.0f} "
                   f"and {100 * SHIFT_GAP:.0f} pp) ({point['source']}).")
        out.append(f"There TA-GRPO {_effects(point)} compared with equal-sampling GRPO (N={point['num_rephrasings']}, "
                   f"G={point['num_generations']}, {point['seeds']} seeds, Holm-corrected) ({point['source']}).")
    context = candidates(regime, toy=where["world"] == "real")
    index, _ = nearest(s, context)
    if index is not None:
        point = context[index]
        if where["world"] == "real":
            out.append(f"Weaker context, from a toy model rather than an LLM: at the embedded world's nearest point "
                       f"({label(point)}, {_point_numbers(point)}) TA-GRPO {_effects(point, 1)} ({point['source']}).")
        else:
            out.append(f"On a real LLM, for comparison ({label(point)}), TA-GRPO {_effects(point, 1)} "
                       f"({point['source']}).")
    out.append(f"Cost per question: TA-GRPO and equal-sampling GRPO the same {r['ta_grpo']:g} rollouts ((N+1)·G, "
               f"N={big_n}, G={g}); GRPO {r['grpo']:g}; the adaptive pool modes about {r['adaptive']:.1f} on this "
               "data, predicted from the probe (probe.json).")
    if sh["unreachable"] > 0:
        out.append(f"{_pct(sh['unreachable'])} of questions are unreachable (q0 and every rephrasing all wrong): no "
                   "method gets a signal on them without easier rephrasings (probe.json).")
    return out


def plot(records: list[dict], summary: dict, path: str) -> None:
    """Per question, q0's pass rate against its best rephrasing's; marker area by the number of questions."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 5.6), dpi=120)
    cells: dict[tuple[float, float, str], int] = {}
    for r in records:
        key = (r["q0"] / r["n"], max(r["rephrasings"], default=0) / r["n"], pm.classify(r["q0"], r["rephrasings"],
                                                                                       r["n"]))
        cells[key] = cells.get(key, 0) + 1
    most = max(cells.values(), default=1)
    for kind in pm.CLASSES:
        pts = [(x, y, c) for (x, y, k), c in cells.items() if k == kind]
        if pts:
            xs, ys, cs = zip(*pts, strict=True)
            label = f"{kind} {100 * summary['shares'][kind]:.0f}%"
            ax.scatter(xs, ys, s=[25 + 900 * c / most for c in cs], c=COLORS[kind], alpha=0.6, edgecolors="white",
                       linewidths=0.6, label=label)
            for x, y, c in pts:
                if c > 1:
                    ax.annotate(str(c), (x, y), ha="center", va="center", fontsize=7, color="#212529")
    ax.plot([0, 1], [0, 1], color="#adb5bd", lw=1, ls="--", zorder=0)
    ax.annotate("rephrasing as hard as q0", (0.62, 0.55), rotation=38, fontsize=7, color="#868e96")
    ax.set(xlim=(-0.06, 1.06), ylim=(-0.06, 1.06), xlabel=f"q0 pass rate ({summary['n']} samples)",
           ylabel=f"best rephrasing's pass rate ({summary['n']} samples)")
    title = (f"{os.path.basename(str(summary['model']).rstrip('/'))} on {summary['data']}: {summary['questions']} "
             "questions (numbers: questions per point)")
    ax.set_title(textwrap.fill(title, 70), fontsize=9)  # a long data path wraps instead of leaving the figure
    legend = ax.legend(loc="lower right", fontsize=8, title="class", title_fontsize=8)
    for handle in legend.legend_handles:
        handle.set_sizes([50])
    ax.grid(alpha=0.25)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def markdown(s: dict) -> str:
    rows = [[k, f"{100 * v:.1f}"] for k, v in s["shares"].items()]
    types = [[t, v["questions"], f"{100 * v['pass_rate']:.1f}", f"{100 * v['q0_pass_rate']:.1f}",
              f"{100 * v['shift']:+.1f} [{100 * v['shift_ci95'][0]:+.1f}, {100 * v['shift_ci95'][1]:+.1f}]"]
             for t, v in s["per_type"].items()]
    modes = [[m, f"{v:g}"] for m, v in s["rollouts_per_question"].items()]
    lines = [
        "# Will TA-GRPO help on this data? (`tagrpo probe`)", "", f"**{s['conclusion']}**", "",
        "## Why (each line names its source)", "", *(f"- {x}" for x in s["recommendation"]), "",
        f"How the place is chosen: {s['placement']['rule']}, the nearest within {100 * SHARE_GAP:.0f} pp of the share "
        f"of questions with q0 all wrong and {100 * SHIFT_GAP:.0f} pp of the mean shift, from at least "
        f"{MIN_QUESTIONS} probed questions (docs/probe.md; the points: tagrpo/evaluation/regime_map.json).", "",
        "## The probe", "",
        f"Model `{s['model']}`, data `{s['data']}`" + (f" (hard share {s['hard_share']})" if s["hard_share"]
                                                        is not None else "")
        + f", reward `{s['reward']}`: {s['questions']} of {s['rows']} questions x {s['n']} samples of q0 and of "
        f"each rephrasing.", *(f"Note: {n}." for n in s["notes"]), "",
        "### Classes (q0's group of n and its rephrasings)", "", markdown_table(["class", "questions %"], rows), "",
        "### Per rephrasing type (shift: the type's pass rate minus q0's on the same questions)", "",
        markdown_table(["type", "questions", "pass rate %", "q0 pass rate %", "shift, pp [95% CI]"], types), "",
        f"### At the training run's G={s['grpo']['num_generations']} and N={s['ta_grpo']['num_rephrasings']}", "",
        f"- GRPO's expected share of questions without signal: {100 * s['grpo']['zero_signal_share']:.1f}% "
        f"({s['grpo']['estimator']} estimate from each question's q0 count)",
        f"- TA-GRPO's expected share of uniform pools: {100 * s['ta_grpo']['pool_uniform_share']:.1f}%",
        f"- expected rescue from an all-wrong q0 group: {100 * s['ta_grpo']['rescued_from_all_wrong']:.1f}%", "",
        markdown_table(["mode", "rollouts per question"], modes), "",
        "![q0 against its best rephrasing](probe.png)", "",
    ]
    return "\n".join(lines)


def write_probe(directory: str, summary: dict, records: list[dict], console: Console) -> None:
    os.makedirs(directory, exist_ok=True)
    atomic_write(os.path.join(directory, "probe.json"), lambda p: Path(p).write_text(json.dumps(summary, indent=1)))
    atomic_write(os.path.join(directory, "probe.md"), lambda p: Path(p).write_text(markdown(summary)))
    plot(records, summary, os.path.join(directory, "probe.png"))
    shares = ", ".join(f"{k} {100 * v:.1f}%" for k, v in summary["shares"].items())
    console.print(f"[bold]{summary['conclusion']}[/bold]")
    console.print(f"probe: {summary['questions']} questions x n={summary['n']}: {shares}")
    for sentence in summary["recommendation"]:
        console.print(f"- {sentence}")
    console.print(f"wrote {directory}/probe.json, probe.md, probe.png")
