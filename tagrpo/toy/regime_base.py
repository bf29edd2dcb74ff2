"""The regime world's base model: ``tagrpo.toy.pretrain``'s loop on ``tagrpo.toy.regime``'s corpus.

The corpus never holds a word rendering of a number whose tens word is hidden (``regime.HIDDEN_TENS``), so the base
cannot read those numbers in q0's spelled form while it reads their digits; it solves by adding first or by
subtracting first (``add_first`` of the pairs add first). Deterministic given the settings, like the basic world's
base (one thread); the marker in the output directory records the settings and the recipe. The default recipe's
result is shipped in ``tagrpo/toy/regime_checkpoint``; ``pretrain_regime_base(RegimePretrainConfig(output_dir=DIR))``
rebuilds it bit for bit (about five minutes on one core).

The number of steps sets where the base sits. Measured on validation problems (``benchmarks/toy_premise.py
--split validation``, 50 questions of each kind x 32 samples; ``toy_premise_validation_{400,700,1500}.md``):
400 steps leave every form below 10% pass@1; 1,500 solve every readable form 99% of the time (uniform groups
everywhere, nothing left for GRPO to learn); 700, the default, solve the digit forms 79-89% of the time while
q0's spelled form of a readable problem is right 11% of the time, and 98% of hard problems get 0 of 32 on q0.
(The three were first looked at on test problems, then re-measured on validation, which gave the same choice.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from tagrpo.cliargs import helped
from tagrpo.toy.pretrain import PretrainConfig, build_base, marker_matches
from tagrpo.toy.regime import MIX, corpus, tokenizer_texts

RECIPE = 1  # bump when the regime world, the tokenizer or the training loop changes what a config produces
SHIPPED = Path(__file__).parent / "regime_checkpoint"  # RegimePretrainConfig()'s result (3.9 MB)


@dataclass
class RegimePretrainConfig(PretrainConfig):
    """Settings of the regime world's pretraining: ``PretrainConfig``'s, with their own defaults and ``add_first``."""

    output_dir: str = helped("outputs/regime_base", "the model directory (reused when its marker matches)")
    steps: int = helped(700, "optimizer steps (chosen on validation problems: benchmarks/results/toy_premise.md)")
    corpus_size: int = helped(60000, "question-solution pairs drawn from the train triples")
    mix: dict = field(default_factory=lambda: dict(MIX), metadata={"help": "share of each surface form, as JSON"})
    add_first: float = helped(0.7, "share of the corpus's solutions that add first (the rest subtract first)")


def pretrain_regime_base(cfg: RegimePretrainConfig, console: Console | None = None) -> str:
    """The regime world's base model directory (reused when its marker matches ``cfg``)."""
    return build_base(
        cfg, RECIPE, lambda: corpus(cfg.corpus_size, cfg.seed, cfg.mix, cfg.add_first), tokenizer_texts, console
    )


def shipped_matches() -> bool:
    """Whether the shipped checkpoint is what ``RegimePretrainConfig()`` produces (its marker says so)."""
    return marker_matches(SHIPPED, RegimePretrainConfig(), RECIPE)
