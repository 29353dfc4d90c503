"""Checkpoint retention: a thread keeps its last MAISTRO_KEEP_TURNS turns, on SQLite and PostgreSQL, and a
database written by LangGraph's own savers shrinks to them when it is first opened."""

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from graph import DEFAULT_MEMORY_KINDS, build_graph, close_graph
from graph.agent import graph_builder
from graph.backends.sqlite import DATABASE_FILE
from graph.memory.admin import last_thread
from graph.runtime import GraphRuntime
from graph.settings import SettingsError
from testing.helpers import config, todos
from testing.scripted_session import task_keeper

TURNS = 8
KEPT_TURNS = 2
# A turn with one memory update writes five checkpoints.
CHECKPOINTS_PER_TURN = 5


UNUSED_BLOBS = """
SELECT count(*) AS n FROM checkpoint_blobs b WHERE NOT EXISTS (
    SELECT 1 FROM checkpoints c WHERE c.thread_id = b.thread_id AND c.checkpoint_ns = b.checkpoint_ns
    AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version
)
"""


def play(agent, turns: int, start: int = 0) -> None:
    for n in range(start, start + turns):
        agent.invoke({"messages": [HumanMessage(f"Remind me: task {n}")]}, config())


def test_a_thread_keeps_its_last_turns(agent, model):
    model.standing.update(task_keeper().standing)
    agent.checkpointer.keep_turns = KEPT_TURNS
    play(agent, TURNS)

    checkpoints = list(agent.checkpointer.list(config()))
    assert len(checkpoints) == CHECKPOINTS_PER_TURN * KEPT_TURNS, len(checkpoints)
    assert checkpoints[-1].metadata["source"] == "input", "the oldest kept checkpoint starts a turn"
    state = agent.get_state(config())
    assert len(state.values["messages"]) == 4 * TURNS and not state.next
    assert len(todos(agent)) == TURNS
    assert last_thread(agent.checkpointer, "Lance") == "1"

    play(agent, 1, start=TURNS)
    assert len(agent.get_state(config()).values["messages"]) == 4 * (TURNS + 1), "the thread goes on"


def test_the_retention_comes_from_maistro_keep_turns(tmp_path, monkeypatch):
    monkeypatch.setenv("MAISTRO_KEEP_TURNS", "3")
    agent = build_graph(tmp_path / "data")
    try:
        assert agent.checkpointer.keep_turns == 3
    finally:
        close_graph(agent)
    monkeypatch.setenv("MAISTRO_KEEP_TURNS", "0")
    with pytest.raises(SettingsError, match="MAISTRO_KEEP_TURNS='0' is invalid: Input should be greater than or equal to 1"):
        build_graph(tmp_path / "data")


def _unpruned_sqlite(directory: Path, model) -> None:
    """A database written the way LangGraph's own SqliteSaver keeps checkpoints: every one."""
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.store.sqlite import SqliteStore

    from graph.backends.sqlite import connect

    directory.mkdir(parents=True)
    saver = SqliteSaver(connect(directory / DATABASE_FILE, autocommit=False))
    store = SqliteStore(connect(directory / DATABASE_FILE, autocommit=True))
    saver.setup()
    store.setup()
    graph = graph_builder(GraphRuntime(DEFAULT_MEMORY_KINDS), lambda _settings: model).compile(checkpointer=saver, store=store)
    play(graph, TURNS)
    saver.conn.close()
    store.conn.close()


def test_an_existing_sqlite_database_is_pruned_on_first_open(tmp_path, model, monkeypatch):
    model.standing.update(task_keeper().standing)
    monkeypatch.setenv("MAISTRO_KEEP_TURNS", str(KEPT_TURNS))
    directory = tmp_path / "old"
    _unpruned_sqlite(directory, model)
    before = (directory / DATABASE_FILE).stat().st_size

    agent = build_graph(directory, chat_model=lambda _settings: model)
    try:
        assert agent.checkpointer.conn.execute("PRAGMA freelist_count").fetchone()[0] == 0, "the file is vacuumed"
        assert len(list(agent.checkpointer.list(config()))) == CHECKPOINTS_PER_TURN * KEPT_TURNS
        assert len(agent.get_state(config()).values["messages"]) == 4 * TURNS
        play(agent, 1, start=TURNS)
        assert len(todos(agent)) == TURNS + 1
    finally:
        close_graph(agent)
    assert (directory / DATABASE_FILE).stat().st_size < before


def test_an_existing_postgres_database_is_pruned_on_first_open(fresh_database, model, monkeypatch):
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.store.postgres import PostgresStore

    model.standing.update(task_keeper().standing)
    monkeypatch.setenv("MAISTRO_KEEP_TURNS", str(KEPT_TURNS))
    with PostgresSaver.from_conn_string(fresh_database) as saver, PostgresStore.from_conn_string(fresh_database) as store:
        saver.setup()
        store.setup()
        play(graph_builder(GraphRuntime(DEFAULT_MEMORY_KINDS), lambda _settings: model).compile(checkpointer=saver, store=store), TURNS)
        assert len(list(saver.list(config()))) == CHECKPOINTS_PER_TURN * TURNS

    agent = build_graph(database_url=fresh_database, chat_model=lambda _settings: model)
    try:
        assert len(list(agent.checkpointer.list(config()))) == CHECKPOINTS_PER_TURN * KEPT_TURNS
        assert len(agent.get_state(config()).values["messages"]) == 4 * TURNS
        with agent.checkpointer.conn.connection() as conn:
            unused = conn.execute(UNUSED_BLOBS).fetchone()["n"]
        assert unused == 0, "blobs no kept checkpoint uses are gone"
        play(agent, 1, start=TURNS)
        assert len(agent.get_state(config()).values["messages"]) == 4 * (TURNS + 1)
    finally:
        close_graph(agent)
