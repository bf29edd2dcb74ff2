"""The parser of every ``tagrpo`` command: TRL's ``TrlParser`` (TRL's copy of transformers' ``HfArgumentParser``,
which imports neither transformers nor torch) over the command's dataclass, with what the project's flags need
beyond it.

``HfArgumentParser`` gives each init field of the dataclasses ``--name`` (and ``--dashed-name``), its type, its
default and the help of the field's metadata (:func:`tagrpo.common.fields.helped`); a boolean is ``--name`` or
``--name true|false``, and ``--no-name`` when it defaults to True. :class:`CommandParser` adds:

- ``choices``: the valid values of the command's named modes (read when the parser is built, so a registry's
  later entries count), listed in the usage (``--anchor {original,none,...}``) and checked by argparse;
- the help of a field ends with its valid values where the help does not name them all, and with its default;
- ``--no-name`` (also ``--no_name``) for a boolean that defaults to False, as for one that defaults to True;
- a ``dict`` field reads JSON (``--mix '{"symbolic": 1.0}'``);
- a field whose metadata says ``positional=True`` is a positional argument (``tagrpo models fetch NAME``),
  optional where the field has a default.

:func:`parse_dataclasses` builds the dataclasses from the flags (``__post_init__`` checks run there);
:func:`given_flags` returns only the flags given, for a command whose defaults come from elsewhere too (a YAML
file and overrides, or another mode that needs no dataclass).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence

try:
    from trl import TrlParser
except ImportError:  # verl's environment (`tagrpo verl convert` there) has transformers but no TRL
    from transformers import HfArgumentParser as TrlParser


def _shown(default) -> str:
    text = json.dumps(default) if isinstance(default, dict) else str(default)
    return text.replace("%", "%%")


class CommandParser(TrlParser):
    """``TrlParser(dataclass_types)`` with the additions of the module docstring; ``defaults_in_help=False``
    leaves the defaults out of the help (where another layer sets them); ``kwargs`` go to argparse (``prog``,
    ``description``, ``epilog``, ``formatter_class``; help is plain text unless given)."""

    def __init__(self, dataclass_types: Iterable[type], choices: Mapping[str, Sequence] | None = None,
                 defaults_in_help: bool = True, **kwargs):
        dataclass_types = list(dataclass_types)
        self.mode_choices = {name: list(valid) for name, valid in (choices or {}).items()}
        self.defaults_in_help = defaults_in_help
        self.fields = {f.name: f for cls in dataclass_types for f in dataclasses.fields(cls) if f.init}
        kwargs.setdefault("formatter_class", argparse.HelpFormatter)
        super().__init__(dataclass_types, **kwargs)

    def add_argument(self, *flags, **kwargs):
        """Every flag ``HfArgumentParser`` adds for a field passes here (the others unchanged)."""
        name = flags[0].lstrip("-") if flags else ""
        if name not in self.fields or "action" in kwargs or "dest" in kwargs:
            return super().add_argument(*flags, **kwargs)
        valid = self.mode_choices.get(name)
        if valid is not None:
            kwargs["choices"] = valid
        if kwargs.get("type") is dict:
            kwargs["type"] = json.loads
        default = kwargs.get("default")
        text = kwargs.get("help") or ""
        if valid is not None and not all(str(v) in text for v in valid):
            text += f"; one of: {', '.join(map(str, valid))}"
        if self.defaults_in_help and "default" not in text and not kwargs.get("required"):
            text += f" (default: {_shown(default)})"
        kwargs["help"] = text
        if kwargs.pop("positional", False):
            if not kwargs.pop("required", False):
                kwargs["nargs"] = "?"
            return super().add_argument(name, **kwargs)
        action = super().add_argument(*flags, **kwargs)
        if self.fields[name].type is bool and default is False:  # the type as HfArgumentParser resolved it
            negations = dict.fromkeys([f"--no_{name}", f"--no-{name.replace('_', '-')}", f"--no-{name}"])
            super().add_argument(*negations, action="store_false", dest=name, default=False, help=f"{name}=False")
        return action


def parse_dataclasses(parser: CommandParser, argv: Sequence[str]) -> tuple:
    """The parser's dataclasses built from ``argv`` (then a namespace of its other arguments, if it has any);
    an argument it does not know is a usage error, as with ``parse_args``."""
    *outputs, rest = parser.parse_args_into_dataclasses(list(argv), return_remaining_strings=True,
                                                        look_for_args_file=False)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return tuple(outputs)


def given_flags(parser: CommandParser, argv: Sequence[str]) -> dict:
    """The values of the dataclass flags given in ``argv`` (a flag left out is absent, required ones included)
    and of the parser's other arguments. Needs TRL's parser (``set_defaults_with_config``)."""
    parser.set_defaults_with_config(**dict.fromkeys(parser.fields, argparse.SUPPRESS))
    return vars(parser.parse_args(list(argv)))
