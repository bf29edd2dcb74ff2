"""The embedded world: equivalent renderings (property tests), splits, tokenizers, pretraining, the shipped base."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tagrpo.toy import build_char_tokenizer, build_tiny_model
from tagrpo.toy.pretrain import SHIPPED, PretrainConfig, pretrain, pretrain_base, resolve_base
from tagrpo.toy.tokenizer import build_world_tokenizer
from tagrpo.toy.world import (
    FORMS,
    ITEMS,
    NAMES,
    NARRATIVE_FORMS,
    PLANS,
    WORDS,
    Problem,
    corpus,
    parse,
    question_rows,
    render,
    rephrase,
    split_of,
    tokenizer_texts,
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


def test_splits_are_disjoint_and_pretraining_never_sees_a_test_triple():
    triples = [(a, b, c) for a in range(10) for b in range(10) for c in range(min(9, a + b) + 1)]
    test = {t for t in triples if split_of(*t) == "test"}
    assert len(triples) == 835 and len(test) == 163  # about one in five, fixed by the hash
    held = {parse(r["prompt"]) for r in question_rows(200, seed=5, num_rephrasings=0, split="test")}
    train = {parse(r["prompt"]) for r in question_rows(400, seed=5, num_rephrasings=0)}
    assert held <= test and not train & test and len(held) > 100
    assert not {parse(q) for q, _ in corpus(3000, 1, {f: 1.0 for f in FORMS})} & test
    assert question_rows(20, seed=9, split="test") == question_rows(40, seed=9, split="test")[:20]
    with pytest.raises(ValueError, match="'train', 'test'"):
        question_rows(2, seed=0, split="valid")


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


def test_world_tokenizer_makes_words_single_tokens_and_round_trips():
    tok = build_world_tokenizer(tokenizer_texts(200))
    assert [tok.convert_ids_to_tokens(i) for i in range(3)] == ["<pad>", "<eos>", "<unk>"]
    q0 = render(Problem(3, 5, 2, "Zoe", "shells"), "spelled")
    pieces = [tok.decode([i]) for i in tok(q0)["input_ids"]]
    assert pieces[:4] == ["Zoe", " has", " three", " shells"] and len(pieces) == 17
    solution = Problem(9, 9, 9).solution()  # ' 9+9=18; 18-9=9. \\boxed{9}': digits stay single
    ids = tok(solution)["input_ids"]
    assert [tok.decode([i]) for i in ids][:6] == [" ", "9", "+", "9", "=", "1"] and "\\boxed{" in tok.decode(ids)
    for word in [*(f" {w}" for w in WORDS + ITEMS), *NAMES]:  # names open the question, without a space
        assert len(tok(word)["input_ids"]) == 1, word
    for text in (q0 + solution, "Other text ~ with {braces}\n\t and digits 12345"):
        assert tok.decode(tok(text)["input_ids"]) == text
    assert tok.get_vocab() == build_world_tokenizer(tokenizer_texts(200)).get_vocab()  # deterministic


@pytest.mark.slow
def test_shipped_base_matches_the_default_recipe_and_holds_the_premise(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tagrpo.demo.config import DemoConfig
    from tagrpo.demo.run import premise

    assert resolve_base(None, str(tmp_path / "unused")) == str(SHIPPED)  # the marker matches PretrainConfig()
    assert not (tmp_path / "unused").exists()
    model, tok = AutoModelForCausalLM.from_pretrained(SHIPPED), AutoTokenizer.from_pretrained(SHIPPED)
    acc = premise(model, tok, DemoConfig(seed=0, preset="default"))  # the basic world, 28 tokens
    # q0's spelled form is hard, its symbolic rephrasing easy; renaming keeps the difficulty (64 questions x 8).
    assert acc["symbolic"] - acc["spelled"] > 0.25 and abs(acc["renamed"] - acc["spelled"]) < 0.1


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
