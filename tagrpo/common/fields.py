"""How a dataclass field declares its command-line flag: :func:`helped` gives it a default and the help text.

Every ``tagrpo`` command parses its dataclass with :class:`tagrpo.common.parser.CommandParser` (transformers'
``HfArgumentParser``, by way of TRL's ``TrlParser``), which reads the flag's help from the field's metadata. This
module imports nothing heavy: the dataclasses that use it load without torch, transformers or TRL.
"""

from __future__ import annotations

import dataclasses


def helped(default, text: str, **flag):
    """A dataclass field with ``default`` (``dataclasses.MISSING``: a required one) and the help text its flag
    shows; ``flag`` adds metadata for the parser (``positional=True``: an argument without ``--``)."""
    return dataclasses.field(default=default, metadata={"help": text, **flag})
