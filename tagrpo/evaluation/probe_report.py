"""What ``tagrpo probe`` reports: the summary of its counts, its place on the committed regime map, a
recommendation whose every sentence names the file its numbers come from, and ``probe.json``, ``probe.md`` and
``probe.png`` (per question, q0's pass rate against its best rephrasing's).

The map is ``regime_map.json`` beside this module, written by ``tools/regime_map.py`` from
``studies/results/toy_regime.json``, ``toy_premise.json`` and ``real_study_v2.json``: the embedded regime world's
measured points (its base's share of held-out questions with 0 of 64 right on q0, per hard share h, and TA-GRPO's
contrasts against equal-sampling GRPO there) and the real-model study's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from rich.console import Console

from tagrpo.data.jsonl import atomic_write
from tagrpo.evaluation import probe_math as pm
from tagrpo.evaluation.tables import markdown_table

MAP = Path(__file__).with_name("regime_map.json")
SUBSETS = {"all": "all questions", "hard": "the hard subset", "rest": "the rest"}
ARMS = {"ta_grpo": "TA-GRPO", "equal_sampling": "equal-sampling GRPO", "ta_grpo_control": "renaming-only TA-GRPO",
        "pooled_no_anchor": "pooled without anchoring", "grpo": "GRPO", "base": "base model"}
COLORS = {"solved": "#2b8a3e", "readable": "#1c7ed6", "hidden": "#e8590c", "unreachable": "#868e96"}


def load_map(path: str | os.PathLike = MAP) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def summarize(records: list[dict], cfg, rows: int, notes: list[str]) -> dict:
    """Shares, per-type shifts, expected uniform groups and pools, rollouts, the map's place, the recommendation."""
    big_n, g = cfg.num_rephrasings, cfg.num_generations
    zero = pm.grpo_zero_signal(records, g)
    q0, best = pm.best_rephrasing_rates(records)
    out = {
        "model": cfg.model, "data": cfg.data, "hard_share": cfg.hard_share, "reward": cfg.reward,
        "n": cfg.n, "questions": len(records), "rows": rows, "requested_questions": cfg.questions, "notes": notes,
        "shares": pm.class_shares(records),
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
    out["placement"] = place(out["shares"]["hidden"], regime)
    out["recommendation"] = recommend(out, regime)
    return out


def place(hidden: float, regime: dict) -> dict:
    """The embedded world's measured point whose hidden share is nearest ``hidden``."""
    point = min(regime["toy"]["points"], key=lambda p: abs(p["hidden_share"]["mean"] - hidden))
    return {"hard_share": point["hard_share"], "map_hidden_share": point["hidden_share"]["mean"],
            "distance": hidden - point["hidden_share"]["mean"], "source": point["hidden_share"]["source"]}


def _pp(x: float) -> str:
    return f"{100 * x:.1f}%"


def _ci(v: dict) -> str:
    return f"{100 * v['mean']:+.1f} pp [{100 * v['lo']:+.1f}, {100 * v['hi']:+.1f}]"


def _contrast(v: dict, named: bool = False) -> str:
    p = f", Holm p {v['p_holm']:.2g}" if v.get("p_holm") is not None else ""
    where = f" on {SUBSETS.get(v.get('subset'), v.get('subset'))}" if v.get("subset") else ""
    arm, ref = v["contrast"].split(" - ")
    who = f"{ARMS.get(arm, arm)} - {ARMS.get(ref, ref)}, " if named else ""
    return f"{who}pass@{v['k']}{where} {_ci(v)} ({v['verdict']}{p})"


def recommend(s: dict, regime: dict) -> list[str]:
    """Sentences, each with the file its numbers come from; never a bare verdict."""
    sh, toy, real = s["shares"], regime["toy"], regime["real"]
    big_n, g, r = s["ta_grpo"]["num_rephrasings"], s["grpo"]["num_generations"], s["rollouts_per_question"]
    point = next(p for p in toy["points"] if p["hard_share"] == s["placement"]["hard_share"])
    verdicts = point["verdicts"]
    src, real_src = toy["source"], real["source"]
    out = [
        f"Of {s['questions']} probed questions ({s['n']} samples per variant), {_pp(sh['hidden'])} are hidden (q0 all "
        f"wrong, a rephrasing right), {_pp(sh['readable'])} readable, {_pp(sh['solved'])} solved and "
        f"{_pp(sh['unreachable'])} unreachable (probe.json).",
        f"At G={g}, GRPO would see no signal on {_pp(s['grpo']['zero_signal_share'])} of questions; TA-GRPO at "
        f"N={big_n} leaves {_pp(s['ta_grpo']['pool_uniform_share'])} of pools uniform and rescues about "
        f"{_pp(s['ta_grpo']['rescued_from_all_wrong'])} from an all-wrong q0 group (probe.json).",
        f"Cost: TA-GRPO and equal-sampling GRPO spend {r['ta_grpo']:g} rollouts per question, GRPO {r['grpo']:g}, the "
        f"adaptive modes about {r['adaptive']:.1f} on this data (probe.json).",
        f"The nearest measured point of the embedded regime world is h={point['hard_share']:g}, whose base had "
        f"{_pp(point['hidden_share']['mean'])} of held-out questions with 0 of {point['hidden_share']['samples']} "
        f"right on q0 (a stricter definition than 0 of {s['n']}; {src}).",
        f"There TA-GRPO against equal-sampling GRPO (N={toy['num_rephrasings']}, G={toy['num_generations']}, "
        f"{toy['seeds']} seeds) gave " + "; ".join(_contrast(v) for v in verdicts) + f" ({src}).",
    ]
    hard_gain = [v for v in verdicts if v["subset"] == "hard" and v["verdict"] == "reproduced"]
    pass1 = next((v for v in verdicts if v["subset"] == "all" and v["k"] == 1), None)
    if hard_gain:
        out.append(f"So in the embedded world TA-GRPO paid where its hidden questions are the target (pass@k on them), "
                   f"while overall pass@1 was {pass1['verdict'] if pass1 else 'not measured'} at this point ({src}).")
        out.append(f"The adaptive pool modes spend fewer rollouts (about {r['adaptive']:.1f} per question on this "
                   f"data against {r['ta_grpo']:g}, probe.json), but they are no fix for the pass@1 cost: in the "
                   "embedded world they lost pass@1 on the questions the base could read, as TA-GRPO did, and so "
                   f"did issue 32's gated and weighted variants ({src}, adaptive arms at h=0.9; "
                   "studies/results/toy_regime_v2.md).")
    else:
        out.append(f"So in the embedded world there was little for pooling to rescue at this point, and TA-GRPO's "
                   f"overall pass@1 was {pass1['verdict'] if pass1 else 'not measured'} against equal-sampling GRPO; "
                   f"GRPO (or equal-sampling GRPO) is the cheaper choice on data like this ({src}).")
    if sh["unreachable"] > 0:
        out.append(f"{_pp(sh['unreachable'])} of questions are unreachable: neither GRPO nor TA-GRPO gets a signal on "
                   "them without easier rephrasings (probe.json).")
    decided = [v for v in real["verdicts"] if v["verdict"] != "inconclusive"]
    agree = ("decided nothing at Holm, so it neither confirms nor contradicts the map" if not decided
             else f"decided {len(decided)} of its {len(real['verdicts'])} primary contrasts at Holm")
    out.append(
        f"On a real model ({real['model']}, {real['task']}, N={real['num_rephrasings']}, G={real['num_generations']}, "
        f"{real['q0_zero_share']['n']} seeds) the base had {_pp(real['q0_zero_share']['mean'])} of test questions "
        f"with q0 0 of {real['q0_zero_share']['samples']}, TA-GRPO's pools rescued "
        f"{_pp(real['rescued_from_all_wrong']['ta_grpo']['mean'])} of questions per step from all-wrong q0 groups "
        f"(equal-sampling GRPO's larger groups {_pp(real['rescued_from_all_wrong']['equal_sampling']['mean'])}), and "
        f"the study {agree}: " + "; ".join(_contrast(v, True) for v in real["verdicts"]) + f" ({real_src}).")
    if real.get("by_difficulty"):
        out.append("Split after its verdicts the way the embedded world splits (hard: the base got q0 0 of "
                   f"{real['q0_zero_share']['samples']} right), TA-GRPO - equal-sampling GRPO on that real model was "
                   + "; ".join(_contrast(v) for v in real["by_difficulty"])
                   + f" (post hoc, uncorrected; {real_src}).")
    out.append("The map comes from the embedded world, not from your model; "
               + "; ".join(regime["open"]) + " (tagrpo/evaluation/regime_map.json).")
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
    ax.set_title(f"{os.path.basename(str(summary['model']).rstrip('/'))} on {summary['data']}: "
                 f"{summary['questions']} questions (numbers: questions per point)", fontsize=9)
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
        "# Will TA-GRPO help on this data? (`tagrpo probe`)", "",
        f"Model `{s['model']}`, data `{s['data']}`" + (f" (hard share {s['hard_share']})" if s["hard_share"]
                                                        is not None else "")
        + f", reward `{s['reward']}`: {s['questions']} of {s['rows']} questions x {s['n']} samples of q0 and of "
        f"each rephrasing.", *(f"Note: {n}." for n in s["notes"]), "",
        "## Classes (q0's group of n and its rephrasings)", "", markdown_table(["class", "questions %"], rows), "",
        "## Per rephrasing type (shift: the type's pass rate minus q0's on the same questions)", "",
        markdown_table(["type", "questions", "pass rate %", "q0 pass rate %", "shift, pp [95% CI]"], types), "",
        f"## At the training run's G={s['grpo']['num_generations']} and N={s['ta_grpo']['num_rephrasings']}", "",
        f"- GRPO's expected share of questions without signal: {100 * s['grpo']['zero_signal_share']:.1f}% "
        f"({s['grpo']['estimator']} estimate from each question's q0 count)",
        f"- TA-GRPO's expected share of uniform pools: {100 * s['ta_grpo']['pool_uniform_share']:.1f}%",
        f"- expected rescue from an all-wrong q0 group: {100 * s['ta_grpo']['rescued_from_all_wrong']:.1f}%", "",
        markdown_table(["mode", "rollouts per question"], modes), "",
        "## Recommendation (each sentence names its source)", "", *(f"- {x}" for x in s["recommendation"]), "",
        "![q0 against its best rephrasing](probe.png)", "",
    ]
    return "\n".join(lines)


def write_probe(directory: str, summary: dict, records: list[dict], console: Console) -> None:
    os.makedirs(directory, exist_ok=True)
    atomic_write(os.path.join(directory, "probe.json"), lambda p: Path(p).write_text(json.dumps(summary, indent=1)))
    atomic_write(os.path.join(directory, "probe.md"), lambda p: Path(p).write_text(markdown(summary)))
    plot(records, summary, os.path.join(directory, "probe.png"))
    shares = ", ".join(f"{k} {100 * v:.1f}%" for k, v in summary["shares"].items())
    console.print(f"[bold]probe[/bold]: {summary['questions']} questions x n={summary['n']}: {shares}")
    for sentence in summary["recommendation"]:
        console.print(f"- {sentence}")
    console.print(f"wrote {directory}/probe.json, probe.md, probe.png")
