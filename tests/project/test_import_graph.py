"""The project's imports, read from its source (nothing is imported): no module imports one that imports it back,
directly or through others, and no import runs up the layers (`LAYERS`).

The modules read are the package's (`graph/`) and those of the project's other packages (`prompts/`, `schemas/`,
`testing/`, `bench/`, `tests/`), so a circle through the test support, the benchmarks and the tests shows too.

Every import statement counts, wherever it stands: at the top of a module, inside a function (a lazy import
still ties the two modules together), under `if TYPE_CHECKING:`. An import names the module it loads:
`from graph.memory import store` the module `graph.memory.store`, `from graph.memory.store import TODO` that
module too. Not counted: the parent packages Python loads first (`graph/__init__.py` and the subpackages'
`__init__.py` import no module of the project when they load) and `importlib.import_module` calls with names
computed at run time (`graph/__init__.py` loads its exports that way, on first use).
"""

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "graph"
PACKAGES = (PACKAGE, "prompts", "schemas", "testing", "bench", "tests")
# The layers, lowest first: a module may import from its own layer and the ones below, never from one above. A
# module's layer is that of the longest name listed that is the module or a package holding it.
LAYERS = (
    ("prompts", "schemas"),
    # Import nothing of the package: the operator's settings, the graph's state, plain-text token estimates, the
    # bounded record the caches use, the cron schedules a reminder may have.
    (f"{PACKAGE}.settings", f"{PACKAGE}.state", f"{PACKAGE}.text_tokens", f"{PACKAGE}.recent", f"{PACKAGE}.names", f"{PACKAGE}.schedules"),
    (f"{PACKAGE}.run_context",),
    (f"{PACKAGE}.memory",),  # long-term memory
    (f"{PACKAGE}.thread",),  # short-term memory
    (f"{PACKAGE}.backends",),  # storage and models
    (f"{PACKAGE}.durability",),
    (f"{PACKAGE}.nodes", f"{PACKAGE}.runtime"),  # the nodes, and what one built graph hands them
    (f"{PACKAGE}.agent",),
    (PACKAGE,),  # the public names
    (f"{PACKAGE}.eval", f"{PACKAGE}.server"),
    ("testing.scripted_model",),  # the scripted chat model: `maistro demo` plays the tutorial with it
    (f"{PACKAGE}.app",),
    ("testing",),  # what the tests and the benchmarks both use
    ("bench",),
    ("tests",),
)


def module_name(path: Path) -> str:
    """The dotted name of a module file under the project root (a package's `__init__.py` is the package)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


def imported(importer: str, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The modules of the project that one import statement of `importer` loads."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:  # relative: from the importer's package, `level` packages up
            package = importer.split(".") if MODULES[importer].name == "__init__.py" else importer.split(".")[:-1]
            base = ".".join([*package[: len(package) - node.level + 1], *([base] if base else [])])
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
    for name in names:
        if name.split(".")[0] in PACKAGES:
            yield name


def import_edges() -> dict[str, dict[str, int]]:
    """For each module of the project, the modules of the project it imports, each with the line of an import."""
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


def layer(module: str) -> int:
    """The index in `LAYERS` of the module's layer."""
    ranks = [(len(name), rank) for rank, names in enumerate(LAYERS) for name in names if module == name or module.startswith(f"{name}.")]
    if not ranks:
        raise AssertionError(f"{module} is in no layer: add it (or its package) to LAYERS")
    return max(ranks)[1]


def arrows_up(edges: dict[str, dict[str, int]]) -> list[str]:
    """Each import of a module from a higher layer, with its file and line."""
    return [
        f"{MODULES[name].relative_to(ROOT)}:{line} imports {target} (layer {LAYERS[layer(target)][0]} is above {LAYERS[layer(name)][0]})"
        for name, targets in sorted(edges.items())
        for target, line in sorted(targets.items())
        if layer(target) > layer(name)
    ]


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


def test_the_reading_covers_the_benchmarks_and_the_tests(edges):
    """A circle through `bench/` and `tests/` is seen: their imports of each other and of the package are read."""
    assert "testing.openai_stub" in edges["bench.model_faults"]
    assert "bench.model_faults" in edges["tests.bench.test_model_faults"]
    assert "graph.thread.tokens" in edges["tests.thread.test_summary"]


def test_every_module_has_a_layer_and_the_layers_see_an_arrow_up():
    assert {module: layer(module) for module in MODULES} and layer("graph.memory.rendering") < layer("graph.thread.tokens")
    assert arrows_up({"graph.memory.rendering": {"graph.thread.tokens": 11}, "graph.thread.tokens": {}}) == [
        "graph/memory/rendering.py:11 imports graph.thread.tokens (layer graph.thread is above graph.memory)"
    ]


def test_no_module_of_the_package_imports_one_that_imports_it_back(edges):
    found = cycles(edges)
    assert not found, "import cycles:\n" + "\n".join(described(edges, cycle) for cycle in found)


def test_no_module_imports_from_a_layer_above_its_own(edges):
    upward = arrows_up(edges)
    assert not upward, "imports from a higher layer:\n" + "\n".join(upward)


def test_only_the_tests_of_a_benchmark_import_it(edges):
    """What the tests and the benchmarks share is in `testing/`: `bench/` imports no test (the layers say so), and
    a test imports `bench/` only in tests/bench/, where the benchmarks' own parts are tested."""
    crossing = [
        f"{MODULES[name].relative_to(ROOT)}:{line} imports {target}"
        for name, targets in sorted(edges.items())
        for target, line in sorted(targets.items())
        if name.startswith("tests.") and not name.startswith("tests.bench.") and target.split(".")[0] == "bench"
    ]
    assert not crossing, "tests outside tests/bench/ import a benchmark:\n" + "\n".join(crossing)


def test_the_settings_import_nothing_of_the_package(edges):
    assert edges[f"{PACKAGE}.settings"] == {}, "the settings sit below every other module (the memory kinds too)"
