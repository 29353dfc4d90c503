"""LangGraph's private APIs are named in one module (`graph.backends.langgraph_private`), and each one still is
what that module takes it for: a LangGraph upgrade that changes one fails here, naming it."""

import ast
import importlib
import inspect
from pathlib import Path

import pytest

ADAPTER = "graph/backends/langgraph_private.py"
ROOT = Path(__file__).resolve().parents[2]
# Each private API: where LangGraph keeps it, and the parameters the adapter passes it (beside `self`).
PRIVATE_APIS = [
    ("langgraph.store.sqlite:SqliteStore._cursor", {"transaction"}),
    ("langgraph.store.sqlite:SqliteStore._batch_put_ops", {"put_ops", "cur"}),
    ("langgraph.store.postgres:PostgresStore._cursor", {"pipeline"}),
    ("langgraph.store.postgres:PostgresStore._batch_put_ops", {"put_ops", "cur"}),
    ("langgraph.checkpoint.postgres:PostgresSaver._cursor", {"pipeline"}),
    ("langgraph.store.postgres.base:_pg_internal.get_connection", {"conn"}),
    ("langgraph.checkpoint.postgres:_ainternal.get_connection", {"conn"}),
]
# The private methods of LangGraph's SQL stores and savers that the adapter's mixins call and override.
HOOKS = {"_cursor", "_batch_put_ops"}
LANGGRAPH_PACKAGES = ("langgraph", "langgraph_api", "langgraph_sdk", "langchain", "langchain_core", "langchain_openai")


def found(path: str):
    """The object at `module:attribute.attribute`, or a failure naming the private API LangGraph changed."""
    module_name, attributes = path.split(":")
    try:
        value = importlib.import_module(module_name)
        for attribute in attributes.split("."):
            value = getattr(value, attribute)
    except (ImportError, AttributeError) as error:
        pytest.fail(f"LangGraph no longer has the private API {path} that {ADAPTER} uses ({error}): adapt that module.")
    return value


@pytest.mark.parametrize(("path", "parameters"), PRIVATE_APIS, ids=[path for path, _ in PRIVATE_APIS])
def test_each_private_api_still_takes_what_the_adapter_passes(path, parameters):
    signature = inspect.signature(found(path))
    missing = parameters - set(signature.parameters)
    assert not missing, f"LangGraph's private API {path} no longer takes {sorted(missing)} ({signature}): adapt {ADAPTER}."


def test_the_durability_key_is_still_the_one_pregel_reads():
    from langgraph._internal import _constants
    from langgraph.pregel import main

    key = found("langgraph._internal._constants:CONFIG_KEY_DURABILITY")
    assert key == _constants.CONFIG_KEY_DURABILITY and "CONFIG_KEY_DURABILITY" in inspect.getsource(main), (
        f"LangGraph's Pregel no longer reads the private config key {key!r} that {ADAPTER} names: adapt it."
    )


def private_names(path: Path) -> list[str]:
    """What a source file takes from LangGraph's or LangChain's packages under a `_` name: private modules and
    names imported, and `_` methods called or overridden that LangGraph's SQL stores and savers define."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in LANGGRAPH_PACKAGES:
            parts = [*(node.module or "").split("."), *(alias.name for alias in node.names)]
            names += [f"{node.lineno}: {node.module}" for part in parts if part.startswith("_")][:1]
        elif isinstance(node, ast.Import):
            names += [
                f"{node.lineno}: {alias.name}"
                for alias in node.names
                if alias.name.split(".")[0] in LANGGRAPH_PACKAGES and any(part.startswith("_") for part in alias.name.split("."))
            ]
        elif isinstance(node, ast.Attribute) and node.attr in HOOKS:
            names.append(f"{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.FunctionDef) and node.name in HOOKS:
            names.append(f"{node.lineno}: def {node.name}")
    return names


def test_no_other_module_of_the_package_names_a_private_langgraph_api():
    users = {
        path.relative_to(ROOT).as_posix(): names
        for path in sorted((ROOT / "graph").rglob("*.py"))
        if (names := private_names(path)) and path.relative_to(ROOT).as_posix() != ADAPTER
    }
    assert not users, f"private LangGraph APIs used outside {ADAPTER}: {users}"
    assert private_names(ROOT / ADAPTER), "the check finds the adapter's own uses"
