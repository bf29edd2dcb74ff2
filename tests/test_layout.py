"""The repository's folders each hold one kind of thing, and nothing edits ``sys.path``.

``studies/`` (study entry points and their results), ``benchmarks/`` (performance entry points and theirs) and
``tools/`` (developer tools) hold scripts that import the library and third-party packages only, never one
another; ``tagrpo/`` imports none of them. Read from the source (AST), so a new file is covered without a list.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT_FOLDERS = ("studies", "benchmarks", "tools")
SCRIPTS = {path.stem: path for folder in SCRIPT_FOLDERS for path in (ROOT / folder).glob("*.py")}


def imported_roots(source: str) -> set[str]:
    """The top-level names of every module ``source`` imports (module level or inside a function)."""
    roots = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            roots.add(node.module.split(".")[0])
    return roots


def path_edits(source: str) -> list[int]:
    """Lines that change the import path: ``sys.path.insert/append/extend``, an assignment to ``sys.path`` or a
    slice of it, and pytest's ``monkeypatch.syspath_prepend``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if node.func.attr in ("insert", "append", "extend") and ast.unparse(owner) == "sys.path":
                lines.append(node.lineno)
            elif node.func.attr == "syspath_prepend":
                lines.append(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(ast.unparse(t).startswith("sys.path") for t in targets):
                lines.append(node.lineno)
    return sorted(lines)


def python_files() -> list[Path]:
    folders = ("tagrpo", "tests", *SCRIPT_FOLDERS)
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py") if ".venv" not in p.parts)


def test_the_checks_see_what_they_look_for():
    assert imported_roots("import a.b\nfrom c.d import e\ndef f():\n    from g import h\nfrom . import x\n") == {
        "a", "c", "g"}
    source = ("import sys\nsys.path.insert(0, 'x')\nsys.path[:0] = ['y']\nsys.path += ['z']\n"
              "def t(monkeypatch):\n    monkeypatch.syspath_prepend('w')\nprint(sys.path)\n")
    assert path_edits(source) == [2, 3, 4, 6]


def test_no_file_edits_the_import_path():
    problems = [f"{path.relative_to(ROOT)}:{line} edits sys.path" for path in python_files()
                for line in path_edits(path.read_text(encoding="utf-8"))]
    assert not problems, "\n".join(problems)


def test_scripts_import_the_library_never_one_another():
    problems = []
    for name, path in SCRIPTS.items():
        siblings = imported_roots(path.read_text(encoding="utf-8")) & (set(SCRIPTS) - {name})
        problems += [f"{path.relative_to(ROOT)} imports the script {s}" for s in sorted(siblings)]
    assert not problems, "\n".join(problems)


def test_the_library_imports_no_script_folder():
    problems = []
    for path in (ROOT / "tagrpo").rglob("*.py"):
        found = imported_roots(path.read_text(encoding="utf-8")) & {*SCRIPT_FOLDERS, *SCRIPTS}
        problems += [f"{path.relative_to(ROOT)} imports {name}" for name in sorted(found)]
    assert not problems, "\n".join(problems)


def test_every_script_is_an_entry_point_with_results_beside_it():
    for name, path in SCRIPTS.items():
        assert 'if __name__ == "__main__":' in path.read_text(encoding="utf-8"), f"{name} is not an entry point"
    for folder in SCRIPT_FOLDERS:
        assert (ROOT / folder / "results").is_dir()
        assert not (ROOT / folder / "__init__.py").exists()  # entry points, not a package


def test_test_files_have_unique_names():
    """pytest imports test modules by basename (rootdir-relative ``pythonpath``, no packages): two files of one name
    in different tiers cannot be collected in one run."""
    names = [p.name for p in (ROOT / "tests").rglob("test_*.py")]
    assert sorted({n for n in names if names.count(n) > 1}) == []
