"""The package's layers only import downwards: every import of ``tagrpo`` (module level or function-local, and
import strings such as ``"tagrpo.toy.world:benchmark_rows"``) read from the source, none upwards."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "tagrpo"
# Lower first. The first layer's helpers import each other, and so do the last layer's entry points: the command
# line, ``python -m tagrpo`` and the package root (which registers the toy world). Within the other layers, two
# parts do not import each other; rewards sits above data (it reads boxed answers with tagrpo.data.answers).
LAYERS = (
    ("common",),
    ("core",),
    ("data",),
    ("rewards",),
    ("generation", "models"),
    ("rephrase", "evaluation"),
    ("trainer",),
    ("toy", "integrations"),
    ("experiments",),
    ("cli", "__main__", "__init__"),
)
LAYER = {part: index for index, parts in enumerate(LAYERS) for part in parts}
_MODULE_STRING = re.compile(r"tagrpo(?:\.\w+)+(?::\w+)?")


def part_of(module: str) -> str:
    """``tagrpo.rephrase.config`` -> ``rephrase``; the package root is ``__init__``."""
    return module.split(".")[1] if "." in module else "__init__"


def is_module(name: str) -> bool:
    """Whether ``name`` (``tagrpo.x.y``) is a module or package of the source tree (``"tagrpo.anchor"``, a config
    key, is not)."""
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imported_modules(source: str, module: str) -> list[tuple[int, str]]:
    """``(line, module)`` for every ``tagrpo`` module that ``source`` (the text of ``module``) imports."""
    found = []
    package = module if module == "tagrpo" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base]).strip(".")
            if base == "tagrpo":  # ``from tagrpo import evaluation`` imports a part, ``__version__`` the root
                found += [(node.lineno, f"tagrpo.{a.name}" if a.name in LAYER else base) for a in node.names]
            else:
                found += [(node.lineno, base)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _MODULE_STRING.fullmatch(node.value):
            if is_module(node.value.split(":")[0]):
                found += [(node.lineno, node.value.split(":")[0])]
    return [(line, name) for line, name in found if name == "tagrpo" or name.startswith("tagrpo.")]


def upward(source: str, module: str) -> list[str]:
    """The imports of ``module`` that go up (or sideways within a layer), each as one readable line."""
    here = part_of(module)
    problems = []
    for line, target in imported_modules(source, module):
        there = part_of(target)
        shared = LAYER[there] == LAYER[here] and LAYER[here] in (0, len(LAYERS) - 1)
        if there == here or LAYER[there] < LAYER[here] or shared:
            continue
        problems.append(f"{module}:{line} imports {target}: {here} (layer {LAYER[here]}) may not import {there} "
                        f"(layer {LAYER[there]})")
    return problems


def modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out.append((".".join(parts[:-1] if parts[-1] == "__init__" else parts), path))
    return out


def test_every_part_of_the_package_has_a_layer():
    assert {part_of(module) for module, _ in modules()} <= set(LAYER)


def test_no_module_imports_upwards():
    problems = [p for module, path in modules() for p in upward(path.read_text(encoding="utf-8"), module)]
    assert not problems, "\n".join(problems)


def test_the_check_sees_function_local_imports_and_import_strings():
    source = (
        "from tagrpo.core import pass_at_k\n"
        "def rows():\n"
        "    from tagrpo.toy.world import question_rows\n"
        "    return question_rows\n"
        'BUILTINS = {"toy_world": "tagrpo.toy.world:benchmark_rows"}\n'
        "from . import evaluation\n"
    )
    assert upward(source, "tagrpo.rephrase.config") == [
        "tagrpo.rephrase.config:3 imports tagrpo.toy.world: rephrase (layer 5) may not import toy (layer 7)",
        "tagrpo.rephrase.config:5 imports tagrpo.toy.world: rephrase (layer 5) may not import toy (layer 7)",
    ]
    assert upward("from .. import evaluation\nfrom tagrpo import __version__\n", "tagrpo.rephrase.config") == [
        "tagrpo.rephrase.config:1 imports tagrpo.evaluation: rephrase (layer 5) may not import evaluation (layer 5)",
        "tagrpo.rephrase.config:2 imports tagrpo: rephrase (layer 5) may not import __init__ (layer 9)",
    ]
    assert upward("from tagrpo.evaluation.sampling import generate_batch\n", "tagrpo.rephrase.backends") == [
        "tagrpo.rephrase.backends:1 imports tagrpo.evaluation.sampling: rephrase (layer 5) may not import "
        "evaluation (layer 5)"
    ]
    assert upward("import tagrpo.toy.plugins\n", "tagrpo") == []  # the root registers the toy world


def test_the_world_may_not_import_its_harness():
    assert upward("from tagrpo.experiments.arms import ARMS\n", "tagrpo.toy.worlds") == [
        "tagrpo.toy.worlds:1 imports tagrpo.experiments.arms: toy (layer 7) may not import experiments (layer 8)"
    ]
    assert upward("from tagrpo.toy.worlds import question_rows\n", "tagrpo.experiments.demo") == []
