"""No lost update: a memory change commits only if its document is still what the writer read, on both backends.

Another connection (as the memory page, the CLI or another chat would) edits a ToDo while a turn runs: the
scripted model's extraction reply makes the edit, between the update's read and its commit. The turn must
not overwrite it: it reads again and extracts once more, and if the document keeps changing it says so in
its tool answer. The undo follows the same rule.
"""

import json
import sqlite3
from contextlib import closing

import psycopg
import pytest
from langgraph.store.memory import InMemoryStore

from graph.backends.sqlite import DATABASE_FILE
from graph.backends.storage import open_store
from graph.memory import kinds
from graph.memory.changes import (
    ChangeContext,
    MemoryChange,
    UndoConflictError,
    commit_changes,
    list_history,
    undo_change,
)
from graph.memory.conditions import ConflictError
from graph.memory.pending import list_pending
from graph.memory.store import namespace
from graph.server.memory_page import PageError, edit_document
from prompts import CONFLICT_PROBLEM, UPDATE_CONFLICT
from testing.helpers import todos, turn
from testing.scripted_model import calls, doc_id_of, patch, replace, route, say, todo
from testing.stored_names import TODO

WATER = "Water the plants"
DEADLINE = "2026-12-04T17:00:00-08:00"
CONTEXT = ChangeContext(thread_id="t", message="m", seed="seed")


@pytest.fixture
def other_store(agent, request, tmp_path):
    """A second store on the agent's database, with its own connection (its own pool on PostgreSQL)."""
    url = request.getfixturevalue("fresh_database") if request.node.callspec.params["agent"] == "postgres" else ""
    with open_store(tmp_path / "data", database_url=url) as store:
        yield store


def water_key(agent) -> str:
    """The store key of the WATER ToDo."""
    return next(item.key for item in agent.store.search(namespace(TODO, "Lance")) if item.value["task"] == WATER)


def set_deadline_after(edit):
    """An extraction reply that first lets `edit` change the list from elsewhere, then patches WATER's deadline."""

    def reply(messages, _tools):
        edit()
        return calls(patch(doc_id_of(messages, WATER), replace("/deadline", DEADLINE)))

    return reply


def add_water(agent, model) -> str:
    model.add("task_maistro", route("todo"), say("Added."))
    model.add("update_todos", calls(todo(WATER, solutions=["Blue can"])))
    turn(agent, "Remind me to water the plants.")
    return water_key(agent)


def test_an_edit_made_elsewhere_during_a_turn_is_kept_and_the_turn_applies_its_change_on_top(agent, model, other_store):
    key = add_water(agent, model)
    edits = iter([lambda: edit_document(other_store, "Lance", kinds.TODO, key, {"status": "done"})])
    model.add("task_maistro", route("todo"), say("Deadline set."))
    model.add("update_todos", set_deadline_after(lambda: next(edits, lambda: None)()), set_deadline_after(lambda: None))

    thread = turn(agent, "The plants need water by Friday 5pm.")

    assert todos(agent)[WATER]["status"] == "done", "the turn overwrote the edit made on the page"
    assert todos(agent)[WATER]["deadline"] == DEADLINE
    assert len(model.calls_in("update_todos")) == 3, "the update read the list again and extracted once more"
    page, agent_change = list_history(agent.store, "Lance")[-2:]
    assert (page["before"]["status"], page["after"]["status"]) == ("not started", "done")
    assert agent_change["before"] == page["after"], "the turn's history entry starts from the page's edit"
    assert "updated: Water the plants (deadline)" in thread[-2].text


def test_a_document_that_keeps_changing_during_a_turn_is_left_as_edited_and_the_answer_says_so(agent, model, other_store):
    key = add_water(agent, model)
    minutes = iter(range(10, 100, 10))
    edit = lambda: edit_document(other_store, "Lance", kinds.TODO, key, {"time_to_complete": next(minutes)})  # noqa: E731
    model.add("task_maistro", route("todo"), say("Someone else is editing that ToDo."))
    model.add("update_todos", set_deadline_after(edit), set_deadline_after(edit))

    thread = turn(agent, "The plants need water by Friday 5pm.")

    stored = todos(agent)[WATER]
    assert (stored["time_to_complete"], stored["deadline"]) == (20, None), "the other writer's last edit stays"
    page_edit = "Changed time to complete on the memory page"
    assert [entry["message"] for entry in list_history(agent.store, "Lance")] == [
        "Remind me to water the plants.", page_edit, page_edit
    ], "only the other writer's edits were recorded"
    assert thread[-2].text == UPDATE_CONFLICT.format(memory="ToDo")
    (pending,) = list_pending(agent.store, "Lance")
    assert (pending.kind, pending.problem) == ("todo", CONFLICT_PROBLEM.format(memory="ToDo"))
    assert [change["after"]["deadline"] for change in pending.proposal] == [DEADLINE], "what it proposed is kept"


def store_reads_then(store, monkeypatch, edit) -> None:
    """Make `store.get` run `edit` (another writer) after each read, as if it wrote between read and commit."""
    get = store.get

    def get_then_edit(*args, **kwargs):
        item = get(*args, **kwargs)
        edit()
        return item

    monkeypatch.setattr(store, "get", get_then_edit)


def test_an_undo_starts_from_the_document_another_writer_left(agent, model, other_store, monkeypatch):
    key = add_water(agent, model)
    edits = iter([lambda: edit_document(other_store, "Lance", kinds.TODO, key, {"status": "done"})])
    store_reads_then(agent.store, monkeypatch, lambda: next(edits, lambda: None)())

    entry = undo_change(agent.store, "Lance", list_history(agent.store, "Lance")[0]["id"])

    assert WATER not in todos(agent)
    assert entry["before"]["status"] == "done", "the undo's history entry shows what it really deleted"


def test_an_undo_whose_document_keeps_changing_writes_nothing(agent, model, other_store, monkeypatch):
    key = add_water(agent, model)
    minutes = iter(range(10, 100, 10))
    store_reads_then(agent.store, monkeypatch, lambda: edit_document(other_store, "Lance", kinds.TODO, key, {"time_to_complete": next(minutes)}))
    created = list_history(agent.store, "Lance")[0]["id"]

    with pytest.raises(UndoConflictError, match="kept changing"):
        undo_change(agent.store, "Lance", created)

    assert todos(agent)[WATER]["time_to_complete"] == 20
    assert not [entry for entry in list_history(agent.store, "Lance") if entry.get("undoes")]


def assert_stale_and_repeated_changes_refused(store) -> None:
    """A change whose document moved since it was read, and one already committed under its seed, write nothing."""
    first = {"task": WATER, "solutions": ["Blue can"], "status": "not started"}
    commit_changes(store, "Lance", kinds.TODO, [MemoryChange("created", "w", None, first)], CONTEXT)
    stale = MemoryChange("created", "w", None, {**first, "status": "done"})

    with pytest.raises(ConflictError):
        commit_changes(store, "Lance", kinds.TODO, [stale], ChangeContext("t", "m", "other seed"))
    with pytest.raises(ConflictError):
        commit_changes(store, "Lance", kinds.TODO, [MemoryChange("updated", "w", first, first | {"status": "done"})], CONTEXT)

    assert store.get(namespace(TODO, "Lance"), "w").value == first
    assert len(list_history(store, "Lance")) == 1


def test_a_change_from_a_stale_read_or_already_committed_is_refused(agent):
    assert_stale_and_repeated_changes_refused(agent.store)


def test_a_store_that_cannot_check_conditions_is_checked_before_its_batch():
    assert_stale_and_repeated_changes_refused(InMemoryStore())


def write_elsewhere(request, tmp_path, key: str, value: dict) -> str:
    """Insert a ToDo from a connection of its own, not waiting for locks; what happened ("written" or "locked")."""
    prefix, text = ".".join(namespace(TODO, "Lance")), json.dumps(value)
    if request.node.callspec.params["agent"] == "postgres":
        with psycopg.connect(request.getfixturevalue("fresh_database"), autocommit=True) as conn:
            conn.execute("INSERT INTO store (prefix, key, value) VALUES (%s, %s, %s)", (prefix, key, text))
        return "written"
    with closing(sqlite3.connect(tmp_path / "data" / DATABASE_FILE, timeout=0, isolation_level=None)) as conn:
        try:
            conn.execute("INSERT INTO store (prefix, key, value) VALUES (?, ?, ?)", (prefix, key, text))
        except sqlite3.OperationalError as error:
            assert "locked" in str(error)
            return "locked"
    return "written"


def test_no_writer_slips_in_between_a_batch_check_and_its_write(agent, request, tmp_path, monkeypatch):
    mine, theirs = {"task": WATER, "solutions": ["Blue can"], "status": "not started"}, {"task": "Theirs", "solutions": ["x"]}
    happened = []
    stored_values = type(agent.store)._stored_values

    def check_then_write_elsewhere(self, conditions, cur):
        stored = stored_values(self, conditions, cur)
        happened.append(write_elsewhere(request, tmp_path, "w", theirs))
        return stored

    monkeypatch.setattr(type(agent.store), "_stored_values", check_then_write_elsewhere)
    created = MemoryChange("created", "w", None, mine)
    if request.node.callspec.params["agent"] == "postgres":
        with pytest.raises(ConflictError):  # the other write committed first, so this batch may not write
            commit_changes(agent.store, "Lance", kinds.TODO, [created], CONTEXT)
        expected, entries = theirs, 0
    else:
        commit_changes(agent.store, "Lance", kinds.TODO, [created], CONTEXT)  # the batch held the write lock throughout
        expected, entries = mine, 1

    assert happened == ["written" if entries == 0 else "locked"]
    assert agent.store.get(namespace(TODO, "Lance"), "w").value == expected
    assert len(list_history(agent.store, "Lance")) == entries


def test_a_page_edit_that_another_writer_overtakes_after_its_check_is_a_409_not_a_500(agent, model, other_store, monkeypatch):
    key = add_water(agent, model)
    shown = todos(agent)[WATER]
    edits = iter([lambda: edit_document(other_store, "Lance", kinds.TODO, key, {"status": "in progress"})])
    store_reads_then(agent.store, monkeypatch, lambda: next(edits, lambda: None)())

    with pytest.raises(PageError) as refused:
        edit_document(agent.store, "Lance", kinds.TODO, key, {"status": "done"}, base=shown)

    assert refused.value.status == 409 and "changed since the page showed it" in refused.value.detail
    assert todos(agent)[WATER]["status"] == "in progress"
