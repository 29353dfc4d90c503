"""Lifetimes and durability: `open_graph` closes what it opens, read-only commands open the store alone, and
the agent checkpoints every step before the next one starts (LangGraph's internal durability key)."""

import sqlite3
import time
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from langgraph.store.sqlite import SqliteStore
from typer.testing import CliRunner

import graph.agent
import graph.backends.model
from graph import open_graph
from graph.app.cli import app
from testing.helpers import remember, todos
from testing.scripted_model import ScriptedChatModel, calls, route, say, todo

ROOT = Path(__file__).resolve().parents[2]
SLOW_CHECKPOINT_SECONDS = 0.5


def routing_step_saved_before_update(agent, model: ScriptedChatModel, **stream_options) -> bool:
    """Play a ToDo turn whose checkpoints reach the disk slowly; whether the update node found the routing step saved."""
    write = agent.checkpointer.put

    def slow_put(*args, **kwargs):
        time.sleep(SLOW_CHECKPOINT_SECONDS)
        return write(*args, **kwargs)

    agent.checkpointer.put = slow_put
    config = {"configurable": {"thread_id": "t", "user_id": "Lance"}}
    seen: list[bool] = []

    def extract(messages, tools):
        saved = agent.checkpointer.get_tuple(config)
        thread = saved.checkpoint["channel_values"].get("messages", []) if saved else []
        seen.append(any(getattr(message, "tool_calls", None) for message in thread))
        return calls(todo("Book swim lessons", solutions=["Call the pool"]))

    model.add("task_maistro", route("todo"), say("Added."))
    model.add("update_todos", extract)
    agent.invoke({"messages": [HumanMessage("Book swim lessons")]}, config, **stream_options)
    assert list(todos(agent)) == ["Book swim lessons"], "trustcall's checkpointer-less run works under sync"
    return seen == [True]


def test_the_agent_saves_each_step_before_the_next_starts(tmp_path):
    model = ScriptedChatModel()
    with open_graph(tmp_path / "sync", chat_model=lambda _settings: model) as agent:
        assert routing_step_saved_before_update(agent, model)


def test_without_the_durability_default_the_probe_sees_the_difference(tmp_path):
    model = ScriptedChatModel()
    with open_graph(tmp_path / "async", chat_model=lambda _settings: model) as agent:
        assert not routing_step_saved_before_update(agent, model, durability="async")


def test_the_internal_durability_key_is_used_in_one_place():
    users = sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "graph").rglob("*.py") if "CONFIG_KEY_DURABILITY" in path.read_text())
    assert users == ["graph/backends/langgraph_private.py", "graph/durability.py"]  # named there, used here


def test_open_graph_closes_storage_and_stops_the_sweeper(tmp_path):
    with open_graph(tmp_path, chat_model=lambda _settings: ScriptedChatModel()) as agent:
        store = agent.store
        assert store._ttl_sweeper_thread is not None and store._ttl_sweeper_thread.is_alive()
    assert store._ttl_sweeper_thread is None or not store._ttl_sweeper_thread.is_alive()
    with pytest.raises(sqlite3.ProgrammingError):
        store.conn.execute("SELECT 1")


@pytest.mark.parametrize("command", [["todos"], ["profile"], ["instructions"], ["history"], ["export"], ["todos", "--json"]])
def test_read_only_commands_open_no_graph_sweeper_or_model(tmp_path, monkeypatch, command):
    with open_graph(tmp_path) as agent:
        remember(agent.store, "Lance")

    def refuse(*args, **kwargs):
        raise AssertionError("a read-only command must open the store alone")

    monkeypatch.setattr(graph.agent, "open_graph", refuse)
    monkeypatch.setattr(graph.backends.model, "load_chat_model", refuse)
    monkeypatch.setattr(SqliteStore, "start_ttl_sweeper", refuse)
    result = CliRunner().invoke(app, [*command, "--user", "Lance", "--data-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "Lance" in result.output or "Yale" in result.output
