"""The studies' tables (markdown), for ``tagrpo.experiments.render``: verdicts, issue 32's goal, every arm, per-form
accuracy, seed by seed, the sweep, the invocations. Percentages throughout; a cell without seeds shows "-"."""

from __future__ import annotations

import math
from statistics import mean

from tagrpo.demo.report import label, pct
from tagrpo.evaluation.stats import interval
from tagrpo.evaluation.tables import markdown_table
from tagrpo.experiments import judge
from tagrpo.experiments.study import Study


def p_text(p: float) -> str:
    """A p-value as a table shows it: two significant digits, "-" where undefined."""
    return "-" if p is None or math.isnan(p) else f"{p:.2g}"


def _ci(values) -> str:
    values = [v for v in values if v is not None and not math.isnan(v)]
    return pct(interval(values)) if values else "-"


def _shown(ci: dict) -> str:
    return "-" if math.isnan(ci["mean"]) else pct(ci, sign=True)


def contrast_text(r: dict) -> str:
    text = f"{label(r['arm'])} - {label(r['ref'])}"
    return f"({text}) here minus in {r['versus']} (Welch)" if r.get("versus") else text


def no_cells(row: dict, study: Study) -> str:
    """Why a verdict has no cells: its setting ended by design (``study.ended``), or its cells are still to come."""
    why = study.ended.get(row["knob"])
    return f"none: the {study.knob} ended ({why})" if why else "no cells yet"


def _tost(row: dict) -> str:
    """The equivalence test's Holm p and its own 90% interval (the one that must lie inside the margin), or blank."""
    if "p_equivalence_holm" not in row:
        return ""
    shown = "" if math.isnan(row["tost_lo"]) else f", [{100 * row['tost_lo']:.1f}, {100 * row['tost_hi']:.1f}]"
    return p_text(row["p_equivalence_holm"]) + shown


def verdict_table(rows: list[dict], study: Study) -> str:
    """One row per verdict: setting (where the study has a knob), contrast, questions, metric, mean [95% CI],
    seeds, half-width, p, Holm p, the TOST's Holm p and 90% interval (where declared), verdict."""
    knob = study.settings != (None,)
    out = []
    for r in rows:
        half = (r["hi"] - r["lo"]) / 2 if not math.isnan(r["lo"]) else math.nan
        row = [contrast_text(r), r["subset"], f"pass@{r['k']}", _shown(r), r["n"],
               "-" if math.isnan(half) else f"{100 * half:.1f}", p_text(r["p"]),
               p_text(r["p_holm"]) if "p_holm" in r else ""]
        if study.tost:
            row.append(_tost(r))
        verdict = f"**{r['verdict']}**" if r["n"] else no_cells(r, study)
        out.append(([study.show(r["knob"])] if knob else []) + row + [verdict])
    headers = ["contrast", "questions", "metric", "mean, pp [95% CI]", "seeds", "half-width, pp", "p", "p (Holm)"]
    if study.tost:
        headers.append(f"TOST +-{100 * study.margin:g} pp: p (Holm), 90% CI")
    return markdown_table(([study.knob] if knob else []) + headers + ["verdict"], out)


def _status(ci: dict, met: bool, declared: int) -> str:
    """met; not met once the declared seeds are in; else undecided so far."""
    return "met" if met else ("not met" if ci["n"] >= declared else f"undecided ({ci['n']} of {declared} seeds)")


def _criterion(check: dict) -> str:
    text, *ref = check["criterion"]
    return f"{text} {label(ref[0])}" if ref else text


def goal_rows(checks: list[dict], declared: int) -> list[list]:
    """The goal's table rows; a criterion not met is "not met" once ``declared`` seeds are in, "undecided" before."""
    return [[f"{c['knob']:g}", label(c["arm"]), _criterion(c), _shown(c["ci"]), c["ci"]["n"],
             _status(c["ci"], c["met"], declared)] for c in checks]


def closest(checks: list[dict]) -> list[list]:
    """Per candidate, its criteria met and its largest shortfall (pp, and where): the candidate with the smallest
    largest shortfall came closest. A summary of the declared criteria, ranked after the runs."""
    rows = []
    for arm in dict.fromkeys(c["arm"] for c in checks):
        own = [c for c in checks if c["arm"] == arm and not math.isnan(c["shortfall"])]
        if not own:
            continue
        worst = max(own, key=lambda c: c["shortfall"])
        rows.append([label(arm), f"{sum(c['met'] for c in own)} of {len(own)}",
                     f"{100 * max(worst['shortfall'], 0):.1f}", f"{_criterion(worst)} at {worst['knob']:g}"])
    return sorted(rows, key=lambda r: float(r[2]))


def rescue_share(run: dict, which: str) -> float:
    """Mean over generation steps of the share of questions rescued from an all-wrong (zero) or all-right (one) q0
    group: by the pool, or for equal-sampling GRPO by all its samples against its first G (the reference keys,
    ``TAGRPOConfig.reference_group_size``)."""
    key = "tagrpo/reference/rescued/from_" + which
    if not any(key in s for s in run["steps"]):
        key = "tagrpo/rescued/from_" + which
    return mean(s[key] for s in run["steps"])


def arm_table(runs: dict, bases: dict, setting, order: tuple[str, ...], extra: list) -> str:
    """The base and every arm of ``order`` with cells at ``setting``: cost, pass@k overall and per subset (mean over
    the seeds whose base cell exists, with a t interval), clipping, the rescue split and the task's ``extra``
    columns ``(header, the cell's number, format)``."""
    k = next(b["samples"] for (h, _), b in bases.items() if h == setting)
    base = [b for (h, _), b in sorted(bases.items(), key=lambda x: x[0][1]) if h == setting]

    def sub(pairs, subset, kk):
        return _ci([judge.subset_pass(c["counts"], c["samples"], bases[(setting, s)]["counts"], subset, kk)
                    for s, c in pairs])

    pairs = [(s, b) for (h, s), b in sorted(bases.items(), key=lambda x: x[0][1]) if h == setting]
    rows = [["base model", len(base), "-", 0, 0, 0, "-", sub(pairs, "all", 1), sub(pairs, "all", k),
             sub(pairs, "hard", 1), sub(pairs, "hard", k), sub(pairs, "rest", 1), "-", "-", "-",
             *["-" for _ in extra]]]
    for arm in (a for a in order if any(h == setting and x == a for h, _, x in runs)):
        pairs = [(s, c) for (h, s, a), c in sorted(runs.items(), key=lambda x: x[0][1])
                 if h == setting and a == arm and (h, s) in bases]
        cs = [c for _, c in pairs]
        if not cs:
            continue
        rows.append([
            label(arm), len(cs), f"{cs[0]['spec']['learning_rate']:g}", f"{mean(c['rollouts'] for c in cs):,.0f}",
            f"{mean(c['optimizer_updates'] for c in cs):,.0f}", f"{mean(c['completion_tokens'] for c in cs):,.0f}",
            f"{mean(c['wall_s'] for c in cs):.0f}", sub(pairs, "all", 1), sub(pairs, "all", k), sub(pairs, "hard", 1),
            sub(pairs, "hard", k), sub(pairs, "rest", 1),
            f"{100 * mean(max(c['clip_fraction'], default=0) for c in cs):.1f}",
            f"{100 * mean(rescue_share(c, 'zero') for c in cs):.1f}",
            f"{100 * mean(rescue_share(c, 'one') for c in cs):.1f}",
            *[_mean(fn, fmt, cs) for _, fn, fmt in extra]])
    return markdown_table(
        ["arm", "seeds", "learning rate", "rollouts", "optimizer updates", "completion tokens", "train wall s",
         "pass@1 %", f"pass@{k} %", "hard pass@1 %", f"hard pass@{k} %", "rest pass@1 %", "clip fraction % (max)",
         "rescued from all-wrong %", "rescued from all-right %", *[h for h, _, _ in extra]], rows)


def _mean(fn, fmt: str, cells: list[dict]) -> str:
    values = [v for c in cells if (v := fn(c)) is not None and not math.isnan(v)]
    return fmt.format(mean(values)) if values else "-"


def forms_table(study: Study, runs: dict, bases: dict, forms: tuple[str, ...]) -> str:
    """Per setting, the base's and every arm's pass@1 in every form (cells that measured them), or "" if none."""
    rows = []
    for setting in study.settings:
        groups = [("base model", [b for (h, _), b in sorted(bases.items(), key=lambda x: x[0][1]) if h == setting])]
        groups += [(label(a), [c for (h, _, x), c in sorted(runs.items(), key=lambda x: x[0][1])
                               if h == setting and x == a]) for a in dict.fromkeys(a for _, _, a in runs)]
        for name, cs in groups:
            fs = [c["forms"] for c in cs if c.get("forms")]
            if fs:
                where = [] if setting is None else [study.show(setting)]
                rows.append([*where, name, len(fs), *[_ci([f.get(x) for f in fs]) for x in forms]])
    where = [] if study.settings == (None,) else [study.knob]
    return markdown_table([*where, "arm", "seeds", *forms], rows) if rows else ""


def seed_table(study: Study, runs: dict, bases: dict) -> str:
    """Per setting, the base's and each primary arm's pass@1 on q0 (all questions, %) seed by seed, a trained arm's
    with its completion tokens in thousands: ``92.0 (59k)``; "-" where the cell is still to come."""
    rows = []
    for setting in study.settings:
        arms = dict.fromkeys(a for c in study.primary if c.setting == setting for a in (c.arm, c.ref) if a != "base")
        where = [] if setting is None else [study.show(setting)]
        if any((setting, s) in bases for s in study.seeds):
            rows.append([*where, "base model", *[f"{100 * b['pass_at_k']['1']:.1f}" if (b := bases.get((setting, s)))
                                                 else "-" for s in study.seeds]])
        for arm in arms:
            cells = [runs.get((setting, s, arm)) for s in study.seeds]
            if any(cells):
                rows.append([*where, label(arm), *[
                    f"{100 * c['pass_at_k']['1']:.1f} ({c['completion_tokens'] / 1000:.0f}k)" if c else "-"
                    for c in cells]])
    head = [] if study.settings == (None,) else [study.knob]
    return markdown_table([*head, "arm", *[f"seed {s}" for s in study.seeds]], rows) if rows else ""


def sweep_table(rows: list[dict], rates: dict, setting, study: Study, samples: int) -> str:
    """Every arm x rate at one setting: seeds, mean objective and validation pass@1, the chosen rate marked (and a
    choice's option where it was taken)."""
    out = []
    chosen = rates.get(setting, {})
    here = [r for r in rows if r["knob"] == setting]
    for arm in sorted(dict.fromkeys(r["arm"] for r in here), key=lambda a: a != "base"):
        for lr in sorted({r["learning_rate"] for r in here if r["arm"] == arm}):
            rs = [r for r in here if r["arm"] == arm and r["learning_rate"] == lr]
            mark = "**chosen**" if arm != "base" and chosen.get(arm) == lr else ""
            for choice in study.choices:
                if chosen.get(f"{choice}_arm") == arm and chosen.get(choice) == lr:
                    mark += f" ({choice})"
            out.append([label(arm), "-" if arm == "base" else f"{lr:g}", len(rs),
                        f"{100 * mean(r['objective'] for r in rs):.1f}", f"{100 * mean(r['pass1'] for r in rs):.1f}",
                        mark])
    return markdown_table(["arm", "learning rate", "seeds", f"objective (pass@1 + pass@{samples}), %",
                           "validation pass@1 %", ""], out)


def ended(invocation: dict) -> str:
    """How an invocation ended: finished, stopped by design (``ended``: a failed premise), or not finished (stopped
    or still running: its wall time runs to its last cell)."""
    how = invocation.get("ended") or ("finished" if invocation.get("finished", True) else
                                      "not finished (stopped or running); wall to its last cell")
    return how + (f" ({invocation['source']})" if "source" in invocation else "")


def _cpu(machine: dict) -> str:
    """The CPU's name, and "no native bf16" where the invocation recorded so (its bf16 cells were emulated)."""
    return machine.get("cpu", "not recorded") + (", no native bf16" if machine.get("native_bf16") is False else "")


def invocation_table(invocations: list[dict]) -> str:
    rows = [[i + 1, inv.get("started", "-")[:19], "`" + " ".join(inv["argv"]) + "`", inv["workers"],
             f"{inv['wall_s'] / 60:.1f}", inv.get("cells_run", "-"),
             f"{inv['cell_s'] / 60:.1f}" if "cell_s" in inv else "-", _cpu(inv.get("machine", {})), ended(inv)]
            for i, inv in enumerate(invocations)]
    return markdown_table(["invocation", "started (UTC)", "arguments", "workers", "wall min", "cells computed",
                           "their cell min", "CPU", "ended"], rows)


def wall_sentence(invocations: list[dict]) -> str:
    if not invocations:
        return "No invocation recorded yet, so no wall time"
    stopped = sum(not i.get("finished", True) for i in invocations)
    return (f"Wall time {sum(i['wall_s'] for i in invocations) / 60:.1f} min over {len(invocations)} invocation(s)"
            + (f", {stopped} of them not finished (stopped or still running) and counted to their last cell" if stopped
               else ""))
