"""The regime map that ``tagrpo probe`` places a model and its data on, summarised from the current studies.

    .venv/bin/python tools/regime_map.py        # rewrites tagrpo/evaluation/regime_map.json

Each point is one measured setting: where it was measured (``world``: ``embedded`` for the regime world's toy bases,
``real`` for a pretrained LLM), its source file, model, task, q0's form, TA-GRPO's N and G, the seeds, what
``tagrpo probe`` would measure there (``measured``) and the primary contrasts TA-GRPO - equal-sampling GRPO
(``contrasts``: mean, 95% interval, seeds, Holm p, the study's verdict). Sources, the current studies only:

- ``studies/results/toy_regime_v2.json``: the embedded regime world, hard share h = 0, 0.6, 0.9, its shipped base;
- ``studies/results/toy_capacity.json``: the same world at h = 0.6 on a 4x larger base, 5 seeds;
- ``studies/results/real_study_v2.json``: SmolLM2-135M-Instruct on sums, q0 spelled numbers, 10 seeds;
- ``studies/results/real_study_v3.json`` when it exists: one point per regime (its verdicts' ``knob``) whose primary
  verdicts all have the declared 10 seeds; a regime still running, or without arms, is left out.

``measured`` is what ``tagrpo probe`` measured there. For a real point, the committed probe run on the regime's own
training data (``PROBES``: at its training sampling, ``q0_all_wrong`` and ``mean_shift`` as ``probe.json`` has them,
with 95% intervals over its questions), where one exists: measured the way a user's probe measures, so that a probe
of the very data lands on its point. Before 2026-12-07 real points, like embedded ones, were measured on their base
cells; on the three real regimes with both, the probe read 8-15 pp more questions with q0 all wrong (training
temperature 0.7 on training questions against evaluation sampling on test ones: 68 against 53%, 32 against 24, 37
against 24), so the probe of v2's own data landed 15 pp from v2's point. The base-cell numbers stay as
``measured_base``. Otherwise ``measured`` comes from each study's base cells (the ``results`` of the JSON, else the
committed cells beside it):
``q0_all_wrong``, the share of test questions whose q0 gets none of ``PROBE_N`` samples right (what the probe
reports as hidden + unreachable; from counts of more samples, the unbiased hypergeometric estimate
C(S - c, 8) / C(S, 8) per question), and ``mean_shift``, the rephrasing forms' mean pass rate minus q0's (the probe's
per-type shifts, averaged). The cells hold no per-question counts of the rephrasings, so the hidden share itself
(q0 all wrong and a rephrasing right) is not measured at any point; ``how`` says so. The sha256 of every source file
is stored; ``tests/test_regime_map.py`` rebuilds the map and fails when it differs from the committed one.
"""

from __future__ import annotations

import glob
import hashlib
import json
from math import comb
from pathlib import Path
from statistics import mean

ROOT = Path(__file__).resolve().parents[1]
RESULTS = "studies/results"
OUT = ROOT / "tagrpo" / "evaluation" / "regime_map.json"
CONTRAST = ("ta_grpo", "equal_sampling")  # the primary contrast the map reports: TA-GRPO - equal-sampling GRPO
PROBE_N = 8  # the probe's default samples per variant: q0_all_wrong is the share it would see at this n
FORMS = ("spelled", "symbolic", "words", "narrative")  # the sums task's forms (tagrpo/data/sum_problems.py)
TASKS = {"sum": "sums a + b", "sum_minus": "two-step sums a + b - c", "sum_minus_five": "two-step sums a + b - c",
         "sum_three": "two-step sums a + b + c"}
EMBEDDED = {"q0": "spelled", "rephrasings": ("symbolic", "narrative", "words")}  # the regime world's probe data
HOW = (f"from the base cells: share of test questions with q0 0 of {PROBE_N} (hidden + unreachable in the probe's "
       "terms; the cells hold no per-question counts of the rephrasings, so the hidden share alone is not known); "
       "mean shift: the rephrasing forms' mean pass rate minus q0's")


def _r(x):
    return None if x is None else float(f"{x:.6g}")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _load(name: str) -> dict:
    return json.loads((ROOT / RESULTS / name).read_text(encoding="utf-8"))


def _interval(values: list[float]) -> dict:
    from tagrpo.evaluation.stats import interval

    return {k: _r(v) if k != "n" else v for k, v in interval(values).items()}


def _base_cells(study: dict, cells_dir: str) -> tuple[list[dict], list[str]]:
    """The study's base cells on test questions: from its JSON's ``results``, else from the committed cells."""
    if isinstance(study.get("results"), list):
        return [c for c in study["results"] if c["spec"]["kind"] == "base" and c["spec"]["split"] == "test"], []
    paths = sorted(glob.glob(str(ROOT / RESULTS / cells_dir / "**" / "test" / "**" / "base" / "result.jsonl"),
                   recursive=True))
    cells = [json.loads(Path(p).read_text(encoding="utf-8").splitlines()[-1]) for p in paths]
    return [c for c in cells if c["spec"]["kind"] == "base"], [str(Path(p).relative_to(ROOT)) for p in paths]


def all_wrong_at_probe_n(counts: list[int], samples: int) -> float:
    """Expected share of questions with q0 0 of ``PROBE_N`` right, from counts of ``samples`` (hypergeometric)."""
    if samples < PROBE_N:
        raise ValueError(f"base cells with {samples} samples cannot say what {PROBE_N} samples would see")
    return mean(comb(samples - c, PROBE_N) / comb(samples, PROBE_N) for c in counts)


def measured(bases: list[dict], q0: str, rephrasings: tuple[str, ...] | None) -> dict | None:
    if not bases:
        return None
    shift, formed = None, [c for c in bases if c.get("forms")]  # some cells measured q0's form alone
    if rephrasings is not None and formed:
        shift = _interval([mean(c["forms"][f] for f in rephrasings) - c["forms"][q0] for c in formed])
    return {"q0_all_wrong": _interval([all_wrong_at_probe_n(c["counts"], c["samples"]) for c in bases]),
            "q0_zero_share": _interval([sum(x == 0 for x in c["counts"]) / len(c["counts"]) for c in bases]),
            "samples": bases[0]["samples"], "questions": len(bases[0]["counts"]), "probe_n": PROBE_N,
            "on": "test questions", "mean_shift": shift, "hidden": None,
            "how": HOW if shift is not None else HOW.split("; mean")[0]}


PROBES = {("real_study_v2.json", None): "real_study_v2_probe"}  # else real_study_v3_forecast/<regime>
PROBED_HOW = ("tagrpo probe on the regime's training data at its training sampling (probe.json; intervals over its "
              "questions): q0 all wrong is hidden + unreachable, the mean shift its rephrasings' pass rate minus q0's")


def probe_dir(source: str, regime) -> Path:
    return ROOT / RESULTS / PROBES.get((source, regime), f"real_study_v3_forecast/{regime}")


def probed(folder: Path) -> dict | None:
    """``measured`` from a committed probe run (``probe.json`` and its per-question ``counts.jsonl``), or None."""
    if not (folder / "probe.json").exists():
        return None
    from tagrpo.data.jsonl import read_jsonl
    from tagrpo.evaluation.probe_report import question_shifts

    probe = json.loads((folder / "probe.json").read_text(encoding="utf-8"))
    records = read_jsonl(str(folder / "counts.jsonl"))
    share = _interval([float(r["q0"] == 0) for r in records])
    shift = _interval(question_shifts(records))
    if abs(share["mean"] - probe["q0_all_wrong"]) > 1e-5 or abs(shift["mean"] - probe["mean_shift"]) > 1e-5:
        raise ValueError(f"{folder}: counts.jsonl does not give probe.json's numbers")
    return {"q0_all_wrong": share, "mean_shift": shift, "samples": probe["n"], "questions": len(records),
            "probe_n": probe["n"], "hidden": _r(probe["shares"]["hidden"]), "on": "training questions",
            "temperature": probe["config"].get("temperature"), "how": PROBED_HOW,
            "probe": str(folder.relative_to(ROOT))}


def contrasts(study: dict, knob) -> list[dict]:
    keys = ("subset", "k", "mean", "lo", "hi", "n", "p_holm")
    return [{**{k: _r(v[k]) if isinstance(v[k], float) else v[k] for k in keys}, "verdict": v["verdict"]}
            for v in study["verdicts"] if v["primary"] and (v["arm"], v["ref"]) == CONTRAST
            and v.get("versus") is None and v["knob"] == knob]


def complete(verdicts: list[dict], declaration: str) -> bool:
    """Whether a setting's primary contrasts all have the declared seeds: a study still running (or a regime never
    run) puts no point on the map."""
    from tagrpo.experiments.study import declared

    seeds = len(declared(declaration).seeds)
    return bool(verdicts) and all(v["n"] == seeds for v in verdicts)


def _point(world, source, model, task, q0, arm, study, knob, bases, rephrasings, **extra) -> dict:
    verdicts = contrasts(study, knob)
    base = measured(bases, q0, rephrasings)
    probe = probed(probe_dir(source, knob)) if world == "real" else None
    both = {"measured": probe, "measured_base": base} if probe is not None else {"measured": base}
    return {"world": world, "source": f"{RESULTS}/{source}", "model": model, "task": task, "q0_form": q0,
            **extra, "num_rephrasings": arm["num_rephrasings"], "num_generations": arm["num_generations"],
            "seeds": max(v["n"] for v in verdicts), **both, "contrasts": verdicts}


def _embedded_arm(cells_dir: str, knob: float) -> dict:
    pattern = str(ROOT / RESULTS / cells_dir / "**" / "test" / f"h{knob:g}" / "seed0" / "ta_grpo_lr*" / "result.jsonl")
    (path,) = glob.glob(pattern, recursive=True)
    return json.loads(Path(path).read_text(encoding="utf-8").splitlines()[-1])


def embedded_points() -> tuple[list[dict], dict]:
    task = "the embedded regime world (tagrpo/toy/regime.py): a + b - c in words, q0 spelled numbers"
    points, cells = [], {}
    for source, cells_dir, model in (
            ("toy_regime_v2.json", "toy_regime_v2_cells", "the regime world's shipped toy base"),
            ("toy_capacity.json", "toy_capacity_cells", "a 4x larger toy base of the regime world")):
        study = _load(source)
        bases, paths = _base_cells(study, cells_dir)
        cells[f"{RESULTS}/{cells_dir}"] = hashlib.sha256("".join(_sha256(ROOT / p) for p in paths).encode()).hexdigest()
        for knob in sorted({v["knob"] for v in study["verdicts"] if v["primary"]}):
            mine = [c for c in bases if c["spec"]["knob"] == knob]
            points.append(_point("embedded", source, model, task, EMBEDDED["q0"], _embedded_arm(cells_dir, knob),
                                 study, knob, mine, EMBEDDED["rephrasings"], hard_share=knob,
                                 toy_base="toy_regime" if cells_dir == "toy_regime_v2_cells" else None))
    return points, cells


def rescued(study: dict, knob) -> dict | None:
    """Per arm of the contrast, the share of questions per step whose all-wrong q0 group its pools (TA-GRPO) or
    its larger groups (equal-sampling GRPO) rescued during training, from the JSON's cells; None without them."""
    cells = [c for c in study.get("results") or [] if c["spec"]["kind"] == "arm" and c["spec"]["split"] == "test"
             and c["spec"].get("knob") == knob]
    out = {}
    for arm in CONTRAST:
        key = "tagrpo/reference/rescued/from_zero" if arm == "equal_sampling" else "tagrpo/rescued/from_zero"
        runs = [mean(s[key] for s in c["steps"]) for c in cells if c["spec"].get("arm") == arm and c.get("steps")]
        out[arm] = _interval(runs) if len(runs) > 1 else None
    return out if all(out.values()) else None


def real_points() -> list[dict]:
    points = []
    v2 = _load("real_study_v2.json")
    bases, _ = _base_cells(v2, "real_study_v2_cells")
    points.append(_point("real", "real_study_v2.json", "SmolLM2-135M-Instruct", "sums a + b", v2["q0"],
                         v2["arms"][CONTRAST[0]], v2, None, bases, tuple(f for f in FORMS if f != v2["q0"]),
                         regime="q0 spelled numbers, rule-made rephrasings", rescued_from_all_wrong=rescued(v2, None)))
    if not (ROOT / RESULTS / "real_study_v3.json").exists():
        return points
    v3 = _load("real_study_v3.json")
    bases, _ = _base_cells(v3, "real_study_v3_cells")
    regimes, groups = v3["task_options"]["regimes"], v3["task_options"]["groups"]
    for regime in [r for r in regimes if complete(contrasts(v3, r), "real_v3")]:
        group = groups[regimes[regime]["group"]]
        q0 = v3["q0"][regime] if isinstance(v3.get("q0"), dict) else group["q0"]
        mine = [c for c in bases if regime in c["spec"].get("knobs", [c["spec"].get("knob")])]
        rule = regimes[regime]["rephrasings"] == "rule"  # model-made rephrasings are not among the base's forms
        task = TASKS[group["problem"]]
        points.append(_point("real", "real_study_v3.json", "SmolLM2-135M-Instruct", task, q0, v3["arms"][CONTRAST[0]],
                             v3, regime, mine, tuple(f for f in FORMS if f != q0) if rule else None,
                             regime=f"regime {regime}: q0 {q0}, {regimes[regime]['rephrasings']}-made rephrasings",
                             rescued_from_all_wrong=rescued(v3, regime)))
    return points


def build() -> dict:
    embedded, cells = embedded_points()
    real = real_points()
    names = ["toy_regime_v2.json", "toy_capacity.json", "real_study_v2.json", "real_study_v3.json"]
    sources = {f"{RESULTS}/{n}": _sha256(ROOT / RESULTS / n) for n in names if (ROOT / RESULTS / n).exists()}
    sources.update({f"{p['measured']['probe']}/{f}": _sha256(ROOT / p["measured"]["probe"] / f)
                    for p in real if "probe" in p["measured"] for f in ("probe.json", "counts.jsonl")})
    return {"generated_by": "tools/regime_map.py", "sources": sources, "base_cells_sha256": cells,
            "contrast": "TA-GRPO - equal-sampling GRPO (the same rollouts per question)", "points": [*real, *embedded]}


def main() -> int:
    OUT.write_text(json.dumps(build(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
