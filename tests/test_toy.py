"""The embedded world: equivalent renderings (property tests), tokenizer round trip, pretraining lowers the loss."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tagrpo.toy import build_char_tokenizer, build_tiny_model
from tagrpo.toy.pretrain import PretrainConfig, pretrain, pretrain_base
from tagrpo.toy.world import (
    FORMS,
    ITEMS,
    NAMES,
    NARRATIVE_FORMS,
    PLANS,
    Problem,
    corpus,
    parse,
    question_rows,
    render,
    rephrase,
)

problems = st.builds(
    lambda a, b, c, name, item: Problem(a, b, min(c, a + b), name, item),
    st.integers(0, 9),
    st.integers(0, 9),
    st.integers(0, 9),
    st.sampled_from(NAMES),
    st.sampled_from(ITEMS),
)


@given(problems, st.sampled_from(FORMS), st.integers(0, 7))
def test_every_rendering_parses_back_to_the_same_problem(p, form, k):
    assert parse(render(p, form)) == (p.a, p.b, p.c)
    assert parse(render(p.renamed(k), form)) == (p.a, p.b, p.c)


@given(problems, st.sampled_from(list(PLANS)), st.integers(0, 7))
def test_rephrasings_are_equivalent_and_differ_from_the_original(p, plan, n):
    original = render(p, "spelled")
    reph = rephrase(p, n, plan)
    assert len(reph) == n
    for text in reph:
        a, b, c = parse(text)
        assert a + b - c == p.answer and text != original


@given(problems, st.sampled_from(NARRATIVE_FORMS))
def test_control_rephrasings_change_only_names_and_items(p, original):
    reph = rephrase(p, 3, "control", original)
    assert len({t.split()[0] for t in reph} | {p.name}) == 4  # three distinct other people
    for n, text in enumerate(reph, start=1):
        other = p.renamed(n)
        assert text == render(p, original).replace(p.name, other.name).replace(p.item, other.item)
        assert parse(text) == (p.a, p.b, p.c)


@settings(deadline=None, max_examples=50)
@given(problems)
def test_solution_is_step_by_step_and_boxed(p):
    from tagrpo.rewards import is_correct

    s = p.solution()
    assert f"{p.a}+{p.b}={p.a + p.b}" in s and s.endswith(f"\\boxed{{{p.answer}}}")
    assert is_correct(s, str(p.answer)) and not is_correct(s, str(p.answer + 1))


def test_question_rows_and_corpus_mix():
    rows = question_rows(50, seed=3)
    assert len({r["id"] for r in rows}) == 50
    assert all(sum(parse(r["prompt"])[:2]) - parse(r["prompt"])[2] == int(r["answer"]) for r in rows)
    pairs = corpus(2000, 0, {"symbolic": 0.9, "narrative": 0.1})
    symbolic = sum(q[0].isdigit() for q, _ in pairs) / len(pairs)
    assert 0.87 < symbolic < 0.93


def test_unknown_form_and_plan_list_valid_ones():
    with pytest.raises(ValueError, match="'symbolic', 'words', 'narrative'"):
        render(Problem(1, 2, 0), "latin")
    with pytest.raises(ValueError, match="'main', 'control'"):
        rephrase(Problem(1, 2, 0), 3, "other")
    with pytest.raises(ValueError, match="renames entities"):
        rephrase(Problem(1, 2, 0), 3, "control", original="symbolic")


def test_tokenizer_round_trip(tmp_path):
    from transformers import AutoTokenizer

    tok = build_char_tokenizer()
    text = "Tom has 3 apples, gets 5 more and gives 2 away. How many apples? 3+5=8; 8-2=6. \\boxed{6}\n\t~"
    ids = tok(text)["input_ids"]
    assert len(ids) == len(text) and tok.decode(ids) == text
    tok.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert loaded(text)["input_ids"] == ids and loaded.decode(ids) == text
    assert tok.decode(tok("é")["input_ids"]) == "<unk>"


def test_pretraining_on_a_micro_corpus_lowers_the_loss():
    torch.manual_seed(0)
    tok = build_char_tokenizer()
    model = build_tiny_model(tok, hidden_size=32, num_layers=1, num_heads=2)
    losses = pretrain(model, tok, corpus(64, 0, {"symbolic": 1.0}), steps=30, batch_size=16, lr=1e-2)
    assert sum(losses[-5:]) / 5 < 0.5 * sum(losses[:5]) / 5


def test_pretrained_base_is_cached_and_deterministic(tmp_path):
    from transformers import AutoModelForCausalLM

    cfg = dict(steps=3, batch_size=8, corpus_size=64, hidden_size=32, num_layers=1)
    first = pretrain_base(PretrainConfig(output_dir=str(tmp_path / "a"), **cfg))
    stamp = (tmp_path / "a" / "model.safetensors").stat().st_mtime_ns
    assert pretrain_base(PretrainConfig(output_dir=first, **cfg)) == first
    assert (tmp_path / "a" / "model.safetensors").stat().st_mtime_ns == stamp  # reused, not retrained
    second = pretrain_base(PretrainConfig(output_dir=str(tmp_path / "b"), **cfg))
    wa = AutoModelForCausalLM.from_pretrained(first).state_dict()
    wb = AutoModelForCausalLM.from_pretrained(second).state_dict()
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
