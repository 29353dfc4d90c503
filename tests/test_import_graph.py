"""The package's imports, read from its source (nothing is imported): no module imports one that imports it back,
directly or through others, and long-term memory (`graph/memory/`) imports nothing from `graph/backends/`.

Every import statement counts, wherever it stands: at the top of a module, inside a function (a lazy import
still ties the two modules together), under `if TYPE_CHECKING:`. An import names the module it loads:
`from graph.memory import store` the module `graph.memory.store`, `from graph.memory.store import TODO` that
module too. Not counted: the parent packages Python loads first (`graph/__init__.py` and the subpackages'
`__init__.py` import no module of the package when they load) and `importlib.import_module` calls with names
computed at run time (`graph/__init__.py` loads its exports that way, on first use).
"""

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "graph"


def module_name(path: Path) -> str:
    """The dotted name of a module file under the project root (a package's `__init__.py` is the package)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted((ROOT / PACKAGE).rglob("*.py"))}


def imported(importer: str, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The modules of the package that one import statement of `importer` loads."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:  # relative: from the importer's package, `level` packages up
            package = importer.split(".") if MODULES[importer].name == "__init__.py" else importer.split(".")[:-1]
            base = ".".join([*package[: len(package) - node.level + 1], *([base] if base else [])])
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
    for name in names:
        if name == PACKAGE or name.startswith(f"{PACKAGE}."):
            yield name


def import_edges() -> dict[str, dict[str, int]]:
    """For each module of the package, the modules of the package it imports, each with the line of an import."""
    edges: dict[str, dict[str, int]] = {}
    for name, path in MODULES.items():
        found: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in imported(name, node):
                    found.setdefault(target, node.lineno)
        edges[name] = found
    return edges


def cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """One cycle through each group of modules that import each other (directly or through others), each as
    the modules in import order, the first repeated at the end."""
    reaches = {name: _reachable(edges, name) for name in edges}
    found: list[list[str]] = []
    seen: set[str] = set()
    for name in sorted(edges):
        if name in seen or name not in reaches[name]:
            continue
        group = {other for other in reaches[name] if name in reaches[other]}
        seen |= group
        found.append(_path_back(edges, name, group))
    return found


def _reachable(edges: dict[str, dict[str, int]], start: str) -> set[str]:
    reached: set[str] = set()
    stack = list(edges[start])
    while stack:
        name = stack.pop()
        if name not in reached and name in edges:
            reached.add(name)
            stack.extend(edges[name])
    return reached


def _path_back(edges: dict[str, dict[str, int]], start: str, group: set[str]) -> list[str]:
    """The shortest import path from `start` back to itself within `group` (breadth first)."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for name in frontier:
            for target in sorted(edges[name]):
                if target == start:
                    path = [name]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if target in group and target not in previous:
                    previous[target] = name
                    following.append(target)
        frontier = following
    raise AssertionError(f"{start} is in an import cycle that has no path back to it")


def described(edges: dict[str, dict[str, int]], cycle: list[str]) -> str:
    """A cycle as a reader finds it: each import with its file and line."""
    steps = [
        f"{MODULES[a].relative_to(ROOT)}:{edges[a][b]} imports {b}" for a, b in zip(cycle, cycle[1:], strict=False)
    ]
    return " -> ".join(cycle) + "\n    " + "\n    ".join(steps)


@pytest.fixture(scope="module")
def edges() -> dict[str, dict[str, int]]:
    return import_edges()


def test_the_reading_finds_every_kind_of_import():
    """The rules below see top-level, function-local, relative and submodule imports alike."""
    source = ast.parse(
        "from graph.memory import store\nfrom .changes import commit_changes\n"
        "def f():\n    import graph.backends.atomic\n    from graph.memory.context import select_todos\n"
    )
    found = {target for node in ast.walk(source) if isinstance(node, ast.Import | ast.ImportFrom)
             for target in imported("graph.memory.admin", node)}
    assert found == {"graph.memory.store", "graph.memory.changes", "graph.backends.atomic", "graph.memory.context"}
    assert cycles({"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 4}}) == [["a", "b", "c", "a"]]


def test_no_module_of_the_package_imports_one_that_imports_it_back(edges):
    found = cycles(edges)
    assert not found, "import cycles:\n" + "\n".join(described(edges, cycle) for cycle in found)


def test_long_term_memory_imports_nothing_from_the_backends(edges):
    upward = [
        f"{MODULES[name].relative_to(ROOT)}:{line} imports {target}"
        for name, targets in sorted(edges.items())
        if name == f"{PACKAGE}.memory" or name.startswith(f"{PACKAGE}.memory.")
        for target, line in sorted(targets.items())
        if target == f"{PACKAGE}.backends" or target.startswith(f"{PACKAGE}.backends.")
    ]
    assert not upward, "graph/memory/ imports graph/backends/:\n" + "\n".join(upward)


def test_the_settings_import_nothing_of_the_package(edges):
    assert edges[f"{PACKAGE}.settings"] == {}, "the settings sit below every other module (the memory kinds too)"
