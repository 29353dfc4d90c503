"""The agent's name and its memory tool's name are each spelled once in the code (`graph.state.AGENT_NAME`,
`graph.thread.model_message.UPDATE_TOOL`), and the servers' configuration serves the graph under that name."""

import json
import tokenize
from pathlib import Path

import pytest

from graph.names import AGENT_NAME
from graph.thread.model_message import UPDATE_TOOL

ROOT = Path(__file__).resolve().parents[2]
CODE = ("graph", "testing", "bench")


@pytest.mark.parametrize(("literal", "home"), [(AGENT_NAME, "graph/names.py"), (UPDATE_TOOL, "graph/thread/model_message.py")])
def test_each_name_is_spelled_once_in_the_code(literal, home):
    spelled = [
        f"{path.relative_to(ROOT)}:{token.start[0]}"
        for part in CODE
        for path in sorted((ROOT / part).rglob("*.py"))
        for token in tokenize.generate_tokens(path.open().readline)
        if token.type == tokenize.STRING and (f'"{literal}"' in token.string or f"'{literal}'" in token.string)
    ]
    assert len(spelled) == 1 and spelled[0].startswith(f"{home}:"), spelled


@pytest.mark.parametrize("config", ["langgraph.json", "aegra.json"])
def test_the_servers_serve_the_graph_under_the_agents_name(config):
    assert list(json.loads((ROOT / config).read_text())["graphs"]) == [AGENT_NAME]
