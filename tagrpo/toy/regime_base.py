"""The regime world's base model: ``tagrpo.toy.pretrain``'s loop on ``tagrpo.toy.regime``'s corpus.

The corpus never holds a word rendering of a number whose tens word is hidden (``regime.HIDDEN_TENS``), so the base
cannot read those numbers in q0's spelled form while it reads their digits; it solves by adding first or by
subtracting first (``add_first`` of the pairs add first), and a share ``slip`` of its spelled solutions add the
``c`` given away (``regime.corpus``). Deterministic given the settings, like the basic world's
base (one thread); the marker in the output directory records the settings and the recipe. The default recipe's
result is shipped in ``tagrpo/toy/regime_checkpoint``; ``pretrain_regime_base(RegimePretrainConfig(output_dir=DIR))``
rebuilds it bit for bit (about eleven minutes on one core).

How the recipe was chosen, on validation problems only (``studies/toy_premise.py --split validation``, 50
questions of each kind x 32 samples, ``toy_premise_validation_*.md``; ``studies/regime_mix_probe.py``, the base
rows of ``regime_mix_probe.md``: 64 questions x 16 samples, two seeds):

- steps: 400 leave every form below 10% pass@1, 1,500 solve every readable form 99% of the time (nothing left to
  learn), 700 solve the digit forms 79-89% of the time (``toy_premise_validation_{400,700,1500}.md``);
- the spelled share of the corpus sets how well the base reads q0, steeply and not monotonically (the base's
  quality is sensitive to the order of float sums): readable q0 pass@1 11% at 15% (the first shipped base), 96% at
  17%, 58% at 18%, 82% at 20%, 87% at 24%, 93% at 30%. GRPO did not raise it on the 15% base (the first regime study
  and ``toy_rl_check``, up to 8x the preset's budget), nor by more than 1.2 pp at its best of 1e-5, 3e-5 and 1e-4 on
  the 17, 18 and 20% bases (``regime_mix_probe.md``, 2 seeds): their errors are not one decision a reward can
  correct;
- with 40% of the spelled solutions slipping (``regime.SLIP``) at a 20% spelled share, the default, the base
  answers readable q0 51% of the time (``toy_premise_validation_slip40.md``; 54% in the probe), GRPO and GRPO-long
  at their best rate raise that to 91-92% within the regime preset's budget (80-92% over the three rates), and
  hard problems stay unreadable (98% of them 0 of 32 on q0).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from rich.console import Console

from tagrpo.common.fields import helped
from tagrpo.toy.pretrain import PretrainConfig, build_base, marker_matches, recipe_settings
from tagrpo.toy.regime import MIX, SLIP, corpus, tokenizer_texts

RECIPE = 1  # bump when the regime world, the tokenizer or the training loop changes what a config produces
SHIPPED = Path(__file__).parent / "regime_checkpoint"  # RegimePretrainConfig()'s result (3.9 MB)


@dataclass
class RegimePretrainConfig(PretrainConfig):
    """Settings of the regime world's pretraining: ``PretrainConfig``'s with their own defaults, ``add_first`` and
    ``slip``."""

    output_dir: str = helped("outputs/regime_base", "the model directory (reused when its marker matches)")
    steps: int = helped(700, "optimizer steps (chosen on validation problems: toy_premise_validation_*.md)")
    corpus_size: int = helped(60000, "question-solution pairs drawn from the train triples")
    mix: dict = field(default_factory=lambda: dict(MIX), metadata={"help": "share of each surface form, as JSON"})
    add_first: float = helped(0.7, "share of the corpus's solutions that add first (the rest subtract first)")
    slip: float = helped(SLIP, "share of the corpus's spelled (q0's form) solutions that add the c given away")


def pretrain_regime_base(cfg: RegimePretrainConfig, console: Console | None = None) -> str:
    """The regime world's base model directory (reused when its marker matches ``cfg``)."""
    pairs = partial(corpus, cfg.corpus_size, cfg.seed, cfg.mix, cfg.add_first, cfg.slip)
    return build_base(cfg, RECIPE, pairs, tokenizer_texts, console)


def recipe_id(cfg: RegimePretrainConfig | None = None) -> str:
    """12 hex digits naming ``cfg``'s settings and the recipe (the default config's: the shipped base): a cached
    result keyed by it is never reused for another base."""
    settings = json.dumps(recipe_settings(cfg or RegimePretrainConfig(), RECIPE), sort_keys=True)
    return hashlib.sha256(settings.encode()).hexdigest()[:12]


def shipped_matches() -> bool:
    """Whether the shipped checkpoint is what ``RegimePretrainConfig()`` produces (its marker says so)."""
    return marker_matches(SHIPPED, RegimePretrainConfig(), RECIPE)
