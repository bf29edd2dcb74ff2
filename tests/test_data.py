"""Loading, validating and fitting rephrased-question data (tagrpo.data)."""

from __future__ import annotations

import copy
import json
import pickle

import datasets
import pytest

from tagrpo.data import (
    SHORT_RULES,
    DataProblem,
    InvalidDataError,
    ensure_valid,
    fit_rephrasings,
    load_questions,
    load_rows,
    validate_rows,
)

ROWS = [
    {
        "id": "q1",
        "prompt": "What is 1+1?",
        "answer": "2",
        "rephrasings": ["Add 1 and 1.", "1 plus 1?"],
        "lvl": 1,
    },
    {"id": "q2", "prompt": "What is 2*3?", "answer": "6", "rephrasings": ["Multiply 2 by 3."], "lvl": 2},
    {"id": "q3", "prompt": "What is 9-4?", "answer": "5", "rephrasings": [], "lvl": 1},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def write_lines(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


def problems_of(source, **kwargs):
    with pytest.raises(InvalidDataError) as info:
        load_questions(source, **kwargs)
    return info.value


# ---------------------------------------------------------------- loading


def _jsonl(tmp_path):
    return write_jsonl(tmp_path / "data.jsonl", ROWS)


def _json_list(tmp_path):
    path = tmp_path / "data.json"
    path.write_text(json.dumps(ROWS, indent=2))
    return path


def _json_lines(tmp_path):
    return write_jsonl(tmp_path / "data.json", ROWS)


def _parquet(tmp_path):
    path = tmp_path / "data.parquet"
    datasets.Dataset.from_list(ROWS).to_parquet(str(path))
    return path


def _dataset(tmp_path):
    return datasets.Dataset.from_list(ROWS)


def _dataset_dict(tmp_path):
    return datasets.DatasetDict({"train": datasets.Dataset.from_list(ROWS)})


def _saved_dataset(tmp_path):
    datasets.Dataset.from_list(ROWS).save_to_disk(str(tmp_path / "saved"))
    return tmp_path / "saved"


def _saved_dataset_dict(tmp_path):
    _dataset_dict(tmp_path).save_to_disk(str(tmp_path / "saved_dict"))
    return str(tmp_path / "saved_dict")


SOURCES = [
    _jsonl,
    _json_list,
    _json_lines,
    _parquet,
    _dataset,
    _dataset_dict,
    _saved_dataset,
    _saved_dataset_dict,
]


@pytest.mark.parametrize("make_source", SOURCES, ids=lambda f: f.__name__.strip("_"))
def test_every_source_loads_to_the_same_canonical_rows(tmp_path, make_source):
    assert load_questions(make_source(tmp_path)) == ROWS


def test_load_rows_returns_raw_rows_and_display_name(tmp_path):
    path = _jsonl(tmp_path)
    rows, name = load_rows(path)
    assert rows == ROWS and name == str(path)
    rows, name = load_rows(_dataset_dict(tmp_path), split="train")
    assert rows == ROWS and name == "DatasetDict[train]"


def test_jsonl_skips_blank_lines_and_reports_line_numbers(tmp_path):
    lines = ["", json.dumps(ROWS[0]), "   ", json.dumps(ROWS[1]), json.dumps({**ROWS[2], "answer": None})]
    path = write_lines(tmp_path / "data.jsonl", lines)
    err = problems_of(path)
    assert [(p.row, p.field) for p in err.problems] == [(5, "answer")]
    assert f"{path}, row 5, field 'answer': missing answer" in str(err)
    rows, _ = load_rows(write_lines(tmp_path / "ok.jsonl", lines[:4]))
    assert rows == ROWS[:2]


def test_jsonl_lines_end_only_at_newline(tmp_path):
    row = {**ROWS[0], "prompt": "First line\u2028still the same line\x85and this"}
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps(row, ensure_ascii=False) + "\r\n" + json.dumps(ROWS[1]) + "\r\n", encoding="utf-8")
    assert load_questions(path) == [row, ROWS[1]]


def test_missing_split_lists_the_available_ones(tmp_path):
    with pytest.raises(ValueError, match="split='test' is not valid; expected one of: 'train'"):
        load_rows(_dataset_dict(tmp_path), split="test")


@pytest.mark.parametrize("name", ["nope.jsonl", "nope.json", "nope.parquet"])
def test_missing_file_raises_file_not_found_with_the_path(tmp_path, name):
    with pytest.raises(FileNotFoundError, match=name):
        load_rows(str(tmp_path / name))


def test_unsupported_file_type_is_rejected(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("id,prompt\n")
    with pytest.raises(ValueError, match="unsupported file type '.csv'"):
        load_rows(path)


# ---------------------------------------------------------------- field mapping


def test_field_mapping_renames_onto_canonical_names(tmp_path):
    raw = [
        {
            "qid": r["id"],
            "problem": r["prompt"],
            "solution": r["answer"],
            "variants": r["rephrasings"],
            "lvl": r["lvl"],
        }
        for r in ROWS
    ]
    path = write_jsonl(tmp_path / "data.jsonl", raw)
    rows = load_questions(
        path, id_field="qid", prompt_field="problem", answer_field="solution", rephrasings_field="variants"
    )
    assert rows == ROWS


def test_missing_rephrasings_column_gives_empty_lists(tmp_path):
    raw = [{k: v for k, v in r.items() if k != "rephrasings"} for r in ROWS]
    expected = [{**r, "rephrasings": []} for r in raw]
    assert load_questions(write_jsonl(tmp_path / "data.jsonl", raw)) == expected
    assert load_questions(datasets.Dataset.from_list(raw)) == expected


def test_problems_name_the_source_field(tmp_path):
    raw = [{"id": 1, "problem": "Q?", "answer": "1", "variants": ["ok", 7]}]
    err = problems_of(write_jsonl(tmp_path / "d.jsonl", raw), prompt_field="problem", rephrasings_field="variants")
    assert "row 1, field 'variants': variants[1] is not a string (got int)" in str(err)


def test_mapping_onto_an_existing_canonical_column_is_reported(tmp_path):
    raw = [{"id": 1, "problem": "Q?", "prompt": [{"role": "user"}], "answer": "1"}]
    err = problems_of(write_jsonl(tmp_path / "d.jsonl", raw), prompt_field="problem")
    assert "row 1, field 'prompt': clashes with prompt_field='problem'" in str(err)


# ---------------------------------------------------------------- malformed data, one kind at a time


def test_missing_answer(tmp_path):
    rows = [ROWS[0], ROWS[1], {k: v for k, v in ROWS[2].items() if k != "answer"}]
    err = problems_of(write_jsonl(tmp_path / "data.jsonl", rows))
    assert str(err.problems[0]) == f"{tmp_path / 'data.jsonl'}, row 3, field 'answer': missing answer"
    assert "data.jsonl" in str(err) and "row 3" in str(err) and "field 'answer'" in str(err)


def test_empty_answer_string(tmp_path):
    err = problems_of([{**ROWS[0], "answer": ""}])
    assert "<rows>, row 1, field 'answer': empty answer" in str(err)


def test_empty_question(tmp_path):
    rows = [ROWS[0], {**ROWS[1], "prompt": "   "}]
    err = problems_of(write_jsonl(tmp_path / "data.jsonl", rows))
    assert "data.jsonl, row 2, field 'prompt': empty question" in str(err)


def test_non_string_question(tmp_path):
    err = problems_of(write_jsonl(tmp_path / "data.jsonl", [{**ROWS[0], "prompt": 42}]))
    assert "row 1, field 'prompt': question must be a string, got int" in str(err)


def test_rephrasings_not_a_list(tmp_path):
    rows = [{**ROWS[0], "rephrasings": "Add 1 and 1."}]
    err = problems_of(write_jsonl(tmp_path / "data.jsonl", rows))
    expected = "data.jsonl, row 1, field 'rephrasings': rephrasings must be a list of strings, got str"
    assert expected in str(err)


def test_non_string_and_empty_rephrasing_elements(tmp_path):
    rows = [ROWS[0], {**ROWS[1], "rephrasings": ["ok", "", 3]}]
    err = problems_of(write_jsonl(tmp_path / "data.jsonl", rows))
    messages = [str(p) for p in err.problems]
    assert messages == [
        f"{tmp_path / 'data.jsonl'}, row 2, field 'rephrasings': rephrasings[1] is an empty string",
        f"{tmp_path / 'data.jsonl'}, row 2, field 'rephrasings': rephrasings[2] is not a string (got int)",
    ]


def test_duplicate_ids_name_both_rows(tmp_path):
    rows = [ROWS[0], ROWS[1], ROWS[2], {**ROWS[2], "prompt": "Again?"}]
    err = problems_of(write_jsonl(tmp_path / "data.jsonl", rows))
    assert "data.jsonl, row 4, field 'id': duplicate id 'q3' (first seen at row 3)" in str(err)


def test_missing_id(tmp_path):
    err = problems_of(write_jsonl(tmp_path / "data.jsonl", [{k: v for k, v in ROWS[0].items() if k != "id"}]))
    assert "row 1, field 'id': missing id" in str(err)


def test_row_that_is_not_a_mapping(tmp_path):
    err = problems_of(write_lines(tmp_path / "data.jsonl", [json.dumps(ROWS[0]), "[1, 2]"]))
    assert "data.jsonl, row 2: row is not a mapping (got list)" in str(err)


def test_bad_json_line_names_file_and_line(tmp_path):
    path = write_lines(tmp_path / "data.jsonl", [json.dumps(ROWS[0]), "", '{"id": "q2", "prompt": '])
    with pytest.raises(InvalidDataError) as info:
        load_rows(path)
    assert str(info.value.problems[0]).startswith(f"{path}, row 3: invalid JSON at line 3, column")


def test_every_bad_json_line_of_a_benchmark_file_is_named(tmp_path):
    from tagrpo.data import load_benchmark

    (tmp_path / "aime24").mkdir()
    lines = [json.dumps({"id": "a", "problem": "1+1?", "answer": "2"}), "{oops", "", "[1,"]
    path = write_lines(tmp_path / "aime24" / "test.jsonl", lines)
    with pytest.raises(InvalidDataError) as info:
        load_benchmark("aime24", data_dir=tmp_path)
    assert [str(p) for p in info.value.problems] == [
        f"{path}, row 2: invalid JSON at line 2, column 2: Expecting property name enclosed in double quotes",
        f"{path}, row 4: invalid JSON at line 4, column 4: Expecting value",
    ]


@pytest.mark.parametrize(("value", "offline"), [("1", True), ("true", True), (" YES ", True), ("On", True),
                                                ("0", False), ("", False), ("false", False), ("2", False)])
def test_hub_offline_reads_both_variables_alike(monkeypatch, value, offline):
    from tagrpo.data.loaders import hub_offline

    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    assert hub_offline() is offline
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", value)
    assert hub_offline() is offline


def test_a_hub_id_is_not_fetched_when_the_hub_is_off(monkeypatch):
    def load_dataset(*args, **kwargs):
        raise AssertionError("the hub was asked")

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    monkeypatch.setenv("HF_HUB_OFFLINE", "true")
    with pytest.raises(ValueError, match="'owner/name': not a local file or directory, and the hub is off"):
        load_rows("owner/name")


def test_several_problems_are_all_reported(tmp_path):
    rows = [
        {"id": "a", "prompt": "", "answer": None, "rephrasings": "x"},
        {"id": "b", "prompt": "fine", "answer": 1, "rephrasings": []},
        {"id": "a", "prompt": "ok", "answer": "", "rephrasings": [None]},
    ]
    err = problems_of(write_jsonl(tmp_path / "data.jsonl", rows))
    assert [(p.row, p.field) for p in err.problems] == [
        (1, "prompt"),
        (1, "answer"),
        (1, "rephrasings"),
        (3, "id"),
        (3, "answer"),
        (3, "rephrasings"),
    ]
    assert str(err).startswith("invalid data: 6 problems found\n")
    for text in ["row 1, field 'prompt'", "row 3, field 'id': duplicate id 'a' (first seen at row 1)"]:
        assert text in str(err)


def test_long_problem_lists_are_truncated_in_the_message():
    err = InvalidDataError([DataProblem("d.jsonl", i, "answer", "missing answer") for i in range(1, 26)])
    assert len(err.problems) == 25
    assert "row 20," in str(err) and "row 21," not in str(err)
    assert str(err).endswith("... and 5 more")
    assert pickle.loads(pickle.dumps(err)).problems == err.problems


def test_validate_rows_and_ensure_valid_directly():
    assert validate_rows(ROWS, "mem") == []
    ensure_valid(ROWS, "mem")
    assert validate_rows([ROWS[0], ROWS[0]], "mem", row_numbers=[10, 12]) == [
        DataProblem("mem", 12, "id", "duplicate id 'q1' (first seen at row 10)")
    ]
    with pytest.raises(InvalidDataError):
        ensure_valid([{"id": 1}], "mem")


# ---------------------------------------------------------------- fit_rephrasings

FIT_ROWS = [
    {"id": 1, "prompt": "q0-1", "answer": "a", "rephrasings": ["r1", "r2", "r3"], "meta": "x"},
    {"id": 2, "prompt": "q0-2", "answer": "b", "rephrasings": ["s1"]},
    {"id": 3, "prompt": "q0-3", "answer": "c", "rephrasings": []},
    {"id": 4, "prompt": "q0-4", "answer": "d", "rephrasings": ["t1", "t2", "t3", "t4"]},
]


def _fit(n, short):
    before = copy.deepcopy(FIT_ROWS)
    rows, counts = fit_rephrasings(FIT_ROWS, n, short)
    assert FIT_ROWS == before
    return [(r["id"], r["rephrasings"]) for r in rows], counts


def test_fill_original_is_the_default_and_pads_with_the_prompt():
    rows, counts = fit_rephrasings(FIT_ROWS, 3)
    expected = [
        (1, ["r1", "r2", "r3"]),
        (2, ["s1", "q0-2", "q0-2"]),
        (3, ["q0-3"] * 3),
        (4, ["t1", "t2", "t3"]),
    ]
    assert [(r["id"], r["rephrasings"]) for r in rows] == _fit(3, "fill_original")[0] == expected
    assert counts == {"complete": 2, "filled": 2, "dropped": 0, "truncated": 1}
    assert rows[0]["meta"] == "x" and rows[0]["prompt"] == "q0-1"


def test_cycle_repeats_rephrasings_and_falls_back_to_the_prompt():
    assert _fit(5, "cycle") == (
        [
            (1, ["r1", "r2", "r3", "r1", "r2"]),
            (2, ["s1", "s1", "s1", "s1", "s1"]),
            (3, ["q0-3"] * 5),
            (4, ["t1", "t2", "t3", "t4", "t1"]),
        ],
        {"complete": 0, "filled": 4, "dropped": 0, "truncated": 0},
    )


def test_drop_removes_short_rows():
    assert _fit(3, "drop") == (
        [(1, ["r1", "r2", "r3"]), (4, ["t1", "t2", "t3"])],
        {"complete": 2, "filled": 0, "dropped": 2, "truncated": 1},
    )


@pytest.mark.parametrize("short", SHORT_RULES)
def test_zero_rephrasings_empties_every_row(short):
    assert _fit(0, short) == (
        [(1, []), (2, []), (3, []), (4, [])],
        {"complete": 4, "filled": 0, "dropped": 0, "truncated": 3},
    )


def test_more_than_n_keeps_the_first_n():
    assert _fit(1, "fill_original") == (
        [(1, ["r1"]), (2, ["s1"]), (3, ["q0-3"]), (4, ["t1"])],
        {"complete": 3, "filled": 1, "dropped": 0, "truncated": 2},
    )


def test_unknown_short_rule_lists_the_valid_ones():
    message = "short_rephrasings='foo' is not valid; expected one of: 'fill_original', 'cycle', 'drop'"
    with pytest.raises(ValueError, match=message):
        fit_rephrasings(FIT_ROWS, 2, "foo")


def test_negative_num_rephrasings_is_rejected():
    with pytest.raises(ValueError, match="num_rephrasings must be >= 0, got -1"):
        fit_rephrasings(FIT_ROWS, -1)
