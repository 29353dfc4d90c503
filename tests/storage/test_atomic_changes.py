"""A memory change and its history entry are committed together or not at all, on SQLite and PostgreSQL.

The failure is injected inside LangGraph's own store code: the step that sends a batch's writes to the
database writes some of them, then raises, as a full disk or a lost connection would half-way through.
"""

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from langgraph.store.postgres import PostgresStore
from langgraph.store.sqlite import SqliteStore

from graph.memory import kinds
from graph.memory.admin import EXPORT_FORMAT, import_memories, user_items
from graph.memory.changes import ChangeContext, MemoryChange, list_history, record_changes, undo_change
from graph.memory.store import HISTORY, namespace
from testing.helpers import config, todos, turn
from testing.scripted_model import calls, patch_where, replace, route, say, todo
from testing.stored_names import TODO

RENT = {"task": "Pay rent", "solutions": ["Bank app"], "status": "not started"}
CONTEXT = ChangeContext(thread_id="t", message="Remind me to pay rent.", seed="seed")


class InjectedFailure(RuntimeError):
    """The failure these tests inject between two writes of one batch."""


@contextmanager
def failing_after(store, writes: int) -> Iterator[None]:
    """While open, the store writes `writes` items of a batch (in the batch's order), then raises `InjectedFailure`."""
    base = SqliteStore if isinstance(store, SqliteStore) else PostgresStore
    write = base._batch_put_ops
    written = 0

    def write_then_fail(self, put_ops, cur):
        nonlocal written
        for put in put_ops:
            if written == writes:
                raise InjectedFailure(f"the database failed after {writes} writes")
            write(self, [put], cur)
            written += 1

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(base, "_batch_put_ops", write_then_fail)
        yield


def test_a_change_whose_history_entry_fails_is_not_written_either(agent):
    created = MemoryChange("created", "rent", None, RENT)

    with failing_after(agent.store, 1), pytest.raises(InjectedFailure):
        record_changes(agent.store, "Lance", kinds.TODO, [created], CONTEXT)

    assert agent.store.get(namespace(TODO, "Lance"), "rent") is None, "the change was rolled back with its entry"
    assert list_history(agent.store, "Lance") == []

    record_changes(agent.store, "Lance", kinds.TODO, [created], CONTEXT)
    assert agent.store.get(namespace(TODO, "Lance"), "rent").value == RENT
    assert [entry["key"] for entry in list_history(agent.store, "Lance")] == ["rent"]


def test_a_turn_whose_commit_fails_changes_nothing_and_resumes(agent, model):
    model.add("task_maistro", route("todo"), say("Added."), route("todo"), say("Marked done."))
    done = patch_where("Water", replace("/status", "done"))
    model.add("update_todos", calls(todo("Water plants", solutions=["Blue can"])), done, done)
    turn(agent, "Remind me to water the plants.")

    with failing_after(agent.store, 1), pytest.raises(InjectedFailure):
        turn(agent, "Watered them.")

    assert todos(agent)["Water plants"]["status"] == "not started"
    assert [entry["action"] for entry in list_history(agent.store, "Lance")] == ["created"]
    state = agent.get_state(config())
    assert state.values["messages"][-2].content == "Watered them.", "the message stays in the thread"

    agent.invoke(None, config())
    assert todos(agent)["Water plants"]["status"] == "done"
    assert [entry["action"] for entry in list_history(agent.store, "Lance")] == ["created", "updated"]


def test_an_undo_that_fails_leaves_the_memory_and_history_as_they_were(agent):
    record_changes(agent.store, "Lance", kinds.TODO, [MemoryChange("created", "rent", None, RENT)], CONTEXT)

    with failing_after(agent.store, 1), pytest.raises(InjectedFailure):
        undo_change(agent.store, "Lance")

    assert agent.store.get(namespace(TODO, "Lance"), "rent").value == RENT
    assert len(list_history(agent.store, "Lance")) == 1


def test_an_import_that_fails_half_way_writes_nothing(agent):
    tasks = {f"item-{n:04d}": {**RENT, "task": f"Chore {n}"} for n in range(1_200)}
    data = {"format": EXPORT_FORMAT, TODO: tasks, HISTORY: {}}

    with failing_after(agent.store, 1_100), pytest.raises(InjectedFailure):
        import_memories(agent.store, "Ann", data)

    assert user_items(agent.store, "Ann") == []
    import_memories(agent.store, "Ann", data)
    stored = agent.store.search(namespace(TODO, "Ann"), limit=len(tasks) + 1)
    assert {item.key: item.value for item in stored} == tasks
