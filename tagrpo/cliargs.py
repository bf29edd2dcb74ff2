"""Command-line flags from dataclasses: one ``--flag`` per field, with the field's help, type, choices and default.

Flags use dashes (``--max-new-tokens``; ``--max_new_tokens`` works too), booleans come in pairs
(``--chat-template`` / ``--no-chat-template``), and a flag left out is absent from the parsed namespace, so the
dataclass default (or a YAML file) decides. ``tagrpo train`` uses transformers' ``HfArgumentParser`` instead,
which knows TRL's field types; both give every named mode its list of valid values.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Mapping, Sequence


def helped(default, text: str):
    """A dataclass field with a default and the help text its command-line flag shows."""
    return dataclasses.field(default=default, metadata={"help": text})


def _field_type(annotation) -> type | None:
    text = str(annotation)
    for name, kind in (("bool", bool), ("int", int), ("float", float), ("dict", dict), ("str", str)):
        if name in text:
            return kind
    return None


def _default(f: dataclasses.Field):
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def add_dataclass_arguments(
    parser: argparse.ArgumentParser, cls, choices: Mapping[str, Sequence[str]] | None = None, skip: Sequence = ()
) -> argparse.ArgumentParser:
    """One flag per init field of ``cls`` (see the module doc); ``choices`` restricts named modes."""
    choices = choices or {}
    for f in dataclasses.fields(cls):
        if not f.init or f.name in skip:
            continue
        kind, default = _field_type(f.type), _default(f)
        text = f.metadata.get("help", "")
        if f.name in choices and not all(str(c) in text for c in choices[f.name]):
            text += f"; one of: {', '.join(map(str, choices[f.name]))}"
        if "default" not in text:
            text += f" (default: {json.dumps(default) if isinstance(default, dict) else default})"
        flags = [f"--{f.name.replace('_', '-')}"] + ([f"--{f.name}"] if "_" in f.name else [])
        kw = dict(dest=f.name, default=argparse.SUPPRESS, help=text.replace("%", "%%"))
        if kind is bool:
            parser.add_argument(*flags, action=argparse.BooleanOptionalAction, **kw)
            continue
        if f.name in choices:
            kw["choices"] = list(choices[f.name])
        parser.add_argument(*flags, type=json.loads if kind is dict else kind or str, **kw)
    return parser


def dataclass_values(args: argparse.Namespace, cls) -> dict:
    """The fields of ``cls`` that were given on the command line."""
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
