"""Each entry point imports only what it uses: checked on `sys.modules` of a fresh Python process."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Runs an entry point in a fresh interpreter, then writes the name of every loaded module.
PROBE = """
import json, sys
modules_file = sys.argv[1]
try:
    exec(sys.argv[2])
except SystemExit:
    pass
finally:
    with open(modules_file, "w") as out:
        json.dump(sorted(sys.modules), out)
"""
CLI = "from graph.app.cli import main; sys.argv = ['maistro', *{args!r}]; main()"
MODEL_CLIENTS = {"openai", "langchain_openai", "trustcall"}


def loaded_modules(tmp_path: Path, code: str, *, top_level: bool = True) -> set[str]:
    """Top-level modules (or, not `top_level`, all modules) loaded by running `code` in a new process (data under
    `tmp_path`)."""
    modules_file = tmp_path / "modules.json"
    environment = {**os.environ, "MAISTRO_DATA_DIR": str(tmp_path / "data")}
    environment.pop("MAISTRO_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(modules_file), code], env=environment, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    names = json.loads(modules_file.read_text())
    return {name.split(".")[0] for name in names} if top_level else set(names)


def test_help_loads_no_langchain_langgraph_model_client_or_memory_schemas(tmp_path):
    modules = loaded_modules(tmp_path, CLI.format(args=["--help"]))
    heavy = {"langchain_core", "langgraph", "langgraph_sdk", "langsmith", "pydantic", "schemas", *MODEL_CLIENTS}
    assert "typer" in modules and not modules & heavy, sorted(modules & heavy)


@pytest.mark.parametrize("command", ["todos", "profile", "instructions", "due", "history", "export"])
def test_read_only_commands_load_no_model_client(tmp_path, command):
    modules = loaded_modules(tmp_path, CLI.format(args=[command, "--user", "Lance"]))
    assert "langgraph" in modules and not modules & MODEL_CLIENTS, sorted(modules & MODEL_CLIENTS)


@pytest.mark.parametrize("command", ["todos", "profile", "instructions"])
def test_a_memory_table_loads_no_export_or_redaction_rules(tmp_path, command):
    """The table is drawn from the stored documents: the export and its redaction (`--json`) are not imported."""
    modules = loaded_modules(tmp_path, CLI.format(args=[command, "--user", "Lance"]), top_level=False)
    unused = {"graph.memory.admin", "graph.memory.redaction", "graph.memory.changes"}
    assert "graph.app.tables" in modules and not modules & unused, sorted(modules & unused)


@pytest.mark.parametrize("command", [["todos"], ["due"], ["show", "profile"]])
def test_a_memory_table_loads_no_graph_builder(tmp_path, command):
    """Drawing a table reads the store: it needs neither LangGraph's graph builder nor the graph's state (the
    agent's name lives apart from them, in `graph/names.py`)."""
    modules = loaded_modules(tmp_path, CLI.format(args=command), top_level=False)
    assert not modules & {"langgraph.graph", "langgraph.graph.state", "graph.state", "graph.agent"}


def test_the_servers_auth_module_loads_no_agent_or_model_client(tmp_path):
    spec = json.loads((Path(__file__).resolve().parents[2] / "langgraph.json").read_text())
    module = spec["auth"]["path"].split(":")[0].removeprefix("./").removesuffix(".py").replace("/", ".")
    modules = loaded_modules(tmp_path, f"import {module}")
    assert module == "graph.server.auth"
    assert not modules & {*MODEL_CLIENTS, "langgraph"}, sorted(modules & {*MODEL_CLIENTS, "langgraph"})
