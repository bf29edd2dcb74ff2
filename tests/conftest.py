"""Shared fixtures: tiny random Qwen3 / Llama models with a locally built tokenizer, and a toy pool data set."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def make_model_dir(path, architecture="qwen3"):
    from tagrpo.toy import build_char_tokenizer, build_tiny_model

    tok = build_char_tokenizer()
    build_tiny_model(tok, architecture=architecture).save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="session")
def model_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return {arch: make_model_dir(root / arch, arch) for arch in ("qwen3", "llama")}


def pool_rows(num_questions=4, num_rephrasings=3):
    """Rows whose prompt text names the question and the variant: 'Q2 v0: ...' is q0 of question 2."""
    return [
        {
            "id": f"q{i}",
            "prompt": f"Q{i} v0: what is {i}+1?",
            "answer": str(i + 1),
            "rephrasings": [f"Q{i} v{n}: add {i} and 1" for n in range(1, num_rephrasings + 1)],
        }
        for i in range(num_questions)
    ]
