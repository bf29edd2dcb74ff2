"""The package's layers only import downwards: every import of ``tagrpo`` (module level or function-local, and
import strings such as ``"tagrpo.toy.world:benchmark_rows"``) read from the source, none upwards. Within a part, no
two modules import each other at module level (no import cycle), and importing the mathematics loads no more than
it needs."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "tagrpo"
# Lower first. The first layer's helpers import each other, and so do the last layer's entry points: the command
# line, ``python -m tagrpo`` and the package root (which names the toy world's plug-in module to the registries).
# Within the other layers, two parts do not import each other; rewards sits above data (it reads boxed answers with
# tagrpo.data.answers).
LAYERS = (
    ("common",),
    ("core",),
    ("data",),
    ("rewards",),
    ("generation", "models"),
    ("rephrase", "evaluation"),
    ("trainer",),
    ("toy", "integrations"),
    ("demo",),
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
        "tagrpo.rephrase.config:2 imports tagrpo: rephrase (layer 5) may not import __init__ (layer 10)",
    ]
    assert upward("from tagrpo.evaluation.sampling import generate_batch\n", "tagrpo.rephrase.backends") == [
        "tagrpo.rephrase.backends:1 imports tagrpo.evaluation.sampling: rephrase (layer 5) may not import "
        "evaluation (layer 5)"
    ]
    assert upward('declare_plugins("tagrpo.toy.plugins")\n', "tagrpo") == []  # the root names the toy world's plug-in


def test_the_world_may_not_import_its_harness():
    assert upward("from tagrpo.demo.arms import ARMS\n", "tagrpo.toy.worlds") == [
        "tagrpo.toy.worlds:1 imports tagrpo.demo.arms: toy (layer 7) may not import demo (layer 8)"
    ]
    assert upward("from tagrpo.toy.worlds import question_rows\n", "tagrpo.demo.config") == []


def _runs_at_import(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of ``body`` that run when the module is imported: not those of functions (a class body
    runs), nor those under ``if TYPE_CHECKING:``."""
    out = []
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            out += _runs_at_import(node.orelse)
            continue
        out.append(node)
        for field in ("body", "orelse", "finalbody", "handlers"):
            out += _runs_at_import(getattr(node, field, []))
    return out


def module_level_imports(source: str, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``module`` (a package's ``__init__`` when ``is_package``) imports when it is
    imported (``from tagrpo.x import y`` is module ``tagrpo.x.y`` when that is one, else ``tagrpo.x``)."""
    package = module if is_package else module.rsplit(".", 1)[0]
    found = set()
    for node in _runs_at_import(ast.parse(source).body):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - node.level + 1], base]).strip(".")
            found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names}
    return {name for name in found if name in known and name != module}


def import_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    """Module -> the modules it imports at module level, for ``sources`` (module name -> its text). A package's name
    stands for its ``__init__``; keys ``"x.__init__"`` only mark ``x`` as a package."""
    known = {name.removesuffix(".__init__") for name in sources}
    graph = {}
    for name, source in sources.items():
        module = name.removesuffix(".__init__")
        graph[module] = module_level_imports(source, module, name != module, known)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` as ``[a, b, ..., a]``, or ``[]`` when there is none (depth-first search)."""
    state: dict[str, str] = {}  # "open": on the current path; "done": no cycle through it
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = "open"
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        state[node] = "done"
        path.pop()
        return []

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return []


def package_sources() -> dict[str, str]:
    out = {}
    for module, path in modules():
        name = f"{module}.__init__" if path.name == "__init__.py" else module
        out[name] = path.read_text(encoding="utf-8")
    return out


def test_no_module_level_import_cycle():
    graph = import_graph(package_sources())
    assert graph["tagrpo.rephrase.client"] >= {"tagrpo.rephrase.protocol"}  # the graph resolves real imports
    assert "tagrpo.rephrase.client" not in graph["tagrpo.rephrase.backends"]  # built lazily, in a function
    cycle = find_cycle(graph)
    assert not cycle, " -> ".join(cycle)


def test_the_cycle_check_finds_a_cycle_and_passes_what_has_none():
    cyclic = {
        "tagrpo.a.__init__": "from tagrpo.a.one import f\n",
        "tagrpo.a.one": "from . import two\n",
        "tagrpo.a.two": "import json\nfrom tagrpo.a.one import f\n",
    }
    assert find_cycle(import_graph(cyclic)) == ["tagrpo.a.one", "tagrpo.a.two", "tagrpo.a.one"]
    lazy = {  # the same modules, with the import back in a function, under TYPE_CHECKING or a string
        **cyclic,
        "tagrpo.a.two": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n"
            "    from tagrpo.a.one import f\n"
            "def g():\n"
            "    from tagrpo.a import one\n"
            "PLUGIN = 'tagrpo.a.one'\n"
            "class C:\n"
            "    import json\n"
        ),
    }
    assert import_graph(lazy) == {"tagrpo.a": {"tagrpo.a.one"}, "tagrpo.a.one": {"tagrpo.a.two"}, "tagrpo.a.two": set()}
    assert find_cycle(import_graph(lazy)) == []
    assert find_cycle({"x": {"x"}}) == ["x", "x"] and find_cycle({"x": {"y"}, "y": set()}) == []


def test_importing_the_mathematics_loads_neither_the_toy_world_nor_the_rephraser():
    code = (
        "import sys\n"
        "import tagrpo.core\n"
        "print(sorted(m for m in sys.modules if m.split('.')[:2] in (['tagrpo', 'toy'], ['tagrpo', 'rephrase'],"
        " ['tagrpo', 'data'])))\n"
        "from tagrpo.data.benchmarks import benchmark_names\n"
        "print('toy_world' in benchmark_names(), 'tagrpo.toy.plugins' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[]", "True True"]  # the registry imports the plug-in on its first use
