"""The probe's forecast against each study's verdict, for every regime of both worlds (issue 45, item 2).

    .venv/bin/python studies/forecast_vs_verdict.py      # writes studies/results/forecast_vs_verdict.{json,md}

One row per point of the shipped regime map (``tagrpo/evaluation/regime_map.json``, ``tools/regime_map.py``): what
``tagrpo probe`` measures there (q0 all wrong in 8 samples, the rephrasings' mean shift: for a real point its
committed probe run on the regime's training data, for an embedded one its base cells on test questions) and what
TA-GRPO did against equal-sampling GRPO there (pass@1 and the study's largest k): raised or lowered (shown at Holm's
5%), equivalent (the study's two one-sided tests), identical on every seed or undecided. Forecasts:

- *committed*: the conclusion ``tagrpo probe`` gave on the regime's base and training data, committed before the
  regime's verdict (``FORECASTS``; the third real study's regimes only, the earlier studies predate the probe's
  current rule). The natural regime's was first committed under the probe's first rule before any arm trained
  (``first_rule/``, shown beside it) and re-run under the current rule while its sweep ran;
- *leave one out*: the placement rule (``tagrpo.evaluation.probe_report.place``: a shipped toy base on the embedded
  points, any other model on the real ones) applied to the regime's own measurement on the map without its point
  and without the points that share its base cells (the regimes of one group): what the rule would have said had
  the regime never been run. Computed after the fact from the map's numbers, not from a probe run;
- for every real regime, the ``tagrpo probe`` run that measured its point (the committed forecast's run; for the
  second real study, run on its task after the fact: ``studies/real_study_v3_forecast.py --regime v2``), when its
  file exists: its own advice when it ran, the advice its numbers (and its question count) get on the current map,
  which holds the regime's own point (measured by this very run: it lands there), and its measurement placed by
  leave one out. The advice on the current map is what ``tagrpo probe`` tells a user of that model and data today.

A forecast *agrees* when the verdict shows what it expects at pass@1 on the same questions; it *misses* when the
verdict shows otherwise; an undecided verdict leaves it *not confirmed*; "cannot tell" makes *no forecast*; a
verdict on another subset than the forecast's (the 4x base's pass@1 is on the rest) is *another subset*. Only
agrees and misses count.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tagrpo.evaluation.probe_report import MIN_QUESTIONS, _pass1, direction, label, load_map, place
from tagrpo.evaluation.tables import markdown_table

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "studies" / "results" / "forecast_vs_verdict"
FORECASTS = "studies/results/real_study_v3_forecast/{regime}/probe.json"  # committed before each v3 regime's verdict
V2_PROBE = "studies/results/real_study_v2_probe/probe.json"  # after the fact: real_study_v3_forecast.py --regime v2
EXPECT = {"raise": "raised", "lower": "lowered", "make no clear difference to": "no difference"}
FIRST_RULE = {"reproduced": "raised", "refuted": "lowered", "inconclusive": "no difference"}
KINDS = ("agrees", "misses", "not confirmed", "no forecast", "another subset")


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


def first_rule(path: Path) -> str | None:
    """What the probe's first rule expected at pass@1 (its report had no one-line conclusion: the nearest embedded
    point's pass@1 verdict, quoted in its recommendation)."""
    if not path.exists():
        return None
    lines = json.loads(path.read_text(encoding="utf-8"))["recommendation"]
    found = [m.group(1) for line in lines if (m := re.search(r"pass@1 was (\w+)", line))]
    return FIRST_RULE[found[0]] if found else None


def same_base(a: dict, b: dict) -> bool:
    """Whether two points share their base cells (the regimes of one group), whatever their probes measured."""
    def base(p: dict) -> dict:
        return p.get("measured_base", p["measured"])["q0_all_wrong"]

    return a["source"] == b["source"] and base(a) == base(b)


def leave_one_out(point: dict, regime: dict, measured: dict | None = None, keep: bool = False) -> dict:
    """The rule's placement of ``point``'s measurement (or ``measured``: a probe's ``q0_all_wrong``, ``mean_shift``)
    on the map without it and the points that share its base (``keep``: on the whole map, as the probe itself)."""
    m = point["measured"]
    shift = None if m.get("mean_shift") is None else m["mean_shift"]["mean"]
    s = {"q0_all_wrong": m["q0_all_wrong"]["mean"], "mean_shift": shift, "questions": MIN_QUESTIONS, **(measured or {})}
    others = {**regime, "points": [p for p in regime["points"] if keep or not same_base(p, point)]}
    if s["mean_shift"] is None:  # no measured shift here: compare on the share alone, as the rule does for such a point
        s["mean_shift"] = 0.0
        others["points"] = [{**p, "measured": {**p["measured"], "mean_shift": None}} for p in others["points"]]
    where = place(s, others, toy=point.get("toy_base") == "toy_regime")
    if not where["near"]:
        return {"expects": "cannot tell", "subset": None, "nearest": where["point"], "why": where["reason"]}
    one = _pass1(others["points"][where["index"]])
    expects = shows(one) if shows(one) in ("raised", "lowered") else "no difference"  # as the conclusion words it
    return {"expects": expects, "subset": one["subset"], "nearest": where["point"], "why": None}


def shows(v: dict) -> str:
    """What a contrast shows: raised or lowered at Holm's 5%, equivalent (two one-sided tests), identical (the same
    number on every seed: both arms at the ceiling, where no test is run) or undecided."""
    if v["lo"] == v["mean"] == v["hi"] == 0:
        return "identical"
    d = direction(v)
    return d if d != "no difference" else "equivalent" if v.get("verdict") == "no difference" else "undecided"


def committed(point: dict) -> dict | None:
    name = knob(point)
    path = None if name is None else ROOT / FORECASTS.format(regime=name)
    if path is None or not path.exists():
        return None
    probe = json.loads(path.read_text(encoding="utf-8"))
    first = first_rule(path.parent / "first_rule" / "probe.json")
    return {"expects": expected(probe["conclusion"]), "subset": "all", "file": str(path.relative_to(ROOT)),
            "first_rule": None if first is None else {"expects": first, "subset": "all"},
            "q0_all_wrong": probe["q0_all_wrong"], "mean_shift": probe["mean_shift"]}


def probed(point: dict, regime: dict) -> dict | None:
    """The probe run that measured a real point (None: an embedded point, or no file): its own advice, the advice
    its numbers get on the current map, and its numbers left one out."""
    name = knob(point)
    file = V2_PROBE if point["source"].endswith("real_study_v2.json") else None if name is None else \
        FORECASTS.format(regime=name)
    if file is None or not (ROOT / file).exists():
        return None
    probe = json.loads((ROOT / file).read_text(encoding="utf-8"))
    numbers = {"q0_all_wrong": probe["q0_all_wrong"], "mean_shift": probe["mean_shift"],
               "questions": probe["questions"]}
    now = leave_one_out(point, regime, numbers, keep=True)
    return {"advice": expected(probe["conclusion"]), "file": file, **numbers,
            "advice_now": {**now, "subset": now["subset"] or "all"},
            "leave_one_out": leave_one_out(point, regime, numbers)}


def agreement(forecast: dict, verdict: dict) -> str:
    expects, got = forecast["expects"], verdict["shows"]
    if expects == "cannot tell":
        return "no forecast"
    if forecast.get("subset", "all") != verdict["subset"]:
        return "another subset"
    if got == "undecided":
        return "not confirmed"
    return "agrees" if {expects, got} <= {"no difference", "equivalent", "identical"} or expects == got else "misses"


def build() -> dict:
    regime = load_map()
    rows = []
    for point in regime["points"]:
        one = _pass1(point)
        if one is None:
            raise ValueError(f"{label(point)}: no pass@1 contrast in the map")
        wide = next((v for v in point["contrasts"] if v["k"] > 1 and v["subset"] == one["subset"]),
                    next((v for v in point["contrasts"] if v["k"] > 1), None))  # shown with its subset
        row = {"world": point["world"], "point": label(point), "source": point["source"], "seeds": point["seeds"],
               "measured": {"q0_all_wrong": point["measured"]["q0_all_wrong"]["mean"],
                            "mean_shift": (point["measured"].get("mean_shift") or {}).get("mean")},
               "verdict": {"pass1": {**one, "shows": shows(one)},
                           "pass_k": None if wide is None else {**wide, "shows": shows(wide)}},
               "committed": committed(point), "leave_one_out": leave_one_out(point, regime),
               "probed": probed(point, regime)}
        for forecast in (row["committed"], (row["committed"] or {}).get("first_rule"), row["leave_one_out"],
                         *((row["probed"] or {}).get(k) for k in ("advice_now", "leave_one_out"))):
            if forecast is not None:
                forecast["agreement"] = agreement(forecast, row["verdict"]["pass1"])
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


def _committed(f: dict | None) -> str:
    if f is None:
        return "-"
    first = "" if f["first_rule"] is None else f"; first rule, before the arms: {_forecast(f['first_rule'])}"
    return _forecast(f) + first


def _probed(p: dict | None) -> str:
    if p is None:
        return "-"
    return (f"{100 * p['q0_all_wrong']:.0f}%, {100 * p['mean_shift']:+.0f} pp, {p['questions']} questions: advice "
            f"{p['advice']} when run, {_forecast(p['advice_now'])} on the current map; left one out "
            f"{_forecast(p['leave_one_out'])}")


def tally(forecasts: list[dict | None]) -> str:
    """``2 regimes: 1 agrees, 1 no forecast`` over the forecasts made (None: none for that regime)."""
    got = [f["agreement"] for f in forecasts if f is not None]
    if not got:
        return "none with a verdict yet"
    regimes = "1 regime" if len(got) == 1 else f"{len(got)} regimes"
    return f"{regimes}: " + ", ".join(f"{got.count(k)} {k}" for k in KINDS if got.count(k))


def markdown(data: dict) -> str:
    rows = [[r["world"], r["point"], r["seeds"], f"{100 * r['measured']['q0_all_wrong']:.0f}%",
             "-" if r["measured"]["mean_shift"] is None else f"{100 * r['measured']['mean_shift']:+.0f} pp",
             _committed(r["committed"]), _forecast(r["leave_one_out"]), _probed(r["probed"]),
             _shown(r["verdict"]["pass1"]), _shown(r["verdict"]["pass_k"])] for r in data["rows"]]
    now = [(r["probed"] or {}).get("advice_now") for r in data["rows"]]
    return "\n".join([
        "# The probe's forecast against the verdict, every regime of both worlds", "",
        f"`python {data['generated_by']}`, from `{data['map']}`. TA-GRPO minus equal-sampling GRPO, pp [95% CI]: "
        "raised or lowered at Holm's 5%, equivalent by the study's two one-sided tests, identical when every seed gave "
        "both arms the same number, else undecided. *The probe "
        "there*: questions with q0 all wrong in 8 samples, the rephrasings' mean shift against q0: a real regime's "
        "from `tagrpo probe` on its training data (its committed run), an embedded one's from the study's base cells "
        "on test questions.", "",
        markdown_table(["world", "regime", "seeds", "q0 all wrong", "shift", "committed forecast (before the verdict)",
                        "leave-one-out forecast (after the fact)", "the regime's probe run, then and now",
                        "pass@1", "pass@k"], rows), "",
        "*Committed*: `tagrpo probe` on the regime's base and training data, committed before its verdict (the third "
        "real study's regimes; the earlier studies predate the rule). *Leave one out*: the probe's placement rule on "
        "the regime's own numbers with its point, and the points sharing its base, removed from the map; computed "
        "after the fact. *The regime's probe run* (the committed one; v2's after the fact): its advice when it ran "
        "(on the map of then), the advice its numbers get on the current map (which holds the regime's own point, "
        "measured by that run: what `tagrpo probe` tells a user there today), and left one out. A forecast "
        "agrees when the verdict shows what it expects at pass@1 on the same questions, misses when it shows "
        "otherwise; an undecided verdict does not confirm it; 'cannot tell' makes no forecast.", "",
        f"Leave one out, {tally([r['leave_one_out'] for r in data['rows']])}. Committed, "
        f"{tally([r['committed'] for r in data['rows']])}. The probe's first rule, committed before the arms, "
        f"{tally([(r['committed'] or {}).get('first_rule') for r in data['rows']])}. The regimes' probe runs on "
        f"the current map (each lands on its own point), {tally(now)}.", ""])


def main() -> int:
    data = build()
    OUT.with_suffix(".json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    OUT.with_suffix(".md").write_text(markdown(data), encoding="utf-8")
    print(markdown(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
