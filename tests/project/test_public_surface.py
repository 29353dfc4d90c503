"""The package's public face: `__all__` of `graph` and of each subpackage, typed names, `py.typed`, the licence."""

import ast
import importlib
import inspect
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import graph

ROOT = Path(__file__).resolve().parents[2]
SUBPACKAGES = ["app", "backends", "eval", "memory", "nodes", "server", "thread"]


def test_every_public_name_is_listed_once_and_loads_from_the_module_type_checkers_read_it_from():
    stub = ast.parse((ROOT / "graph" / "__init__.pyi").read_text()).body
    assert all(isinstance(statement, ast.ImportFrom) for statement in stub), "the stub only re-exports"
    typed = [(alias.name, alias.asname, statement.module) for statement in stub for alias in statement.names]
    assert all(name == asname for name, asname, _ in typed), "`from M import x as x`: type checkers re-export x"
    assert graph.__all__ == [name for name, _, _ in typed] and len(set(graph.__all__)) == len(typed)
    assert {"build_graph", "open_graph", "close_graph"} <= set(graph.__all__)
    for name, _, module in typed:
        assert getattr(graph, name) is getattr(importlib.import_module(module), name)
    defined = ast.parse((ROOT / "graph" / "__init__.py").read_text())
    assert {target.id for node in defined.body if isinstance(node, ast.Assign) for target in node.targets} == {"_EXPORTS", "__all__"}
    assert not [node for node in defined.body if isinstance(node, ast.If)], "no second list under TYPE_CHECKING"


def test_what_the_docs_import_from_graph_is_public():
    docs = "\n".join(page.read_text() for page in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
    shown = {name.strip() for line in re.findall(r"^from graph import (.+)$", docs, re.M) for name in line.split(",")}
    assert {"build_graph", "open_graph"} <= shown
    assert shown | {"close_graph", "open_store"} <= set(graph.__all__)


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_each_subpackage_names_its_public_modules(name):
    package = importlib.import_module(f"graph.{name}")
    exported: dict = {}
    exec(f"from graph.{name} import *", exported)
    assert package.__all__, name
    for public in package.__all__:
        assert inspect.ismodule(exported[public]) and f"`{public}`" in package.__doc__, (name, public)


def test_the_wheel_ships_py_typed_the_memory_page_the_demo_model_and_the_mit_license(tmp_path):
    source = tmp_path / "source"
    for part in ("graph", "schemas", "prompts", "testing"):
        shutil.copytree(ROOT / part, source / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / part, source / part)
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--disable-pip-version-check"]
    built = subprocess.run([*command, "-q", "-w", str(tmp_path), str(source)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr

    (wheel,) = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (metadata,) = [name for name in names if name.endswith(".dist-info/METADATA")]
        (license_file,) = [name for name in names if name.endswith(".dist-info/licenses/LICENSE")]
        fields = archive.read(metadata).decode().splitlines()
        license_text = archive.read(license_file).decode()
    assert {"graph/py.typed", "graph/__init__.pyi"} <= names, "`import graph` reads its public names from the stub"
    assert "testing/scripted_model.py" in names, "`maistro demo` plays the tutorial with the scripted chat model"
    assert {f"graph/server/static/{page.name}" for page in (ROOT / "graph" / "server" / "static").iterdir()} <= names
    assert {f"graph/eval/cases/{case.name}" for case in (ROOT / "graph" / "eval" / "cases").glob("*.json")} <= names
    assert "License-Expression: MIT" in fields and license_text.startswith("MIT License\n")
