"""Shared fixtures and helpers: tiny random Qwen3 / Llama models with a locally built tokenizer, a toy pool data
set, the rephrase tests' rows and stub server, and the marker of tests that need the benchmark data directory."""

from __future__ import annotations

import os

import pytest
from rows import pool_rows  # noqa: F401  (the tests import it from here)

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


KEY = "sk-test-NEVER-LOG-ME-5f3a9c"  # a fake API key that must never appear in a log or a file


def write_rows(path, count: int) -> str:
    """``count`` toy questions ``{id, prompt, answer}`` as JSONL at ``path``."""
    import json

    rows = [
        {"id": f"q{i}", "prompt": f"Tom has {i + 2} apples and buys {i + 3} more. How many apples?",
         "answer": str(2 * i + 5)}
        for i in range(count)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture
def server():
    """The OpenAI-compatible stub server (tests/openai_stub_server.py) on 127.0.0.1, no latency."""
    from openai_stub_server import StubServer

    with StubServer(latency_s=0.0) as s:
        yield s


def _data_dir():
    from tagrpo.data.benchmarks import default_data_dir

    return default_data_dir()


needs_data = pytest.mark.skipif(
    _data_dir() is None, reason="no benchmark data directory ($TAGRPO_DATA_DIR or ../shared/data)"
)
