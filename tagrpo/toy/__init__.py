"""The embedded world's building blocks: a local character tokenizer and tiny causal LMs; and SmolLM2-135M-Instruct
on the sum problems, the small real model of the real studies (:mod:`tagrpo.toy.smollm_sums`).

They load on first use, with torch and transformers. The world's entries in the package's registries
(:mod:`tagrpo.toy.plugins`, which the registries import on their first use) need neither.
"""

__all__ = ["ARCHITECTURES", "build_char_tokenizer", "build_tiny_model"]


def __getattr__(name: str):
    if name in ("ARCHITECTURES", "build_tiny_model"):
        from tagrpo.toy import model

        return getattr(model, name)
    if name == "build_char_tokenizer":
        from tagrpo.toy.tokenizer import build_char_tokenizer

        return build_char_tokenizer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
