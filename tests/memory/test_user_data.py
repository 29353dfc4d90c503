"""A user's data as a whole: export/import round trip, thread lookup, and forgetting one user but no other."""

import json

import pytest
from langchain_core.messages import HumanMessage

from graph.memory.admin import (
    EXPORT_FORMAT,
    InvalidExportError,
    export_memories,
    forget_user,
    import_memories,
    last_thread,
    user_items,
    user_threads,
)
from graph.memory.changes import HISTORY
from testing.helpers import LANCE_PROFILE, LOCK_ITEM, SWIM_ITEM, before_import, remember
from testing.scripted_session import REQUEST, task_keeper
from testing.stored_names import INSTRUCTIONS, PROFILE, TODO


@pytest.fixture
def model():
    """For the `agent` fixture (SQLite and PostgreSQL): a model that files every "Remind me: X" as the ToDo X."""
    return task_keeper()


def remind(agent, user_id: str, thread_id: str, *tasks: str) -> None:
    """One turn per task; the scripted model files each as a ToDo of the user."""
    for task in tasks:
        agent.invoke(
            {"messages": [HumanMessage(f"{REQUEST}{task}")]},
            {"configurable": {"thread_id": thread_id, "user_id": user_id}},
        )


def test_export_import_into_another_user_gives_the_same_json(agent):
    remember(agent.store, "lance.martin@example.com")

    exported = export_memories(agent.store, "lance.martin@example.com")
    counts = import_memories(agent.store, "Copy", json.loads(json.dumps(exported)))

    assert exported == {
        "format": EXPORT_FORMAT,
        PROFILE: {"user_profile": LANCE_PROFILE},
        TODO: {"a-lock": LOCK_ITEM, "b-swim": SWIM_ITEM},
        INSTRUCTIONS: {"user_instructions": {"memory": "Name local vendors."}},
        HISTORY: {},
    }
    assert counts == {PROFILE: 1, TODO: 2, INSTRUCTIONS: 1, HISTORY: 0}
    assert json.dumps(before_import(export_memories(agent.store, "Copy"))) == json.dumps(exported)


@pytest.mark.parametrize(
    "data, problem",
    [
        ({"format": "v0"}, "not a task-maistro memory export"),
        ({"format": EXPORT_FORMAT, "to-dos": {}}, "the section \"to-dos\" cannot be imported: no memory can be called"),
        ({"format": EXPORT_FORMAT, "habit": {"k": ["not", "an", "object"]}}, "a stored memory document is a JSON object"),
        ({"format": EXPORT_FORMAT, "todo": {"k": {"task": "No solutions", "status": "someday"}}}, '"todo" item "k"'),
        ({"format": EXPORT_FORMAT, "profile": {"second": LANCE_PROFILE}}, 'under the key "user_profile"'),
        ({"format": EXPORT_FORMAT, "instructions": {"user_instructions": "plain text"}}, '"instructions" item'),
    ],
)
def test_import_rejects_invalid_data_and_writes_nothing(agent, data, problem):
    valid = {"format": EXPORT_FORMAT, TODO: {"ok": SWIM_ITEM}}
    with pytest.raises(InvalidExportError, match=problem):
        import_memories(agent.store, "Ann", {**valid, **data})
    assert user_items(agent.store, "Ann") == []


def test_threads_of_a_user_newest_first(agent):
    assert last_thread(agent.checkpointer, "Ann") is None
    remind(agent, "Ann", "first", "call mum")
    remind(agent, "Ben", "bens", "buy milk")
    remind(agent, "Ann", "second", "pay rent")

    assert user_threads(agent.checkpointer, "Ann") == ["second", "first"]
    assert last_thread(agent.checkpointer, "Ann") == "second"
    remind(agent, "Ann", "first", "water plants")
    assert last_thread(agent.checkpointer, "Ann") == "first"


def test_forget_removes_every_memory_and_thread_of_the_user_and_nothing_else(agent):
    for user_id in ("ann", "ann.lee", "Ann"):
        remember(agent.store, user_id)
        remind(agent, user_id, f"{user_id}-thread", "call mum", "pay rent")
    agent.store.put(("notes", "ann", "2026"), "n1", {"text": "any other kind of memory of ann"})
    others_before = {user_id: export_memories(agent.store, user_id) for user_id in ("ann.lee", "Ann")}

    # 4 remembered + 2 ToDos from the turn + their 2 history entries and 2 sources + 1 note + the done log's counts
    # (a done ToDo is on the list).
    receipt = forget_user(agent.store, agent.checkpointer, "ann")
    assert (receipt.memories, receipt.threads) == (4 + 2 + 2 + 2 + 1 + 1, 1)

    assert user_items(agent.store, "ann") == [] and user_threads(agent.checkpointer, "ann") == []
    assert agent.store.search(("notes",)) == []
    assert agent.get_state({"configurable": {"thread_id": "ann-thread"}}).values == {}
    for user_id, before in others_before.items():
        assert export_memories(agent.store, user_id) == before
        history = agent.get_state({"configurable": {"thread_id": f"{user_id}-thread"}}).values["messages"]
        assert [m.type for m in history] == ["human", "ai", "tool", "ai"] * 2

