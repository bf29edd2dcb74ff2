"""The real-model studies' task (``tagrpo/data/sum_problems.py``): disjoint splits by unordered pair (a sum and
its swap together) with the prompts' worked examples in none, the first study's ordered splits, forms, control
plan."""

from __future__ import annotations

import re

import pytest

from tagrpo.data import sum_problems
from tagrpo.data.prompts import TEMPLATES

ALL = {(a, b) for a in range(sum_problems.SIZE) for b in range(sum_problems.SIZE)}


def _pairs() -> dict[str, list[tuple[int, int]]]:
    return {name: sum_problems.split(name) for name in sum_problems.PAIR_SPLIT_SIZES}


def test_pair_splits_keep_a_sum_and_its_swap_together_and_partition_the_rest():
    splits = _pairs()
    sets = {name: set(problems) for name, problems in splits.items()}
    assert all(len(set(p)) == len(p) for p in splits.values())  # no repeats inside a split
    for name, problems in sets.items():
        assert {(b, a) for a, b in problems} == problems, name  # every swap in the same split
        assert len({tuple(sorted(p)) for p in problems}) == sum_problems.PAIR_SPLIT_SIZES[name]
    names = list(sets)
    for i, one in enumerate(names):
        for other in names[i + 1:]:
            assert not sets[one] & sets[other], (one, other)
    examples = {e for a, b in sum_problems.EXAMPLES for e in ((a, b), (b, a))}
    assert set().union(*sets.values()) == ALL - examples  # every problem but the worked examples
    assert {n: len(p) for n, p in splits.items()} == {"train": 197, "validation": 58, "test": 142}
    assert sum_problems.split("test") == splits["test"]  # fixed: the same problems every call


def test_every_worked_example_of_every_template_is_in_no_split():
    # threesum's worked example is a three-addend sum, kept out of that task's splits (tests/test_study_regimes.py)
    one_sum = [text for name, text in TEMPLATES.items() if name != "threesum"]
    shown = {(int(a), int(b)) for text in one_sum for a, b in re.findall(r"(\d+)\+(\d+)=", text)}
    assert shown  # the templates do show worked sums
    assert shown <= {p for a, b in sum_problems.EXAMPLES for p in ((a, b), (b, a))}
    held = set().union(*(set(p) for p in _pairs().values()))
    assert not {p for a, b in shown for p in ((a, b), (b, a))} & held
    rows = [r for name in sum_problems.PAIR_SPLIT_SIZES
            for r in sum_problems.questions(name, "spelled", "main", seed=0)]
    assert not {(r["a"], r["b"]) for r in rows} & shown


def test_the_first_studys_ordered_splits_are_kept_and_leak_as_the_issue_says():
    splits = {name: sum_problems.split(name, "ordered") for name in sum_problems.SPLIT_SIZES}
    sets = {name: set(pairs) for name, pairs in splits.items()}
    assert {name: len(s) for name, s in sets.items()} == sum_problems.SPLIT_SIZES  # no repeats inside a split
    assert not (sets["train"] & sets["test"]) and not (sets["train"] & sets["validation"])
    assert not (sets["validation"] & sets["test"])
    assert set().union(*sets.values()) == ALL
    assert sum_problems.split("test", "ordered") == splits["test"]
    assert sum((b, a) in sets["train"] for a, b in splits["test"]) == 67 and (3, 1) in sets["test"]  # issue 33


@pytest.mark.parametrize("scheme", sum_problems.SCHEMES)
def test_training_rows_come_from_train_problems_only_in_every_form(scheme):
    held = set(sum_problems.split("test", scheme)) | set(sum_problems.split("validation", scheme))
    rows = sum_problems.questions("train", "spelled", "main", seed=3, scheme=scheme)
    assert len(rows) == len(sum_problems.split("train", scheme))
    assert not {(r["a"], r["b"]) for r in rows} & held
    swapped = {(r["b"], r["a"]) for r in rows}
    assert bool(swapped & held) == (scheme == "ordered")  # only the old scheme trains on a held-out sum's swap
    row = rows[0]
    assert row["answer"] == str(row["a"] + row["b"]) and len(row["rephrasings"]) == 3
    assert row["rephrasings"][0] == f"What is {row['a']}+{row['b']}?"  # symbolic first, q0's form left out
    assert sum_problems.word(row["a"]) in row["prompt"] and sum_problems.word(row["b"]) in row["prompt"]


def test_control_rephrasings_keep_q0s_form_with_other_names_and_items():
    row = sum_problems.questions("train", "spelled", "control", seed=1, count=1)[0]
    for text in row["rephrasings"]:
        assert sum_problems.word(row["a"]) in text and " more. How many " in text
        assert row["name"] not in text and row["item"] not in text
    assert len(set(row["rephrasings"])) == 3


def test_the_seed_orders_the_questions_not_the_problems():
    one, two = (sum_problems.questions("train", "symbolic", "main", seed=s) for s in (0, 1))
    assert [r["id"] for r in one] != [r["id"] for r in two]
    assert sorted(r["id"] for r in one) == sorted(r["id"] for r in two)


@pytest.mark.parametrize(("n", "text"), [(0, "zero"), (13, "thirteen"), (20, "twenty"), (38, "thirty-eight")])
def test_number_words(n, text):
    assert sum_problems.word(n) == text


def test_more_questions_than_problems_go_on_in_a_second_epoch():
    first = sum_problems.questions("train", "spelled", "main", seed=4)
    rows = sum_problems.questions("train", "spelled", "main", seed=4, count=320)
    assert len(rows) == 320 and len({r["id"] for r in rows}) == 320
    assert rows[:len(first)] == first  # up to the split's size: the first epoch's rows
    again = rows[len(first):]
    assert all(r["id"].endswith("-e1") for r in again)
    assert {(r["a"], r["b"]) for r in again} <= {(r["a"], r["b"]) for r in first}
    assert [(r["a"], r["b"]) for r in again] != [(r["a"], r["b"]) for r in first][:len(again)]  # another order


def test_bad_names_list_the_valid_ones():
    with pytest.raises(ValueError, match="valid splits are train, validation, test"):
        sum_problems.split("dev")
    with pytest.raises(ValueError, match="valid schemes are pairs, ordered"):
        sum_problems.split("test", "shuffled")
    with pytest.raises(ValueError, match="valid forms are symbolic, words, narrative, spelled"):
        sum_problems.render(1, 2, "latex")
    with pytest.raises(ValueError, match="valid plans are main, control"):
        sum_problems.questions("train", "spelled", "other", seed=0)
