"""The probe's forecast against each study's verdict, for every regime of both worlds (issue 45, item 2).

    .venv/bin/python studies/forecast_vs_verdict.py      # writes studies/results/forecast_vs_verdict.{json,md}

One row per point of the shipped regime map (``tagrpo/evaluation/regime_map.json``, ``tools/regime_map.py``): what
``tagrpo probe`` measures on that regime's base (q0 all wrong in 8 samples, the rephrasings' mean shift) and TA-GRPO
against equal-sampling GRPO there (pass@1 and the study's largest k, shown at Holm's 5%). Two forecasts:

- *committed*: the conclusion ``tagrpo probe`` gave on the regime's base and training data, committed before the
  regime's first arm trained (``FORECASTS``; the third real study's regimes only: the earlier studies ran before the
  probe's current rule existed);
- *leave one out*: the placement rule (``tagrpo.evaluation.probe_report.place``) applied to the regime's own
  measurement on the map without the regime's point: what the rule would have said had the regime never been run.
  It is computed after the fact, from the map's numbers, not from a probe run.

A forecast *agrees* when it expects the direction the verdict shows at pass@1 (raised, lowered, no difference);
"cannot tell" neither agrees nor misses.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tagrpo.evaluation.probe_report import MIN_QUESTIONS, _pass1, direction, label, load_map, place
from tagrpo.evaluation.tables import markdown_table

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "studies" / "results" / "forecast_vs_verdict"
FORECASTS = "studies/results/real_study_v3_forecast/{regime}/probe.json"  # committed before each v3 regime's arms
EXPECT = {"raise": "raised", "lower": "lowered", "make no clear difference to": "no difference"}


def knob(point: dict) -> str | None:
    """The v3 regime's name of a point (``regime natural: ...``), else None."""
    found = re.match(r"regime (\w+):", point.get("regime", ""))
    return found.group(1) if found and point["source"].endswith("real_study_v3.json") else None


def expected(conclusion: str) -> str:
    """``raised``, ``lowered``, ``no difference`` or ``cannot tell``, from a probe's one-sentence conclusion."""
    if conclusion.startswith("Cannot tell"):
        return "cannot tell"
    verb = re.match(r"Expect TA-GRPO to (raise|lower|make no clear difference to) pass@1", conclusion)
    if verb is None:
        raise ValueError(f"a conclusion this table cannot read: {conclusion[:80]!r}")
    return EXPECT[verb.group(1)]


def leave_one_out(point: dict, regime: dict) -> dict:
    """The rule's placement of ``point``'s own measurement on the map without it."""
    m = point["measured"]
    shift = m.get("mean_shift")
    s = {"q0_all_wrong": m["q0_all_wrong"]["mean"], "mean_shift": 0.0 if shift is None else shift["mean"],
         "questions": MIN_QUESTIONS}
    others = {**regime, "points": [p for p in regime["points"] if p is not point]}
    if shift is None:  # no measured shift here: compare on the share alone, as the rule does for such a point
        others["points"] = [{**p, "measured": {**p["measured"], "mean_shift": None}} for p in others["points"]]
    where = place(s, others, toy=point["world"] == "embedded")
    if not where["near"]:
        return {"expects": "cannot tell", "nearest": where["point"], "why": where["reason"]}
    near = others["points"][where["index"]]
    return {"expects": direction(_pass1(near)), "nearest": label(near), "why": None}


def committed(point: dict) -> dict | None:
    name = knob(point)
    path = None if name is None else ROOT / FORECASTS.format(regime=name)
    if path is None or not path.exists():
        return None
    probe = json.loads(path.read_text(encoding="utf-8"))
    return {"expects": expected(probe["conclusion"]), "file": str(path.relative_to(ROOT)),
            "q0_all_wrong": probe["q0_all_wrong"], "mean_shift": probe["mean_shift"]}


def agreement(expects: str, verdict: str) -> str:
    return "no forecast" if expects == "cannot tell" else "agrees" if expects == verdict else "misses"


def build() -> dict:
    regime = load_map()
    rows = []
    for point in regime["points"]:
        one = _pass1(point)
        wide = next((v for v in point["contrasts"] if v["k"] > 1 and v["subset"] == one["subset"]),
                    next((v for v in point["contrasts"] if v["k"] > 1), None))
        row = {"world": point["world"], "point": label(point), "source": point["source"], "seeds": point["seeds"],
               "measured": {"q0_all_wrong": point["measured"]["q0_all_wrong"]["mean"],
                            "mean_shift": (point["measured"].get("mean_shift") or {}).get("mean")},
               "verdict": {"pass1": {**one, "shows": direction(one)},
                           "pass_k": None if wide is None else {**wide, "shows": direction(wide)}},
               "committed": committed(point), "leave_one_out": leave_one_out(point, regime)}
        for kind in ("committed", "leave_one_out"):
            if row[kind] is not None:
                row[kind]["agreement"] = agreement(row[kind]["expects"], row["verdict"]["pass1"]["shows"])
        rows.append(row)
    return {"generated_by": "studies/forecast_vs_verdict.py", "map": "tagrpo/evaluation/regime_map.json",
            "rows": rows}


def _shown(v: dict | None) -> str:
    if v is None:
        return "-"
    where = "" if v["subset"] == "all" else f" ({v['subset']})"
    return f"{v['shows']}{where}: {100 * v['mean']:+.1f} [{100 * v['lo']:+.1f}, {100 * v['hi']:+.1f}]"


def _forecast(f: dict | None) -> str:
    return "-" if f is None else f"{f['expects']} ({f['agreement']})"


def markdown(data: dict) -> str:
    rows = [[r["world"], r["point"], r["seeds"], f"{100 * r['measured']['q0_all_wrong']:.0f}%",
             "-" if r["measured"]["mean_shift"] is None else f"{100 * r['measured']['mean_shift']:+.0f} pp",
             _forecast(r["committed"]), _forecast(r["leave_one_out"]), _shown(r["verdict"]["pass1"]),
             _shown(r["verdict"]["pass_k"])] for r in data["rows"]]
    tally = {k: sum(r["leave_one_out"]["agreement"] == k for r in data["rows"])
             for k in ("agrees", "misses", "no forecast")}
    return "\n".join([
        "# The probe's forecast against the verdict, every regime of both worlds", "",
        f"`python {data['generated_by']}`, from `{data['map']}`. TA-GRPO minus equal-sampling GRPO, pp [95% CI], "
        "direction shown at Holm's 5%. *The probe there*: test questions with q0 all wrong in 8 samples, the "
        "rephrasings' mean shift against q0 (from the study's base cells).", "",
        markdown_table(["world", "regime", "seeds", "q0 all wrong", "shift", "committed forecast (before the arms)",
                        "leave-one-out forecast (after the fact)", "pass@1", "pass@k"], rows), "",
        "*Committed*: `tagrpo probe` on the regime's base and training data, run and committed before its first arm "
        "trained (the third real study's regimes; the earlier studies predate the rule). *Leave one out*: the "
        "probe's placement rule on the regime's own numbers with its point removed from the map, computed after "
        "the fact. A forecast agrees when it expects the pass@1 direction the verdict shows; 'cannot tell' makes no "
        "forecast.", "",
        f"Leave one out over {len(rows)} regimes: {tally['agrees']} agree, {tally['misses']} miss, "
        f"{tally['no forecast']} cannot tell.", ""])


def main() -> int:
    data = build()
    OUT.with_suffix(".json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    OUT.with_suffix(".md").write_text(markdown(data), encoding="utf-8")
    print(markdown(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
