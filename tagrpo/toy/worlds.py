"""The embedded worlds the demo and the benchmarks can train on, behind one interface.

- ``basic``: ``tagrpo.toy.world``, single-digit problems whose q0 form is rare in pretraining (the shipped base);
- ``regime``: ``tagrpo.toy.regime``, two-digit problems, a share ``hard_share`` of them with a tens word the base
  has never read (its base: ``tagrpo.toy.regime_base``, shipped in ``tagrpo/toy/regime_checkpoint``).

Both render the same forms and plans, so the arms, the trainer and the report are the same for both.
"""

from __future__ import annotations

import os
import random

from rich.console import Console

from tagrpo.common.modes import check_mode
from tagrpo.toy import regime, world

WORLDS = ("basic", "regime")
MAX_COMPLETION = {"basic": 28, "regime": 36}  # tokens; the longest solutions take 21 and 27


def question_rows(
    name: str, count: int, seed: int, num_rephrasings: int = 3, plan: str = "main", split: str = "train",
    hard_share: float = 0.6,
) -> list[dict]:  # fmt: skip
    """Rows ``id``, ``prompt``, ``answer``, ``rephrasings`` (and ``hard`` in the regime world)."""
    if check_mode("world", name, WORLDS) == "basic":
        return world.question_rows(count, seed, num_rephrasings, plan, split=split)
    return regime.question_rows(count, seed, hard_share, num_rephrasings, plan, split)


def premise_prompts(name: str, count: int, seed: int, hard_share: float = 0.6) -> tuple[list[str], dict[str, list]]:
    """Answers of ``count`` held-out problems and their prompts in every form and in the control's renamed q0."""
    module = world if check_mode("world", name, WORLDS) == "basic" else regime
    rng = random.Random(seed)
    if name == "basic":
        problems = [world.sample_problem(rng, "test") for _ in range(count)]
    else:
        problems = [regime.sample_problem(rng, "test", hard_share) for _ in range(count)]
    prompts = {form: [module.render(p, form) for p in problems] for form in module.FORMS}
    prompts["renamed"] = [module.rephrase(p, 1, "control")[0] for p in problems]
    return [str(p.answer) for p in problems], prompts


def resolve_world_base(name: str, base_dir: str | None, fallback_dir: str, console: Console | None = None) -> str:
    """The world's base model directory.

    basic: ``tagrpo.toy.pretrain.resolve_base`` (the shipped checkpoint by default). regime: ``base_dir`` as it is
    when it holds a model (any recipe: a smaller base for a quick look), else the shipped checkpoint while it
    matches the default recipe, else the default recipe pretrained into ``base_dir`` or ``fallback_dir``.
    """
    if check_mode("world", name, WORLDS) == "basic":
        from tagrpo.toy.pretrain import resolve_base

        return resolve_base(base_dir, fallback_dir, console)
    from tagrpo.toy.regime_base import SHIPPED, RegimePretrainConfig, pretrain_regime_base, shipped_matches

    console = console or Console()
    if base_dir is not None and os.path.exists(os.path.join(base_dir, "config.json")):
        console.print(f"base model: {base_dir}, as it is")
        return base_dir
    if base_dir is None and shipped_matches():
        console.print(f"base model: the shipped checkpoint {SHIPPED} (rebuild: see tagrpo/toy/regime_base.py)")
        return str(SHIPPED)
    return pretrain_regime_base(RegimePretrainConfig(output_dir=base_dir or fallback_dir), console)
