"""Offline rephrasing of training questions: N problem-equivalent transformations per question, checked.

``run_rephrase(RephraseConfig(...))`` (``tagrpo rephrase``) writes the data set ``tagrpo train`` reads. The
pieces: prompt templates and the type plan (:mod:`~tagrpo.rephrase.templates`), the backends and their registry
(:mod:`~tagrpo.rephrase.backends`: OpenAI-compatible servers, local transformers models, and whatever registers
there, such as the toy world's rules), the crash-safe cache, and the equivalence checks.
"""

from tagrpo.rephrase.backends import register_backend
from tagrpo.rephrase.checks import CheckResult, check_rephrasing, clean_response, extract_numbers
from tagrpo.rephrase.config import register_source
from tagrpo.rephrase.run import RephraseConfig, run_rephrase
from tagrpo.rephrase.templates import DEFAULT_TEMPLATES, TRANSFORM_TYPES, load_templates, template_hash, type_plan

__all__ = [
    "DEFAULT_TEMPLATES",
    "TRANSFORM_TYPES",
    "CheckResult",
    "RephraseConfig",
    "check_rephrasing",
    "clean_response",
    "extract_numbers",
    "load_templates",
    "register_backend",
    "register_source",
    "run_rephrase",
    "template_hash",
    "type_plan",
]
