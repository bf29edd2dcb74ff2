"""The third real study's task (``tasks.real_regimes``) and what the framework gained for it: settings that are
regimes, cells shared by regimes, the runner-up rate, ``--settings``."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

from tagrpo.data import sum_problems
from tagrpo.experiments import judge
from tagrpo.experiments.declarations.real_v3 import STUDY
from tagrpo.experiments.run import parse
from tagrpo.experiments.tasks import real_regimes

Q0 = {"natural": "narrative", "model_made": "narrative", "reasoning": "narrative"}


def _args(tmp_path, *argv):
    return parse(STUDY, str(tmp_path), ["--work-dir", str(tmp_path / "cells"), *argv])


def test_held_out_problems_are_never_trained_and_a_problem_keeps_its_name_in_every_seed():
    train = {(r["a"], r["b"]) for r in sum_problems.problem_rows("train")}
    for split in ("validation", "test"):
        held = {(r["a"], r["b"]) for r in sum_problems.problem_rows(split)}
        assert not held & train and not {(b, a) for a, b in held} & train
    first, second = (sum_problems.problem_rows("train", seed=s) for s in (0, 1))
    assert [r["id"] for r in first] != [r["id"] for r in second]  # a seed orders the problems
    by_id = {r["id"]: r["forms"] for r in first}
    assert all(by_id[r["id"]] == r["forms"] for r in second)  # names and items are the problem's own
    row = first[0]
    assert row["forms"]["symbolic"] == f"What is {row['a']}+{row['b']}?" and row["answer"] == str(row["a"] + row["b"])
    with pytest.raises(ValueError, match="the split holds"):
        sum_problems.problem_rows("validation", count=1000)


def test_the_reasoning_regime_adds_three_numbers_in_every_form_and_splits_them_by_multiset():
    splits = {s: sum_problems.problem_rows(s, problem="sum_three") for s in ("train", "validation", "test")}
    assert {s: len(r) for s, r in splits.items()} == {"train": 165, "validation": 72, "test": 152}
    units = {s: {tuple(sorted((r["a"], r["b"], r["c"]))) for r in rows} for s, rows in splits.items()}
    assert {s: len(u) for s, u in units.items()} == {"train": 38, "validation": 16, "test": 34}
    assert not units["train"] & units["validation"] and not units["train"] & units["test"]
    assert not units["validation"] & units["test"] and (1, 2, 3) not in set().union(*units.values())  # the example
    # every order of a unit is in its split: 1 + 3 + 4 brings the five other orders with it
    assert {(r["a"], r["b"], r["c"]) for r in splits["validation"]} >= {(1, 3, 4), (1, 4, 3), (3, 1, 4), (3, 4, 1),
                                                                        (4, 1, 3), (4, 3, 1)}
    row = splits["validation"][0]  # worked by hand: 1 + 3 + 4 = 8
    assert (row["a"], row["b"], row["c"], row["answer"]) == (1, 3, 4, "8")
    assert row["forms"]["symbolic"] == "What is 1+3+4?" and row["forms"]["words"] == "What is one plus three plus four?"
    assert row["forms"]["spelled"] == ("Zoe has one stones and gets three more, then gets four more. How many stones "
                                       "does Zoe have?")
    every = [r for rows in splits.values() for r in rows]
    assert all(int(r["answer"]) == r["a"] + r["b"] + r["c"] <= 15 and min(r["a"], r["b"], r["c"]) >= 1
               and max(r["a"], r["b"], r["c"]) <= 9 for r in every)
    with pytest.raises(ValueError, match="valid splits are train, validation, test"):
        sum_problems.split_three("dev")


def test_the_reasoning_regimes_second_design_asks_two_steps_in_every_form_on_disjoint_problems():
    splits = {s: sum_problems.problem_rows(s, problem="sum_minus", top=10) for s in ("train", "validation", "test")}
    assert {s: len(r) for s, r in splits.items()} == {"train": 160, "validation": 60, "test": 140}
    units = {s: {(min(r["a"], r["b"]), max(r["a"], r["b"]), r["c"]) for r in rows} for s, rows in splits.items()}
    assert not units["train"] & units["validation"] and not units["train"] & units["test"]
    assert not units["validation"] & units["test"] and (1, 3, 2) not in set().union(*units.values())  # the example
    row = splits["validation"][0]  # worked by hand: 10 + 10 - 1 = 19
    assert (row["a"], row["b"], row["c"], row["answer"]) == (10, 10, 1, "19")
    assert row["forms"]["symbolic"] == "What is 10+10-1?"
    assert row["forms"]["words"] == "What is ten plus ten minus one?"
    assert row["forms"]["spelled"] == ("Leo has ten books and gets ten more, then gives one away. How many books "
                                       "does Leo have?")
    every = [r for rows in splits.values() for r in rows]
    assert all(int(r["answer"]) == r["a"] + r["b"] - r["c"] and 1 <= r["c"] <= r["b"] <= 10 for r in every)
    assert all(1 <= r["a"] <= 10 for r in every)
    spec = {"q0": "narrative", "seed": 0, "rephrasings": "rule", "problem": "sum_minus", "top": 10}
    rows = real_regimes.training_rows(spec, 3)
    assert all(r["id"].startswith("train-") and r["id"].count("-") == 3 for r in rows)
    assert all(" minus " in r["rephrasings"][1] for r in rows)
    with pytest.raises(ValueError, match="valid problems are sum, sum_minus, sum_minus_five, sum_three"):
        sum_problems.problem_rows("train", problem="product")


def test_the_reasoning_regimes_fifth_design_keeps_the_fourths_splits_and_asks_every_order_that_gives_away_less():
    sizes = sum_problems.MINUS_SMALL_SPLIT_SIZES
    fourth = {s: {(min(a, b), max(a, b), c) for a, b, c in sum_problems.split_minus(
        s, 9, sum_problems.MINUS_SMALL_CAP, sizes)} for s in ("train", "validation", "test")}
    assert {s: len(u) for s, u in fourth.items()} == {"train": 60, "validation": 24, "test": 40}
    splits = {s: sum_problems.problem_rows(s, problem="sum_minus_five") for s in ("train", "validation", "test")}
    assert {s: len(r) for s, r in splits.items()} == {"train": 34, "validation": 15, "test": 25}
    units = {s: {(min(r["a"], r["b"]), max(r["a"], r["b"]), r["c"]) for r in rows} for s, rows in splits.items()}
    assert {s: len(u) for s, u in units.items()} == {"train": 25, "validation": 10, "test": 19}
    assert all(units[s] <= fourth[s] for s in units)  # the piloted training problems are the fourth's, so no other
    every = [r for rows in splits.values() for r in rows]
    assert all(1 <= r["c"] <= r["b"] <= 5 and 1 <= r["a"] <= 5 and int(r["answer"]) == r["a"] + r["b"] - r["c"]
               for r in every)
    assert len(every) == len({(r["a"], r["b"], r["c"]) for r in every}) == 74  # 54 units, 20 of them in both orders
    asked = {(r["a"], r["b"], r["c"]) for r in splits["train"]}
    assert {(3, 5, 3), (5, 3, 3), (3, 3, 1)} <= asked and (5, 2, 3) not in asked  # worked by hand: 2 - 3 < 0 in between
    row = splits["train"][0]  # 3 + 3 - 1 = 5
    assert row["answer"] == "5" and row["forms"]["words"] == "What is three plus three minus one?"


def test_a_training_split_smaller_than_the_rows_asked_for_comes_again_in_other_orders():
    spec = {"q0": "narrative", "seed": 0, "rephrasings": "rule", "problem": "sum_minus_five"}
    rows = real_regimes.training_rows(spec, 128)
    first = sum_problems.problem_rows("train", problem="sum_minus_five", seed=0)
    assert [r["id"] for r in rows[:34]] == [r["id"] for r in first]  # the first epoch is the seed's order
    assert [r["id"] for r in rows[34:68]] != [r["id"] + "-e1" for r in first]  # the second another order ...
    assert sorted(r["id"] for r in rows[34:68]) == sorted(r["id"] + "-e1" for r in first)  # ... of the same problems
    assert len({r["id"] for r in rows}) == 128 and rows[-1]["id"].endswith("-e3")
    assert real_regimes.training_rows(spec, 5) == rows[:5]  # fewer rows than the split: the first epoch's
    assert real_regimes.training_rows(spec, None) == rows[:34]  # None: the split once (the probe's training set)


def test_the_sum_problems_keep_the_names_and_ids_their_cells_were_computed_with():
    row = sum_problems.problem_rows("train", 1, seed=0)[0]  # the natural regime's cells trained on these rows
    assert row["id"] == "train-6-19" and row["forms"]["narrative"] == ("Zoe has 6 shells and gets 19 more. How many "
                                                                       "shells does Zoe have?")


def test_rule_rows_rephrase_into_the_other_forms_and_model_rows_keep_what_the_file_has(tmp_path):
    spec = {"q0": "narrative", "seed": 3, "rephrasings": "rule"}
    rows = real_regimes.training_rows(spec, 5)
    problems = sum_problems.problem_rows("train", 5, seed=3)
    assert [r["prompt"] for r in rows] == [p["forms"]["narrative"] for p in problems]
    assert rows[0]["rephrasings"] == [problems[0]["forms"][f] for f in ("symbolic", "words", "spelled")]
    made = tmp_path / "rephrased.jsonl"
    made.write_text(json.dumps({"id": rows[0]["id"], "rephrasings": ["one", "two"]}) + "\n"
                    + json.dumps({"id": rows[1]["id"], "rephrasings": []}) + "\n")
    model = real_regimes.training_rows({**spec, "rephrasings": "model", "rephrased": str(made)}, 5)
    assert [r["rephrasings"] for r in model[:3]] == [["one", "two"], [], []]  # fewer than N: the trainer pads
    assert [r["prompt"] for r in model] == [r["prompt"] for r in rows]
    with pytest.raises(SystemExit, match="none.jsonl: not made yet.*real_study_v3_rephrase.py"):
        real_regimes.training_rows({**spec, "rephrasings": "model", "rephrased": str(tmp_path / "none.jsonl")}, 5)


def test_arms_without_rephrasings_are_one_cell_for_the_regimes_of_a_group(tmp_path):
    args = _args(tmp_path, "--settings", "natural,model_made")
    args.overrides = {}
    eq = [real_regimes.cell(STUDY, args, "arm", "test", r, 0, "equal_sampling", 1e-5, q0=Q0)
          for r in ("natural", "model_made")]
    assert eq[0] == eq[1] and eq[0][0]["knobs"] == ["natural", "model_made"] and "/narrative/" in eq[0][1]
    base = real_regimes.cell(STUDY, args, "base", "test", "natural", 0, q0=Q0)
    assert base[0]["knobs"] == ["natural", "model_made"] and base[1].endswith("seed0/narrative/base/result.jsonl")
    ta = [real_regimes.cell(STUDY, args, "arm", "test", r, 0, "ta_grpo", 1e-5, q0=Q0)
          for r in ("natural", "model_made")]
    assert ta[0][1] != ta[1][1] and [t[0]["knob"] for t in ta] == ["natural", "model_made"]
    assert ta[1][0]["rephrased"] == STUDY.task_options["rephrased"] and "rephrased" not in ta[0][0]
    second = real_regimes.cell(STUDY, args, "arm", "test", "natural", 0, "equal_sampling", 3e-5, q0=Q0,
                               name="equal_sampling@2nd")
    assert second[0]["name"] == "equal_sampling@2nd" and second[1] != eq[0][1]


def test_a_premise_outside_the_band_stops_the_study_naming_the_group():
    premise = {"spec": {"group": "narrative"}, "accuracy": {"symbolic": 0.5, "words": 0.2, "narrative": 0.3,
                                                            "spelled": 0.1}}
    by_group, q0 = real_regimes.q0_of(STUDY, [premise])
    assert by_group == {"narrative": premise} and q0 == Q0
    failing = {**premise, "accuracy": {**premise["accuracy"], "narrative": 0.08}}
    with pytest.raises(SystemExit, match="group narrative's premise failed.*8.0% right.*10-70%"):
        real_regimes.q0_of(STUDY, [failing])
    assert real_regimes.q0_of(STUDY, [failing], render_only=True) == ({"narrative": failing}, Q0)  # said, rendered
    lines = real_regimes.premise_section(STUDY, {"premise": {"narrative": failing}}, {}, {})
    assert "| narrative | narrative | 50.0 | 20.0 | 8.0 | 10.0 | **no: redesign** |" in "\n".join(lines)


def test_a_regime_of_an_unimplemented_problem_is_refused_and_left_out_of_a_render(tmp_path):
    groups = {**STUDY.task_options["groups"]}
    groups["minus_five"] = {**groups["minus_five"], "problem": "product"}
    study = dataclasses.replace(STUDY, task_options={**STUDY.task_options, "groups": groups})
    with pytest.raises(SystemExit, match="regime reasoning: declared"):
        real_regimes.prepare(study, _args(tmp_path, "--precision", "fp32"))
    args = _args(tmp_path, "--render-only")
    real_regimes.prepare(study, args)
    assert args.settings == ["natural", "model_made"]
    args = _args(tmp_path, "--precision", "fp32")
    real_regimes.prepare(STUDY, args)  # as declared, every regime's problem is implemented
    assert args.settings == list(STUDY.settings)
    with pytest.raises(SystemExit):
        _args(tmp_path, "--settings", "natural,nonsense")


def test_a_shared_cell_is_judged_in_each_regime_and_the_runner_up_is_the_second_best_rate():
    def cell(kind, arm=None, lr=None, knob=None, knobs=None, seed=0, counts=(1, 2), name=None):
        spec = {"kind": kind, "seed": seed, "split": "test", **({"arm": arm, "learning_rate": lr} if arm else {})}
        spec.update({k: v for k, v in (("knob", knob), ("knobs", knobs), ("name", name)) if v is not None})
        return {"spec": spec, "counts": list(counts), "samples": 2, "cell_wall_s": 1.0,
                "pass_at_k": {"1": lr or 0.0, "2": 0.0}}

    both = ["natural", "model_made"]
    runs, bases = judge.index(STUDY, [cell("base", knobs=both), cell("arm", "equal_sampling", 1e-5, knobs=both),
                                      cell("arm", "ta_grpo", 1e-5, knob="natural"),
                                      cell("arm", "equal_sampling", 3e-5, knobs=both, name="equal_sampling@2nd")])
    assert set(bases) == {("natural", 0), ("model_made", 0)}
    assert {k for k in runs if k[2] == "equal_sampling"} == {("natural", 0, "equal_sampling"),
                                                           ("model_made", 0, "equal_sampling")}
    assert ("natural", 0, "equal_sampling@2nd") in runs and ("model_made", 0, "ta_grpo") not in runs
    sweep = [cell("arm", "equal_sampling", lr, knobs=both, seed=s) for lr in (1e-5, 3e-5, 1e-4) for s in (100, 101)]
    rates = judge.choose(STUDY, judge.sweep_rows(sweep))  # the objective grows with the rate here
    assert rates["natural"] == rates["model_made"] == {"equal_sampling": 1e-4, "equal_sampling@2nd": 3e-5}


def test_a_render_before_every_group_has_its_premise_shows_the_groups_that_have_one(tmp_path, capsys):
    from tagrpo.experiments.run import execute

    argv = ["--render-only", "--out", str(tmp_path / "out")]
    args = _args(tmp_path, *argv)
    args.overrides = {}
    specs = real_regimes.premise_cells(STUDY, args)
    assert [s["group"] for s, _ in specs] == ["narrative", "minus_five", "three_sum"]  # a render: every group's
    computing = _args(tmp_path, "--precision", "fp32", "--settings", "reasoning")
    computing.overrides = {}
    assert [s["group"] for s, _ in real_regimes.premise_cells(STUDY, computing)] == ["minus_five"]
    spec, path = specs[0]
    (tmp_path / "cells").mkdir()
    os.makedirs(os.path.dirname(path))
    accuracy = {"symbolic": 0.5, "words": 0.2, "narrative": 0.3, "spelled": 0.1}
    with open(path, "w") as f:
        f.write(json.dumps({"spec": spec, "accuracy": accuracy, "cell_wall_s": 60.0}) + "\n")
    with pytest.raises(SystemExit, match="no cells of real_v3"):  # a premise alone: nothing to report yet
        execute(STUDY, _args(tmp_path, *argv), argv)
    assert "rendering without 2 premise cell(s) not yet computed" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no premise cell"):
        execute(STUDY, parse(STUDY, str(tmp_path), ["--work-dir", str(tmp_path / "none"), *argv]), argv)


def test_an_invocation_stopped_by_a_failed_premise_says_so_in_its_record(tmp_path):
    from tagrpo.data.jsonl import read_jsonl
    from tagrpo.experiments.run import execute
    from tagrpo.experiments.tables import ended

    argv = ["--settings", "reasoning", "--premise-only", "--precision", "fp32", "--work-dir", str(tmp_path / "cells")]
    args = parse(STUDY, str(tmp_path), argv)
    args.settings = ["reasoning"]
    args.overrides, _ = real_regimes.prepare(STUDY, args)
    ((spec, path),) = real_regimes.premise_cells(STUDY, args)
    os.makedirs(os.path.dirname(path))
    accuracy = {"symbolic": 0.1, "words": 0.05, "narrative": 0.05, "spelled": 0.1}
    with open(path, "w") as f:
        f.write(json.dumps({"spec": spec, "accuracy": accuracy, "cell_wall_s": 60.0}) + "\n")
    with pytest.raises(SystemExit, match="group minus_five's premise failed"):
        execute(STUDY, parse(STUDY, str(tmp_path), argv), argv)
    (line,) = read_jsonl(str(tmp_path / "cells" / "invocations.jsonl"))
    assert line["finished"] and ended(line) == "stopped: a premise failed"
    assert ended({"finished": False}).startswith("not finished") and ended({"finished": True}) == "finished"
    lines = "\n".join(real_regimes.premise_section(STUDY, {"premise": {"three_sum": {"accuracy": accuracy}}}, {}, {}))
    assert "| three_sum | narrative | 10.0 | 5.0 | 5.0 | 10.0 | **no: its premise failed three designs running" in lines
