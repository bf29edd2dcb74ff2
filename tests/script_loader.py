"""Load a script of studies/, benchmarks/ or tools/ as a module by its path (they are entry points, not packages)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def load_script(path: Path) -> ModuleType:
    """The module of the script at ``path``, executed once under its file name (its ``main()`` is not run)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
