"""Rephrasing checks, reply cleaning, templates and type plan, and the toy world's rule-based rephraser."""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tagrpo.rephrase.checks import check_rephrasing, clean_response, extract_numbers
from tagrpo.rephrase.templates import (
    DEFAULT_TEMPLATES,
    SYSTEM,
    cut_at_stop,
    load_templates,
    plan_for,
    template_hash,
    type_plan,
)
from tagrpo.toy.rephraser import check_toy, rule_rephrase, rule_solve, toy_form
from tagrpo.toy.world import FORMS, Problem, parse, render, sample_problem

Q = "Let $f(x) = 3x^2 + \\frac{1}{2}$. If Tom has 12 apples, what is $f(4)$?"
CASES = [
    # (original, candidate, type, reason or None)
    (Q, "Tom has 12 apples. Given $f(x) = 3x^2 + \\frac{1}{2}$, find $f(4)$.", "reorder", None),
    (Q, "Suppose $f(x)=3x^2+\\frac12$. Tom owns 12 apples; compute $f(4)$.", "paraphrase", None),
    (Q, "Let $g(t) = 3t^2 + \\frac{1}{2}$. If Ann has 12 pears, what is $g(4)$?", "rename", None),
    (Q, "Let $g(t) = 3t^2 + \\frac{1}{2}$. If Ann has 12 pears, what is $g(4)$?", "paraphrase", "variables"),
    (Q, "Let f(x) = 3x^2 + 1/2. If Tom has twelve apples, what is f(4)?", "format", None),
    (Q, "Let f(x) = 3x^2 + 1/2. If Tom has twelve apples, what is f(4)?", "paraphrase", "numbers"),
    (Q, "Let $f(x) = 3x^2 + \\frac{1}{3}$. If Tom has 12 apples, what is $f(4)$?", "paraphrase", "numbers"),
    (Q, "Let $g(t) = 3t^2 + \\frac{1}{2}$. If Ann has 13 pears, what is $g(4)$?", "rename", "numbers"),
    (Q, "  Let $f(x) = 3x^2 + \\frac{1}{2}$.\n If Tom has 12 apples,  what is $f(4)$? ", "paraphrase", "identical"),
    (Q, "", "paraphrase", "empty"),
    (Q, "12 3 2 1 2 4 f x", "paraphrase", "question"),  # the facts without the question
    (Q, "What is f 12 3 2 1 2 4 x?", "paraphrase", "length"),
    (Q, "let $f(x) = 3x^2 + \\frac{1}{2}$; if tom has 12 apples, what is $f(4)$", "paraphrase", "identical"),
    (Q, "Tom has 12 apples; what is $f(4)$ for $f(x) = 3x^2 + \\frac{1}{2}$?", "rename", "not_renamed"),
    ("What is 7 plus 5?", "How much is 7 plus 5?", "rename", "not_renamed"),  # nothing to rename
    (Q, "Let $f(x) = 3x^2 + \\frac{1}{2}$. If Mia has 12 apples, what is $f(4)$?", "rename", None),  # a name
    (Q, Q + " " + Q.replace("Let", "So"), "paraphrase", "numbers"),
    (Q, Q + " Think carefully about every single step before you answer this one, please.", "paraphrase", "length"),
    ("Find $x$ if $2x = 1{,}000$.", "If $2x$ equals 1000, what is $x$?", "reorder", None),
    ("Triangle $ABC$ has sides 3, 4 and 5.", "The sides of triangle ABC are 3, 4 and 5.", "format", None),
    ("Twenty-one cats and 3 dogs.", "21 cats and three dogs.", "format", None),
    ("One hundred and five birds.", "105 birds sit there.", "format", None),
]


@pytest.mark.parametrize(("original", "candidate", "transform", "reason"), CASES)
def test_check_table(original, candidate, transform, reason):
    result = check_rephrasing(original, candidate, transform)
    assert result.reason == reason, result.detail
    assert result.accepted == (reason is None)
    if reason is None:
        assert result.passed[-1] == "length"


def test_check_length_bounds_are_configurable():
    assert check_rephrasing("What is 2+2?", "What is 2+2? Show it.", "paraphrase", 0.5, 2.0).accepted
    assert check_rephrasing("What is 2+2?", "What is 2+2? Show it.", "paraphrase", 0.5, 1.2).reason == "length"


def test_extract_numbers():
    assert extract_numbers("\\frac{1}{2} and \\dfrac34 and 1,000 and 2.50 and 007") == Counter(
        {"1": 1, "2": 1, "3": 1, "4": 1, "1000": 1, "2.5": 1, "7": 1}
    )
    assert extract_numbers("three and twenty-one and two hundred five", words=True) == Counter(
        {"3": 1, "21": 1, "205": 1}
    )
    assert extract_numbers("one two", words=True) == Counter({"1": 1, "2": 1})
    assert extract_numbers("someone has none", words=True) == Counter()


@pytest.mark.parametrize(
    "raw",
    [
        "Rephrased question: What is 2+2?",
        "```\nWhat is 2+2?\n```",
        "```text\nWhat is 2+2?```",
        '"What is 2+2?"',
        "\u201cWhat is 2+2?\u201d",
        "Here is the rewritten problem:\n\nWhat is 2+2?",
        "**Paraphrased problem:** What is 2+2?",
        "Sure! Here's the reordered version:\n```\n<question>\nWhat is 2+2?\n</question>\n```",
    ],
)
def test_clean_response_strips_wrappers(raw):
    assert clean_response(raw) == "What is 2+2?"


def test_clean_response_keeps_inner_quotes():
    assert clean_response('"a" is not "b"') == '"a" is not "b"'


def test_a_question_with_nothing_to_rename_gets_another_type_in_its_renaming_slot():
    plan = type_plan(3)
    assert plan_for(plan, None, renamable=True) == plan
    assert plan_for(plan, None, renamable=False) == [("paraphrase", 0), ("reorder", 0), ("format", 0)]
    # every listed type planned already: one more of the first other type, numbered after its planned slots
    assert plan_for(type_plan(5), None, False) == [
        ("paraphrase", 0), ("paraphrase", 2), ("format", 0), ("reorder", 0), ("paraphrase", 1)
    ]
    assert plan_for(type_plan(2, "rename,format"), "rename,format", False) == [("format", 1), ("format", 0)]
    assert plan_for(type_plan(1, "rename"), "rename", False) == [("rename", 0)]  # nothing else listed: kept


def test_type_plan():
    assert type_plan(3) == [("paraphrase", 0), ("rename", 0), ("format", 0)]
    assert type_plan(5)[-1] == ("paraphrase", 1)
    assert type_plan(3, "format,reorder") == [("format", 0), ("reorder", 0), ("format", 1)]
    with pytest.raises(ValueError, match="expected one of"):
        type_plan(2, "paraphrase,shuffle")
    with pytest.raises(ValueError):
        type_plan(0)


def test_templates_file_and_hash(tmp_path):
    system, templates, _ = load_templates()
    assert system == SYSTEM and templates == DEFAULT_TEMPLATES
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"format": "As a list: {question}"}))
    _, edited, _ = load_templates(str(path))
    assert edited["format"] == "As a list: {question}" and edited["rename"] == DEFAULT_TEMPLATES["rename"]
    assert template_hash(system, edited["format"]) != template_hash(system, DEFAULT_TEMPLATES["format"])
    yaml_path = tmp_path / "t.yaml"
    yaml_path.write_text("system: Be terse.\nreorder: 'Reorder {question}'\n")
    assert load_templates(str(yaml_path))[0] == "Be terse."
    (tmp_path / "bad.yaml").write_text("paraphrase: no placeholder\n")
    with pytest.raises(ValueError, match="placeholder"):
        load_templates(str(tmp_path / "bad.yaml"))


def test_stop_strings_of_a_templates_file(tmp_path):
    path = tmp_path / "few.yaml"
    path.write_text('paraphrase: "Problem: A\\nRewritten problem: B\\n\\nProblem: {question}"\n'
                    'stop: ["\\n\\n", "Problem:"]\n')
    system, templates, stop = load_templates(str(path))
    assert stop == ("\n\n", "Problem:")
    # the stop strings are part of the hash (their cache key), and no stop keeps the hash it always had
    assert template_hash(system, templates["paraphrase"], stop) != template_hash(system, templates["paraphrase"])
    assert template_hash(SYSTEM, "t") == hashlib.sha256(f"{SYSTEM}\0t".encode()).hexdigest()[:16]
    assert load_templates(str(path)).stop == stop and load_templates().stop == ()
    # a reply is cut at the first stop string that occurs in it, wherever that string is in the list
    assert cut_at_stop("Tom has 3.\nProblem: Ann has 4.\n\nx", stop) == "Tom has 3.\n"
    assert cut_at_stop("no stop here", stop) == "no stop here"
    for bad in ("stop: []", "stop: ['']", "stop: [a, b, c, d, e]", "stop: 3"):
        (tmp_path / "bad.yaml").write_text(bad + "\n")
        with pytest.raises(ValueError, match="'stop' must be"):
            load_templates(str(tmp_path / "bad.yaml"))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(FORMS), st.sampled_from(["paraphrase", "rename", "format", "reorder"]))
def test_rule_rephrase_parses_back(seed, form, transform):
    problem = sample_problem(random.Random(seed))
    original = render(problem, form)
    assert toy_form(original) == (
        problem if form in ("narrative", "reordered", "spelled") else Problem(problem.a, problem.b, problem.c),
        form,
    )
    if transform == "rename" and form in ("symbolic", "words"):
        with pytest.raises(ValueError, match="cannot rename"):
            rule_rephrase(original, transform)
        return
    text = rule_rephrase(original, transform)
    assert text != original and parse(text) == parse(original)
    assert check_toy(original, text).accepted
    assert rule_solve(text) == f"\\boxed{{{problem.answer}}}"


def test_rule_backend_rejects_other_text():
    with pytest.raises(ValueError, match="not a rendering"):
        rule_rephrase("What is $2+2$?", "paraphrase")
    assert check_toy("3+5-2=", "3+5-1=").reason == "parse"
    assert check_toy("3+5-2=", "3+5-2=").reason == "identical"
