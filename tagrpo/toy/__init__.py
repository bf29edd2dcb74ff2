"""The embedded world's building blocks: a local character tokenizer and tiny causal LMs."""

from tagrpo.toy.model import ARCHITECTURES, build_tiny_model
from tagrpo.toy.tokenizer import build_char_tokenizer

__all__ = ["ARCHITECTURES", "build_char_tokenizer", "build_tiny_model"]
