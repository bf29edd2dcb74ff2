"""SmolLM2-135M-Instruct in regimes (``declarations/real_v3.py``): a setting is a regime, where q0 and the rephrasings
come from.

A regime (``task_options["regimes"]``) names its *group* and its rephrasings: ``rule`` (the other surface forms of
``tagrpo.data.sum_problems``, exact) or ``model`` (made by ``tagrpo rephrase``, read from the file of
``task_options["rephrased"]``). A group (``task_options["groups"]``) fixes what every arm without rephrasings sees:
the problem, q0's form, the settings (``smollm_sums.SETTINGS``' keys). Regimes of one group share the premise, the
base and every arm without rephrasings (equal-sampling GRPO): one cell, filed under each regime (spec ``knobs``).

Problems are split by unordered pair as in the second study (``sum_problems.split``, scheme ``pairs``); unlike it, a
problem's name and item are the problem's own (seeded by it), not a seed's draw, so that a rephrasing made once per
training question serves every seed. A seed orders the training problems. Cells are computed as the sums task
computes them (``smollm_sums.compute``: bf16 only, evaluation on q0's form and in every form on test problems).
"""

from __future__ import annotations

import os

from tagrpo.data import sum_problems
from tagrpo.data.sum_problems import PROBLEMS, problem_rows, texts
from tagrpo.experiments.tasks import sums
from tagrpo.toy import smollm_sums

FORMS = sum_problems.FORMS
PREMISE_SEED = 100


def read_rephrased(path: str) -> dict[str, list[str]]:
    """``tagrpo rephrase``'s output: question id -> its accepted rephrasings."""
    from tagrpo.data.jsonl import read_jsonl

    if not os.path.exists(path):
        raise SystemExit(f"{path}: not made yet; the model-made regime trains on it: run "
                         "studies/real_study_v3_rephrase.py first")
    return {r["id"]: list(r.get("rephrasings") or []) for r in read_jsonl(path)}


def training_rows(spec: dict, count: int | None) -> list[dict]:
    """``count`` training rows of the cell's regime in its seed's order: q0 in the group's form, the rephrasings by
    rule (the other forms) or by model (``spec["rephrased"]``; a question with fewer than N keeps what it has). A
    split smaller than ``count`` goes on with its problems again in another seeded order (ids ``...-e1``, ``-e2``:
    a second epoch), as ``sum_problems.questions`` does; ``None``: every problem once."""
    q0, problem, top = spec["q0"], spec.get("problem", "sum"), spec.get("top")
    rows = problem_rows("train", None, spec["seed"], problem, top)
    count = len(rows) if count is None else count
    order, epoch = [(r, "") for r in rows[:count]], 1
    while len(order) < count:
        again = problem_rows("train", None, f"{spec['seed']}-epoch{epoch}", problem, top)
        order += [(r, f"-e{epoch}") for r in again[:count - len(order)]]
        epoch += 1
    made = read_rephrased(spec["rephrased"]) if spec.get("rephrasings") == "model" else None
    return [{"id": r["id"] + tag, "prompt": r["forms"][q0], "answer": r["answer"],
             "rephrasings": made.get(r["id"], []) if made is not None else
             [r["forms"][f] for f in FORMS if f != q0]} for r, tag in order]


def prepare(study, args) -> tuple[dict, None]:
    """As the sums task's (bf16 only); a regime whose problem is declared but not implemented is refused (rendering
    leaves it out)."""
    regimes, groups = study.task_options["regimes"], study.task_options["groups"]
    todo = [r for r in args.settings if groups[regimes[r]["group"]]["problem"] not in PROBLEMS]
    if todo and not args.render_only:
        raise SystemExit(f"{study.name}: regime {', '.join(todo)}: declared, its problem not implemented yet "
                         f"(implemented: {', '.join(PROBLEMS)}); run with --settings naming the others")
    args.settings = [r for r in args.settings if r not in todo]
    return sums.prepare(study, args)


def _base_spec(study, args, kind: str, split: str, seed: int, group: str) -> dict:
    g = study.task_options["groups"][group]
    setting = {k: v for k, v in smollm_sums.SETTINGS[g["setting"]].items() if k != "workers"}
    top = {"top": g["top"]} if "top" in g else {}  # a problem's size, where the group sets one
    return {"kind": kind, "split": split, "seed": seed, "device": args.device, "study": study.task_options["tag"],
            "group": group, "problem": g["problem"], **top, "setting": setting, **args.overrides}


def cell(study, args, kind: str, split: str, regime, seed: int, arm: str | None = None, lr: float | None = None,
         forms: bool = False, q0=None, name: str | None = None) -> tuple[dict, str]:
    """A cell's spec and path. An arm with rephrasings belongs to its regime (``knob``); the base and an arm
    without them to the regime's group, serving each of its regimes (``knobs``)."""
    regimes = study.task_options["regimes"]
    group = regimes[regime]["group"]
    spec = _base_spec(study, args, kind, split, seed, group)
    spec.update(q0=q0[regime], samples=args.samples)
    owner = group
    if kind == "arm" and study.arms[arm]["num_rephrasings"] > 0:
        owner = regime
        spec.update(knob=regime, rephrasings=regimes[regime]["rephrasings"])
        if regimes[regime]["rephrasings"] == "model":
            spec["rephrased"] = study.task_options["rephrased"]
    else:
        spec["knobs"] = [r for r in study.settings if regimes[r]["group"] == group]
    folder = spec["kind"]
    if kind == "arm":
        spec.update(arm=arm, arm_config=study.arms[arm], learning_rate=lr, steps=args.steps)
        folder = f"{arm}_lr{lr:g}"
        if name is not None:
            spec["name"] = name
    return spec, os.path.join(args.work_dir, split, f"seed{seed}", owner, folder, "result.jsonl")


def premise_cells(study, args) -> list[tuple[dict, str]]:
    """One per group of the regimes run: the base's accuracy in every form on validation problems. A render also
    reads every other declared group's (a design whose premise failed and that no regime uses any more)."""
    groups = dict.fromkeys(study.task_options["regimes"][r]["group"] for r in args.settings)
    if args.render_only:
        groups.update(dict.fromkeys(study.task_options["groups"]))
    return [(_base_spec(study, args, "premise", "validation", PREMISE_SEED, g),
             os.path.join(args.work_dir, "validation", f"seed{PREMISE_SEED}", g, "premise", "result.jsonl"))
            for g in groups]


def q0_of(study, premises: list[dict], render_only: bool = False) -> tuple[dict, dict]:
    """``({group: premise}, {regime: q0's form})``. A group whose q0 the base gets right outside
    ``sums.MIXED_BAND`` on validation stops the study: the regime is redesigned before any arm runs (a render
    says so and goes on: the group has no other cells)."""
    groups, by_group = study.task_options["groups"], {p["spec"]["group"]: p for p in premises}
    low, high = sums.MIXED_BAND
    for group, premise in by_group.items():
        accuracy = premise["accuracy"][groups[group]["q0"]]
        if not low <= accuracy <= high:
            failed = (f"{study.name}: group {group}'s premise failed: the base gets q0 ({groups[group]['q0']}) "
                      f"{100 * accuracy:.1f}% right on validation, outside {100 * low:.0f}-{100 * high:.0f}%; "
                      "redesign its regimes before any arm runs")
            if not render_only:
                raise SystemExit(failed)
            print(failed, flush=True)
    return by_group, {r: groups[d["group"]]["q0"] for r, d in study.task_options["regimes"].items()}


def compute(spec: dict, out: str) -> dict:
    """One cell, as ``smollm_sums.compute`` computes it, on this task's questions and training rows."""
    setting = spec["setting"]
    held = problem_rows(spec["split"], spec.get("questions"), problem=spec["problem"], top=spec.get("top"))
    rows = training_rows(spec, setting["questions"] * spec["steps"]) if spec["kind"] == "arm" else None
    return smollm_sums.compute(spec, out, held=held, train_rows=rows, render=texts)


arm_columns = sums.arm_columns


def describe(study, args, data: dict) -> str:
    pairs = "/".join(str(v) for v in sum_problems.PAIR_SPLIT_SIZES.values())
    minus = "/".join(str(v) for v in sum_problems.MINUS_SPLIT_SIZES.values())
    five = "/".join(str(len(problem_rows(k, problem="sum_minus_five"))) for k in ("train", "validation", "test"))
    three = "/".join(str(v) for v in sum_problems.THREE_SPLIT_SIZES.values())
    problems = {"sum": f"a + b, operands 0..{sum_problems.SIZE - 1}, split by unordered pair (train / validation / "
                       f"test pairs {pairs})",
                "sum_minus": "a + b - c told as a story, a, b in 1..{top}, c at most b, split by {{a, b}} with c "
                             f"(train / validation / test {minus})",
                "sum_minus_five": f"a + b - c told as a story, a, b in 1..{sum_problems.MINUS_FIVE_TOP}, c at most b, "
                                  f"each {{{{a, b}}}} with c in every order that gives away at most what it got "
                                  f"(train / validation / test problems {five})",
                "sum_three": f"a + b + c told as a story, each in 1..{sum_problems.THREE_TOP}, at most "
                             f"{sum_problems.THREE_CAP} in all, split by {{{{a, b, c}}}} in every order (train / "
                             f"validation / test units {three})"}
    regimes = "; ".join(f"{r}: group {d['group']}, rephrasings by {d['rephrasings']}"
                        for r, d in study.task_options["regimes"].items())
    groups = "; ".join(f"{g}: {problems[d['problem']].format(top=d.get('top'))}, q0 {d['q0']}, settings "
                       f"{d['setting']}" for g, d in study.task_options["groups"].items())
    return (f"Task: SmolLM2-135M-Instruct; each problem's name and item its own. Regimes: {regimes}. Groups: {groups}. "
            f"{args.steps} generation steps; {args.samples} samples per test question on q0's form, "
            f"{smollm_sums.FORM_SAMPLES} in every other form.")


def premise_section(study, data: dict, bases: dict, versus: dict) -> list[str]:
    from tagrpo.evaluation.tables import markdown_table

    if not data["premise"]:
        return []
    groups = study.task_options["groups"]
    low, high = sums.MIXED_BAND
    rows = [[g, groups[g]["q0"], *(f"{100 * p['accuracy'][f]:.1f}" for f in FORMS),
             "yes" if low <= p["accuracy"][groups[g]["q0"]] <= high else
             f"**no: {groups[g].get('ended', 'redesign')}**"]
            for g, p in data["premise"].items()]
    return ["## Premise (base model, validation problems, % right per form)", "",
            markdown_table(["group", "q0", *FORMS, "q0 in the band"], rows), "",
            f"Each group's q0 must lie in {100 * low:.0f}-{100 * high:.0f}% before any of its arms runs.", ""]
