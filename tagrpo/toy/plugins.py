"""The toy world's entries in the package's registries. ``tagrpo/__init__.py`` declares this module a plug-in, and
the registries import it the first time one of them is used (:mod:`tagrpo.common.registry`), not with the package:

- the benchmark ``toy_world`` (``load_benchmark("toy_world")``, ``tagrpo eval --benchmarks toy_world``): q0 of
  64 held-out problems (:func:`tagrpo.toy.world.benchmark_rows`);
- the question source ``toy_world`` of ``tagrpo rephrase --data toy_world``: ``--limit`` (default 64) training
  questions drawn with ``--seed``, without rephrasings;
- the rephrase backend ``rule`` (``--backend rule``, :mod:`tagrpo.toy.rephraser`): the rule-based rephraser, its
  exact parse check in place of the generic ones, a check of the rows and the type plan before any request, and
  its own solver whatever ``--solver`` names;
- the rephrased data sets ``toy_world`` and ``toy_regime`` (``tagrpo probe --data toy_regime --hard-share H``):
  :data:`PROBE_QUESTIONS` held-out test questions, q0 spelled, with the main plan's rule rephrasings (symbolic,
  narrative, words), each rephrasing's form recorded as its type.

The world and its rephraser are plain Python: importing this module loads neither torch nor transformers.
"""

from __future__ import annotations

from tagrpo.data.benchmarks import register_benchmark
from tagrpo.data.named import register_data
from tagrpo.rephrase.backends import register_backend
from tagrpo.rephrase.config import register_source
from tagrpo.toy import regime, world
from tagrpo.toy.rephraser import RuleBackend, check_rule_rows, check_toy
from tagrpo.toy.world import benchmark_rows, question_rows
from tagrpo.toy.worlds import MAX_COMPLETION

SOURCE_QUESTIONS = 64  # questions of ``tagrpo rephrase --data toy_world`` without --limit
PROBE_QUESTIONS = 1000  # rows of the data sets toy_world and toy_regime (test problems, drawn with replacement)
PROBE_SEED = 3000


def rephrase_rows(limit: int | None, seed: int) -> list[dict]:
    """``limit`` (default :data:`SOURCE_QUESTIONS`) training questions of seed ``seed`` as rephrase source rows."""
    rows = question_rows(limit or SOURCE_QUESTIONS, seed, 0)
    return [{**{k: v for k, v in r.items() if k != "rephrasings"}, "benchmark": "toy_world", "reward": "math"}
            for r in rows]


def _typed(rows: list[dict]) -> list[dict]:
    forms = world.PLANS["main"]
    return [{**r, "rephrasing_provenance": [{"type": forms[i % len(forms)]} for i in range(len(r["rephrasings"]))]}
            for r in rows]


def toy_world_data() -> list[dict]:
    """The basic world's held-out questions with their rule rephrasings, as a rephrased data set."""
    return _typed(question_rows(PROBE_QUESTIONS, PROBE_SEED, 3, "main", split="test"))


def toy_regime_data(hard_share: float = 0.6) -> list[dict]:
    """The regime world's held-out questions (a share ``hard_share`` hard) with their rule rephrasings."""
    return _typed(regime.question_rows(PROBE_QUESTIONS, PROBE_SEED, hard_share, 3, "main", "test"))


def rule_backend(cfg, model: str, solver: bool) -> RuleBackend:
    """The rule backend; it needs no model and its solver reads the answer off the parsed problem."""
    return RuleBackend()


register_benchmark("toy_world", benchmark_rows)
register_source("toy_world", rephrase_rows)
register_data("toy_world", toy_world_data, description="the basic embedded world's test questions",
              defaults={"template": "plain", "max_new_tokens": MAX_COMPLETION["basic"]})
register_data("toy_regime", toy_regime_data, ("hard_share",), "the regime world's test questions",
              defaults={"template": "plain", "max_new_tokens": MAX_COMPLETION["regime"]})
register_backend("rule", rule_backend, check=check_toy, preflight=check_rule_rows, self_solving=True)
