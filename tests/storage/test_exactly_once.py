"""Exactly-once updates: an update replayed after its commit answers from what it committed, on both backends.

A worker process (testing/replay_worker.py) dies right after an update committed three ToDo changes,
before the checkpoint recorded the update's answer. Before the thread goes on, the user undoes one of those
changes (the CLI's undo) and marks another task done on the memory page; then a program sends a different
next message, so the graph first finishes the cut-short turn by replaying its update. A naive model would
extract the same changes again from the same message. The replay must not ask it: the undo stays, the page
edit stays, the appended solution is there once, and the history gains nothing. An update run again in the
process that routed it (its step failed after the commit) is refused by its commit instead, since its
history entries exist, and answers from them too.
"""

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.store.base import PutOp

from graph.memory.changes import list_history, undo_change
from graph.memory.kinds import TODO
from graph.server.memory_page import edit_document
from testing.bookkeeping import assert_tool_calls_answered
from testing.helpers import todos
from testing.replay_worker import BARREL, CONFIG, FERN, SOIL, USER, WATER, second_update
from testing.scripted_model import calls, route, say, todo

ROOT = Path(__file__).resolve().parents[2]


def storage_target(request, tmp_path: Path) -> str:
    """What the `agent` fixture opened: its PostgreSQL database's URL, or its SQLite data directory."""
    if request.node.callspec.params["agent"] == "postgres":
        return request.getfixturevalue("fresh_database")
    return str(tmp_path / "data")


def test_an_update_replayed_after_its_commit_neither_asks_the_model_nor_writes_again(agent, model, request, tmp_path):
    died = subprocess.run(
        [sys.executable, "-m", "testing.replay_worker", storage_target(request, tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert died.returncode == -signal.SIGKILL, died.stderr
    assert set(todos(agent, USER)) == {WATER, SOIL, FERN}, "the update committed before the process died"
    created_soil = next(e for e in list_history(agent.store, USER) if (e["after"] or {}).get("task") == SOIL)
    undo_change(agent.store, USER, created_soil["id"])
    fern_key = next(e["key"] for e in list_history(agent.store, USER) if (e["after"] or {}).get("task") == FERN)
    edit_document(agent.store, USER, TODO, fern_key, {"status": "done"})
    history_before = [entry["id"] for entry in list_history(agent.store, USER)]
    model.standing.update({"task_maistro": say("Start with the fern."), "update_todos": second_update})

    agent.invoke({"messages": [HumanMessage("Which of them should I do first?")]}, CONFIG)

    stored = todos(agent, USER)
    assert SOIL not in stored, "the undo was reverted"
    assert stored[FERN]["status"] == "done", "the page's edit was set back"
    assert stored[WATER]["solutions"] == ["Blue can", BARREL]
    assert model.calls_in("update_todos") == [], "the replayed update asked the model again"
    assert [entry["id"] for entry in list_history(agent.store, USER)] == history_before
    messages = agent.get_state(CONFIG).values["messages"]
    assert_tool_calls_answered(messages)
    replayed = next(m for m in messages if isinstance(m, ToolMessage) and "created: Buy potting soil" in m.text)
    assert f"created: {FERN}" in replayed.text and f"updated: {WATER} (solutions)" in replayed.text
    assert messages[-1].text == "Start with the fern."


class LostAfterCommit(RuntimeError):
    """A failure that strikes after a memory batch committed, before the step's answer is saved."""


def test_an_update_run_again_in_its_own_process_does_not_write_its_changes_twice(agent, model, monkeypatch):
    model.add("task_maistro", route("todo"), say("Added."))
    naive = calls(todo(WATER, solutions=["Blue can"]))
    model.add("update_todos", naive, naive)
    batch = agent.store.batch

    def batch_then_fail(ops):
        done = batch(ops)
        if not any(isinstance(op, PutOp) for op in ops):  # the turn's reads (the done log's counts) go through
            return done
        monkeypatch.setattr(agent.store, "batch", batch)
        raise LostAfterCommit("the connection dropped after the commit")

    monkeypatch.setattr(agent.store, "batch", batch_then_fail)
    with pytest.raises(LostAfterCommit):
        agent.invoke({"messages": [HumanMessage("Remind me to water the plants.")]}, CONFIG)
    undo_change(agent.store, USER)
    history_before = [entry["id"] for entry in list_history(agent.store, USER)]

    agent.invoke(None, CONFIG)

    assert WATER not in todos(agent, USER), "the undo was reverted"
    assert [entry["id"] for entry in list_history(agent.store, USER)] == history_before
    messages = agent.get_state(CONFIG).values["messages"]
    assert_tool_calls_answered(messages)
    assert f"created: {WATER}" in messages[-2].text
