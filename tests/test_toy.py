"""The embedded world's pieces: tokenizer round trip, equivalent renderings, pretraining lowers the loss."""

from __future__ import annotations

import pytest
import torch

from tagrpo.toy import build_char_tokenizer, build_tiny_model
from tagrpo.toy.arithmetic import FORMS, corpus, parse, question_rows, render
from tagrpo.toy.pretrain import pretrain


def test_tokenizer_round_trip(tmp_path):
    tok = build_char_tokenizer()
    text = "Tom has 3 apples and gets 5 more. Apples= \\boxed{8}\n\tok"
    ids = tok(text)["input_ids"]
    assert len(ids) == len(text) and tok.decode(ids) == text
    tok.save_pretrained(tmp_path)
    from transformers import AutoTokenizer

    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert loaded(text)["input_ids"] == ids and loaded.decode(ids) == text
    assert tok.decode(tok("é")["input_ids"]) == "<unk>"


@pytest.mark.parametrize("form", FORMS)
def test_every_form_parses_back_to_the_same_problem(form):
    for a in range(10):
        for b in range(10):
            assert sorted(parse(render(a, b, form))) == sorted((a, b))


def test_question_rows_are_equivalent_rephrasings():
    for row in question_rows(20, seed=3):
        sums = {sum(parse(q)) for q in [row["prompt"], *row["rephrasings"]]}
        assert sums == {int(row["answer"])}
        a, b = parse(row["prompt"])
        assert len(set(row["rephrasings"])) == (2 if a == b else 3)  # 'a+b=' and 'b+a=' coincide when a == b
        assert row["prompt"] not in row["rephrasings"]


def test_unknown_form_lists_valid_ones():
    with pytest.raises(ValueError, match="'symbolic', 'words', 'narrative', 'swapped'"):
        render(1, 2, "latin")


def test_pretraining_on_a_micro_corpus_lowers_the_loss():
    torch.manual_seed(0)
    tok = build_char_tokenizer()
    model = build_tiny_model(tok, hidden_size=32, num_layers=1, num_heads=2)
    losses = pretrain(model, tok, corpus(64, 0, {"symbolic": 1.0}), steps=30, batch_size=16, lr=1e-2)
    assert sum(losses[-5:]) / 5 < 0.5 * sum(losses[:5]) / 5
