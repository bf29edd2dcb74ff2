"""The regime world's base model: ``tagrpo.toy.pretrain``'s loop on ``tagrpo.toy.regime``'s corpus.

The corpus never holds a word rendering of a number whose tens word is hidden (``regime.HIDDEN_TENS``), so the base
cannot read those numbers in q0's spelled form while it reads their digits; it solves by adding first or by
subtracting first (``add_first`` of the pairs add first). Deterministic given the settings, like the basic world's
base (one thread); the marker in the output directory records the settings and the recipe.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Console

from tagrpo.cliargs import helped
from tagrpo.toy.pretrain import build_base
from tagrpo.toy.regime import MIX, corpus, tokenizer_texts

RECIPE = 1  # bump when the regime world, the tokenizer or the training loop changes what a config produces


@dataclass
class RegimePretrainConfig:
    """Settings of the regime world's pretraining."""

    output_dir: str = helped("outputs/regime_base", "the model directory (reused when its marker matches)")
    steps: int = helped(1500, "optimizer steps")
    seed: int = helped(0, "fixes the corpus, the initialisation and the batches")
    batch_size: int = helped(96, "sequences per step")
    learning_rate: float = helped(2e-3, "AdamW, decayed linearly to 0")
    corpus_size: int = helped(60000, "question-solution pairs drawn from the train triples")
    hidden_size: int = helped(160, "model width")
    num_layers: int = helped(4, "transformer layers")
    architecture: str = helped("qwen3", "qwen3 or llama")
    add_first: float = helped(0.7, "share of the corpus's solutions that add first (the rest subtract first)")
    mix: dict = field(default_factory=lambda: dict(MIX), metadata={"help": "share of each surface form, as JSON"})


def pretrain_regime_base(cfg: RegimePretrainConfig, console: Console | None = None) -> str:
    """The regime world's base model directory (reused when its marker matches ``cfg``)."""
    return build_base(
        cfg, RECIPE, lambda: corpus(cfg.corpus_size, cfg.seed, cfg.mix, cfg.add_first), tokenizer_texts, console
    )
