"""The ``tagrpo`` command line: parse the arguments into an entry point's dataclass, then call it."""

from tagrpo.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
