"""Tiny randomly initialised causal LMs of Qwen3 or Llama architecture, for tests and the embedded world."""

from __future__ import annotations

import torch
from transformers import AutoModelForCausalLM, LlamaConfig, PreTrainedTokenizerBase, Qwen3Config

from tagrpo.common.modes import check_mode

ARCHITECTURES = ("qwen3", "llama")


def build_tiny_model(
    tokenizer: PreTrainedTokenizerBase,
    architecture: str = "qwen3",
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    max_positions: int = 512,
    seed: int = 0,
):
    """A causal LM with ``len(tokenizer)`` tokens, tied embeddings and the tokenizer's pad/eos ids."""
    check_mode("architecture", architecture, ARCHITECTURES)
    common = dict(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=max(1, num_heads // 2),
        head_dim=hidden_size // num_heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.eos_token_id,
    )
    config = Qwen3Config(**common) if architecture == "qwen3" else LlamaConfig(**common)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model
