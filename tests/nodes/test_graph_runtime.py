"""Each built graph keeps what it keeps in its own `GraphRuntime`: nothing is shared through module state, nothing
starts at import, and a bad setting fails only the servers' graph when it is built, with one sentence."""

import importlib
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest

import graph
from graph import DEFAULT_MEMORY_KINDS, build_graph, close_graph
from graph.memory import list_reads
from graph.memory.kinds import TODO, MemoryKind
from graph.nodes import extraction
from graph.runtime import GraphRuntime, runtime_of
from graph.settings import SettingsError
from testing.helpers import fill, todos, turn
from testing.scripted_model import calls, document, route, say

ROOT = Path(__file__).resolve().parents[2]
NOTES = MemoryKind(name="notes", schema=TODO.schema, collection=True, description="notes the user keeps")


def python(code: str, **environment: str) -> subprocess.CompletedProcess:
    """`code` run by a fresh interpreter of this project, with `environment` added."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), **environment}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_importing_the_agent_with_a_bad_memory_kinds_setting_works_and_building_its_graph_says_why(monkeypatch):
    monkeypatch.setenv("MAISTRO_MEMORY_KINDS", "nowhere_kinds:KINDS")
    monkeypatch.delitem(sys.modules, "graph.agent")
    monkeypatch.setattr(graph, "agent", sys.modules.get("graph.agent"), raising=False)

    agent = importlib.import_module("graph.agent")
    with pytest.raises(SettingsError) as refused:
        agent.server_graph()
    with pytest.raises(SettingsError):
        agent.graph  # noqa: B018, the servers' graph, built when asked for

    assert str(refused.value) == (
        "MAISTRO_MEMORY_KINDS='nowhere_kinds:KINDS' is invalid: the module nowhere_kinds cannot be imported "
        "(ModuleNotFoundError: No module named 'nowhere_kinds' on the import path or in the working directory)."
    )


def test_nothing_runs_in_a_thread_after_import():
    done = python(
        "import threading\n"
        "import graph, graph.agent, graph.app.cli, graph.server.app\n"
        "from graph.memory import list_reads\n"
        "from concurrent.futures import Executor\n"
        "print([t.name for t in threading.enumerate()])\n"
        "print([n for m in (list_reads, graph.agent) for n, v in vars(m).items() if isinstance(v, Executor)])\n"
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == "['MainThread']\n[]\n"


def test_two_graphs_whose_kinds_differ_in_trustcall_options_each_build_their_own_extractor(model, tmp_path, monkeypatch):
    """The same model object and the same schema, one kind that may delete and one that may not: each graph's
    update runs trustcall with its own kind's options."""
    built: list[dict] = []
    create = extraction.create_extractor

    def recorded(llm, **options):
        built.append({name: options[name] for name in ("enable_inserts", "enable_updates", "enable_deletes")})
        return create(llm, **options)

    monkeypatch.setattr(extraction, "create_extractor", recorded)
    keeping = replace(NOTES, deletes=False)
    first = build_graph(tmp_path / "a", chat_model=lambda _: model, memory_kinds=[*DEFAULT_MEMORY_KINDS, NOTES])
    second = build_graph(tmp_path / "b", chat_model=lambda _: model, memory_kinds=[*DEFAULT_MEMORY_KINDS, keeping])
    try:
        for agent in (first, second):
            model.add("task_maistro", route("notes"), say("Noted."))
            model.add("update_notes", calls(document(TODO.schema.__name__, task="Buy stamps")))
            turn(agent, "Note: buy stamps.")
    finally:
        close_graph(first)
        close_graph(second)

    assert built == [
        {"enable_inserts": True, "enable_updates": True, "enable_deletes": True},
        {"enable_inserts": True, "enable_updates": True, "enable_deletes": False},
    ]
    assert runtime_of(first).extractors is not runtime_of(second).extractors


def test_the_background_reader_starts_with_a_read_and_stops_when_the_graph_closes(model, tmp_path, monkeypatch):
    monkeypatch.setattr(list_reads, "HEAD_FROM", 10)
    agent = build_graph(tmp_path / "data", chat_model=lambda _: model)
    fill(agent.store, "Lance", 40)
    model.add("task_maistro", say("You have 40 things to do."))
    turn(agent, "What is on my list?")
    reader = runtime_of(agent).reads.reader
    assert reader.wait(timeout=30)
    readers = [thread for thread in threading.enumerate() if thread.name.startswith("maistro-list-read")]
    held = runtime_of(agent).reads.lists.take(agent.store, (TODO.name, "Lance"))
    close_graph(agent)

    assert len(readers) == 1, "the turn read the list by its head, and the rest in the background"
    assert held is not None and held[1].total == 40
    assert not any(thread.is_alive() for thread in readers)


def test_clear_forgets_what_the_graph_kept(model, tmp_path):
    agent = build_graph(tmp_path / "data", chat_model=lambda _: model)
    try:
        model.add("task_maistro", route("todo"), say("Added."))
        model.add("update_todos", calls(document(TODO.schema.__name__, task="Buy stamps")))
        turn(agent, "Remind me to buy stamps.")
        kept = runtime_of(agent)
        assert len(kept.runs) and len(kept.reads.turns) and len(kept.extractors) and len(kept.routed)

        kept.clear()

        assert (len(kept.runs), len(kept.reads.turns), len(kept.reads.lists), len(kept.extractors), len(kept.routed)) == (
            0, 0, 0, 0, 0
        )
        model.add("task_maistro", say("You need to buy stamps."))
        assert turn(agent, "What do I need to do?")[-1].text == "You need to buy stamps."
        assert list(todos(agent)) == ["Buy stamps"]
    finally:
        close_graph(agent)


def test_a_graph_not_built_here_has_no_runtime():
    from langgraph.graph import START, StateGraph

    from graph.state import State

    builder = StateGraph(State)
    builder.add_node("echo", lambda state: {})
    builder.add_edge(START, "echo")
    with pytest.raises(LookupError, match="not built by graph.agent"):
        runtime_of(builder.compile())
    assert GraphRuntime(DEFAULT_MEMORY_KINDS).kinds == DEFAULT_MEMORY_KINDS


def test_only_the_entry_points_read_the_memory_kinds_from_the_environment():
    """The kinds flow from where a graph is built (or a CLI command starts) to every reader."""
    readers = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "graph").rglob("*.py")
        if "configured_kinds()" in path.read_text(encoding="utf-8")
    )
    assert readers == ["graph/app/cli.py", "graph/memory/kinds.py"], "graph.agent reads them through resolve_kinds"
