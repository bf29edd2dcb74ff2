"""Offline rephrasing of training questions: N problem-equivalent transformations per question, checked.

``run_rephrase(RephraseConfig(...))`` (``tagrpo rephrase``) writes the data set ``tagrpo train`` reads. The
pieces: prompt templates and the type plan (:mod:`~tagrpo.rephrase.templates`), backends (OpenAI-compatible
servers, local transformers models, the toy world's rules), the crash-safe cache, and the equivalence checks.
"""

from tagrpo.rephrase.checks import CheckResult, check_rephrasing, clean_response, extract_numbers
from tagrpo.rephrase.run import RephraseConfig, add_arguments, config_from_args, main, run_rephrase
from tagrpo.rephrase.templates import DEFAULT_TEMPLATES, TRANSFORM_TYPES, load_templates, template_hash, type_plan

__all__ = [
    "DEFAULT_TEMPLATES",
    "TRANSFORM_TYPES",
    "CheckResult",
    "RephraseConfig",
    "add_arguments",
    "check_rephrasing",
    "clean_response",
    "config_from_args",
    "extract_numbers",
    "load_templates",
    "main",
    "run_rephrase",
    "template_hash",
    "type_plan",
]
