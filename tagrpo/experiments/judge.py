"""The verdict engine of every study (``tagrpo.experiments.study``): the sweep's choices, the paired contrasts with
their intervals, Holm over the primary family, TOST, the cost change across two studies, issue 32's goal.

Cells are indexed ``runs[(setting, seed, arm)]`` and ``bases[(setting, seed)]``; a cell's settings are its spec's
``knobs`` where it serves several, else its ``knob`` (None where the study has no knob). Each holds ``counts`` (Q,)
of right answers among ``samples`` draws on the seed's held-out q0 questions. Verdicts as in
``tagrpo.evaluation.verdicts``; intervals and tests from ``tagrpo.evaluation.stats``.
"""

from __future__ import annotations

import math
from statistics import mean

import numpy as np

from tagrpo.common.modes import check_mode
from tagrpo.core import pass_at_k
from tagrpo.demo.metrics import hard_mask
from tagrpo.evaluation.stats import equivalence, holm, interval, t_test, welch
from tagrpo.evaluation.verdicts import ALPHA, holm_and_verdicts, null_of
from tagrpo.experiments.study import RUNNER_UP, SUBSETS, Contrast, Study


def subset_pass(counts, samples: int, base_counts, subset: str, k: int) -> float:
    """Mean unbiased pass@k over the questions of ``subset`` (all, hard, rest); NaN when it holds none."""
    check_mode("subset", subset, SUBSETS)
    counts = np.asarray(counts)  # (Q,)
    keep = np.ones(len(counts), bool) if subset == "all" else hard_mask(base_counts) == (subset == "hard")  # (Q,)
    if not keep.any():
        return math.nan
    return float(pass_at_k(np.full(int(keep.sum()), samples), counts[keep], k).mean())


def objective(cell: dict) -> float:
    """The sweep's objective, the same for every arm: validation pass@1 + pass@n on q0 (n: the cell's samples)."""
    return cell["pass_at_k"]["1"] + cell["pass_at_k"][str(cell["samples"])]


def knobs(spec: dict) -> list:
    """The settings a cell serves: its spec's ``knobs`` (a cell shared by settings), else its ``knob``."""
    return spec.get("knobs") or [spec.get("knob")]


def sweep_rows(cells) -> list[dict]:
    """One row per sweep cell and setting it serves: arm (``base`` for the base model), setting, rate, seed,
    objective, validation pass@1, the cell's own seconds."""
    return [{"arm": c["spec"].get("arm", "base"), "knob": knob,
             "learning_rate": c["spec"].get("learning_rate", 0.0), "seed": c["spec"]["seed"],
             "objective": objective(c), "pass1": c["pass_at_k"]["1"], "cell_wall_s": c["cell_wall_s"]}
            for c in cells if c["spec"]["kind"] != "premise" for knob in knobs(c["spec"])]


def choose(study: Study, rows: list[dict]) -> dict:
    """Per setting, each swept arm's rate (the best mean objective over the sweep seeds, ties to the smaller rate)
    and each chosen arm of ``study.choices``: the option with the best mean objective at its own best rate (ties to
    the later name), its rate under the choice's name and the option under ``<choice>_arm``; each arm of
    ``study.runner_up`` its second-best rate under ``<arm>@2nd``."""
    scores: dict[tuple, dict[float, list[float]]] = {}
    for r in (r for r in rows if r["arm"] != "base"):
        scores.setdefault((r["knob"], r["arm"]), {}).setdefault(r["learning_rate"], []).append(r["objective"])
    best: dict = {}
    second: dict = {}
    for (setting, arm), by_lr in scores.items():
        ranked = sorted(by_lr, key=lambda x: (np.mean(by_lr[x]), -x), reverse=True)
        best.setdefault(setting, {})[arm] = (ranked[0], float(np.mean(by_lr[ranked[0]])))
        if arm in study.runner_up and len(ranked) > 1:
            second.setdefault(setting, {})[arm + RUNNER_UP] = ranked[1]
    out = {}
    for setting, arms in best.items():
        out[setting] = {arm: lr for arm, (lr, _) in arms.items()} | second.get(setting, {})
        for choice, options in study.choices.items():
            if ran := [a for a in options if a in arms]:
                name = max(ran, key=lambda a: (arms[a][1], a))
                out[setting].update({choice: arms[name][0], f"{choice}_arm": name})
    return out


def index(study: Study, cells, rates: dict | None = None) -> tuple[dict, dict]:
    """``(runs, bases)`` of the study cells; a fixed arm's cells are filed as ``arm@rate``, a runner-up's under its
    spec's ``name`` (``arm@2nd``), and the option a choice took at a setting (``rates``) also under the choice's
    name."""
    fixed = {f.arm: f for f in study.fixed}
    runs, bases = {}, {}
    for c in cells:
        s = c["spec"]
        for knob in knobs(s):
            if s["kind"] == "base":
                bases[(knob, s["seed"])] = c
            elif s["kind"] == "arm":
                arm = fixed[s["arm"]].name(s["learning_rate"]) if s["arm"] in fixed else s.get("name", s["arm"])
                runs[(knob, s["seed"], arm)] = c
    for (setting, seed, arm), c in list(runs.items()):
        for choice in study.choices:
            if arm == (rates or {}).get(setting, {}).get(f"{choice}_arm"):
                runs[(setting, seed, choice)] = c
    return runs, bases


def value(runs: dict, bases: dict, setting, seed: int, arm: str, subset: str, k: int) -> float:
    """One arm's (or the base's) pass@k on a subset for one seed, the subset defined by that seed's base."""
    run = bases[(setting, seed)] if arm == "base" else runs[(setting, seed, arm)]
    return subset_pass(run["counts"], run["samples"], bases[(setting, seed)]["counts"], subset, k)


def paired(runs: dict, bases: dict, c: Contrast, k: int) -> list[float]:
    """Per-seed ``arm - ref`` for the seeds where both cells and the base exist (NaN subsets dropped)."""
    seeds = sorted({s for (h, s, a) in runs if h == c.setting and a == c.arm})
    out = []
    for s in seeds:
        if (c.ref != "base" and (c.setting, s, c.ref) not in runs) or (c.setting, s) not in bases:
            continue
        x = (value(runs, bases, c.setting, s, c.arm, c.subset, k)
             - value(runs, bases, c.setting, s, c.ref, c.subset, k))
        if not math.isnan(x):
            out.append(x)
    return out


def verdicts(study: Study, runs: dict, bases: dict, k_max: int, versus: dict | None = None) -> list[dict]:
    """Every declared contrast: paired values, interval, p (against 0, or ``-margin`` for ``matches``), Holm over
    the primary family, the verdict; with ``study.tost`` an undecided primary contrast is "no difference" when its
    TOST at ``study.margin`` (Holm over the family's TOST p-values) rejects, and every primary row carries the TOST's
    own interval (``tost_lo``, ``tost_hi``: 90%, before Holm). ``versus``: ``{name: (runs, bases)}``
    of the studies a cost change is judged against (Welch on the two studies' per-seed differences)."""
    rows = []
    for c, family in study.contrasts():
        k = c.k or k_max
        row = {"knob": c.setting, "arm": c.arm, "ref": c.ref, "subset": c.subset, "k": k, "kind": c.kind,
               "versus": c.versus, "family": family, "primary": family == "primary"}
        here = paired(runs, bases, c, k)
        if c.versus is not None:
            there = paired(*versus[c.versus], c, k) if versus and c.versus in versus else []
            rows.append({**row, **welch(here, there), "values": here, "versus_values": there,
                         "versus_interval": interval(there)})
        else:
            rows.append({**row, **interval(here), "values": here, "p": t_test(here, null_of(c.kind, study.margin))})
    rows = holm_and_verdicts(rows, study.margin)
    if study.tost:
        primary = [r for r in rows if r["primary"]]
        for r, p in zip(primary, holm([equivalence(r["values"], study.margin)["p"] for r in primary]), strict=True):
            r["p_equivalence_holm"] = p
            tost = interval(r["values"], 1 - 2 * ALPHA)  # the two one-sided tests' interval, before Holm
            r["tost_lo"], r["tost_hi"] = tost["lo"], tost["hi"]
            if r["verdict"] == "inconclusive" and p < ALPHA:
                r["verdict"] = "no difference"
    return rows


def kept_gain(runs: dict, bases: dict, setting, arm: str, k: int, share: float) -> list[float]:
    """Per seed with every cell: ``(arm - eq) - share * (ta - eq)`` on the hard subset at pass@k, where eq is
    equal-sampling GRPO and ta TA-GRPO (above 0: the arm keeps more than ``share`` of TA-GRPO's gain)."""
    out = []
    for seed in sorted(s for h, s, a in runs if h == setting and a == arm):
        if all((setting, seed, a) in runs for a in ("equal_sampling", "ta_grpo")) and (setting, seed) in bases:
            x, eq, ta = (value(runs, bases, setting, seed, name, "hard", k)
                         for name in (arm, "equal_sampling", "ta_grpo"))
            if not any(math.isnan(v) for v in (x, eq, ta)):
                out.append((x - eq) - share * (ta - eq))
    return out


def goal_checks(study: Study, runs: dict, bases: dict, k: int) -> list[dict]:
    """``study.goal`` per candidate and setting. Each check: knob, arm, criterion, ci (an interval), met, and
    ``shortfall``: by how much (a fraction) the 95% bound misses the criterion (<= 0 where it does not; for TOST the
    larger of the bounds' distances beyond the margin)."""
    goal, checks = study.goal, []
    for arm in goal.candidates:
        for knob in study.settings:
            def values(subset, kk, ref, knob=knob, arm=arm):
                return paired(runs, bases, Contrast(arm, ref, kk, subset, knob), kk)

            if knob == 0:
                refs = [r for r in ("equal_sampling", "grpo_long") if any(x[2] == r and x[0] == knob for x in runs)]
                if not refs:
                    continue
                # the better reference: the one whose pass@1 is highest, so the smallest mean (arm - ref)
                best = min(refs, key=lambda r: mean(values("all", 1, r)) if values("all", 1, r) else math.inf)
                diffs = values("all", 1, best)
                eq = {**interval(diffs), "p_tost": equivalence(diffs, study.margin)["p"]}
                eq["equivalent"] = bool(eq["p_tost"] < ALPHA)
                short = max(eq["hi"] - study.margin, -study.margin - eq["lo"])
                checks.append({"knob": knob, "arm": arm, "criterion": ("pass@1 about equal to", best), "ci": eq,
                               "met": eq["equivalent"], "shortfall": short})
                continue
            rest = interval(values("rest", 1, "equal_sampling"))
            keep = interval(kept_gain(runs, bases, knob, arm, k, goal.keep_gain))
            checks.append({"knob": knob, "arm": arm, "criterion": ("rest pass@1 minus equal-sampling",), "ci": rest,
                           "met": not math.isnan(rest["lo"]) and rest["lo"] > -goal.non_inferiority,
                           "shortfall": -goal.non_inferiority - rest["lo"]})
            checks.append({"knob": knob, "arm": arm,
                           "criterion": (f"hard pass@{k}: gain minus {100 * goal.keep_gain:.0f}% of TA-GRPO's",),
                           "ci": keep, "met": not math.isnan(keep["lo"]) and keep["lo"] > 0, "shortfall": -keep["lo"]})
    return checks
