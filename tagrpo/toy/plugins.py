"""The toy world's entries in the package's registries. ``tagrpo/__init__.py`` declares this module a plug-in, and
the registries import it the first time one of them is used (:mod:`tagrpo.common.registry`), not with the package:

- the benchmark ``toy_world`` (``load_benchmark("toy_world")``, ``tagrpo eval --benchmarks toy_world``): q0 of
  64 held-out problems (:func:`tagrpo.toy.world.benchmark_rows`);
- the question source ``toy_world`` of ``tagrpo rephrase --data toy_world``: ``--limit`` (default 64) training
  questions drawn with ``--seed``, without rephrasings;
- the rephrase backend ``rule`` (``--backend rule``, :mod:`tagrpo.toy.rephraser`): the rule-based rephraser, its
  exact parse check in place of the generic ones, a check of the rows and the type plan before any request, and
  its own solver whatever ``--solver`` names.

The world and its rephraser are plain Python: importing this module loads neither torch nor transformers.
"""

from __future__ import annotations

from tagrpo.data.benchmarks import register_benchmark
from tagrpo.rephrase.backends import register_backend
from tagrpo.rephrase.config import register_source
from tagrpo.toy.rephraser import RuleBackend, check_rule_rows, check_toy
from tagrpo.toy.world import benchmark_rows, question_rows

SOURCE_QUESTIONS = 64  # questions of ``tagrpo rephrase --data toy_world`` without --limit


def rephrase_rows(limit: int | None, seed: int) -> list[dict]:
    """``limit`` (default :data:`SOURCE_QUESTIONS`) training questions of seed ``seed`` as rephrase source rows."""
    rows = question_rows(limit or SOURCE_QUESTIONS, seed, 0)
    return [{**{k: v for k, v in r.items() if k != "rephrasings"}, "benchmark": "toy_world", "reward": "math"}
            for r in rows]


def rule_backend(cfg, model: str, solver: bool) -> RuleBackend:
    """The rule backend; it needs no model and its solver reads the answer off the parsed problem."""
    return RuleBackend()


register_benchmark("toy_world", benchmark_rows)
register_source("toy_world", rephrase_rows)
register_backend("rule", rule_backend, check=check_toy, preflight=check_rule_rows, self_solving=True)
