"""The real-model study's task (``tagrpo/experiments/real_task.py``): disjoint splits by problem, forms, control
plan."""

from __future__ import annotations

import pytest

from tagrpo.experiments import real_task


def test_splits_partition_the_problems_and_never_share_a_sum_pair():
    splits = {name: real_task.split(name) for name in real_task.SPLIT_SIZES}
    sets = {name: set(pairs) for name, pairs in splits.items()}
    assert {name: len(s) for name, s in sets.items()} == real_task.SPLIT_SIZES  # no repeats inside a split
    assert not (sets["train"] & sets["test"]) and not (sets["train"] & sets["validation"])
    assert not (sets["validation"] & sets["test"])
    assert set().union(*sets.values()) == {(a, b) for a in range(real_task.SIZE) for b in range(real_task.SIZE)}
    assert real_task.split("test") == splits["test"]  # fixed: the same problems every call


def test_training_rows_come_from_train_problems_only_in_every_form():
    test = set(real_task.split("test")) | set(real_task.split("validation"))
    rows = real_task.questions("train", "spelled", "main", seed=3)
    assert len(rows) == real_task.SPLIT_SIZES["train"]
    assert not {(r["a"], r["b"]) for r in rows} & test
    row = rows[0]
    assert row["answer"] == str(row["a"] + row["b"]) and len(row["rephrasings"]) == 3
    assert row["rephrasings"][0] == f"What is {row['a']}+{row['b']}?"  # symbolic first, q0's form left out
    assert real_task.word(row["a"]) in row["prompt"] and real_task.word(row["b"]) in row["prompt"]


def test_control_rephrasings_keep_q0s_form_with_other_names_and_items():
    row = real_task.questions("train", "spelled", "control", seed=1, count=1)[0]
    for text in row["rephrasings"]:
        assert real_task.word(row["a"]) in text and " more. How many " in text
        assert row["name"] not in text and row["item"] not in text
    assert len(set(row["rephrasings"])) == 3


def test_the_seed_orders_the_questions_not_the_problems():
    one, two = (real_task.questions("train", "symbolic", "main", seed=s) for s in (0, 1))
    assert [r["id"] for r in one] != [r["id"] for r in two]
    assert sorted(r["id"] for r in one) == sorted(r["id"] for r in two)


@pytest.mark.parametrize(("n", "text"), [(0, "zero"), (13, "thirteen"), (20, "twenty"), (38, "thirty-eight")])
def test_number_words(n, text):
    assert real_task.word(n) == text


def test_bad_names_list_the_valid_ones():
    with pytest.raises(ValueError, match="valid splits are train, validation, test"):
        real_task.split("dev")
    with pytest.raises(ValueError, match="valid forms are symbolic, words, narrative, spelled"):
        real_task.render(1, 2, "latex")
    with pytest.raises(ValueError, match="valid plans are main, control"):
        real_task.questions("train", "spelled", "other", seed=0)
