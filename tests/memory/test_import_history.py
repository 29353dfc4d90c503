"""`maistro import` goes the way every change does: each document it creates or replaces gets a history
entry, so the import can be undone document by document; documents it leaves as they were get none."""

from graph.memory.admin import EXPORT_FORMAT, IMPORT_MESSAGE, import_memories
from graph.memory.changes import list_history, undo_change
from graph.memory.store import namespace
from testing.helpers import LANCE_PROFILE, SWIM_ITEM, remember, todos
from testing.stored_names import INSTRUCTIONS, PROFILE, TODO

RENT = {**SWIM_ITEM, "task": "Pay rent", "solutions": ["Bank app"]}


def test_an_import_records_what_it_created_and_replaced_and_each_can_be_undone(agent):
    remember(agent.store, "Ann")  # a profile, instructions, "Book swim lessons" (b-swim) and a done ToDo
    started = SWIM_ITEM | {"status": "in progress"}
    data = {
        "format": EXPORT_FORMAT,
        PROFILE: {"user_profile": LANCE_PROFILE},  # as stored: nothing to record
        TODO: {"b-swim": started, "rent": RENT},
        INSTRUCTIONS: {"user_instructions": {"memory": "Keep tasks short."}},
    }

    import_memories(agent.store, "Ann", data)

    entries = {(e["kind"], e["key"]): e for e in list_history(agent.store, "Ann")}
    assert set(entries) == {(TODO, "b-swim"), (TODO, "rent"), (INSTRUCTIONS, "user_instructions")}
    assert {e["message"] for e in entries.values()} == {IMPORT_MESSAGE}
    assert (entries[TODO, "b-swim"]["action"], entries[TODO, "b-swim"]["before"]) == ("updated", SWIM_ITEM)
    assert (entries[TODO, "rent"]["action"], entries[TODO, "rent"]["before"]) == ("created", None)
    assert entries[INSTRUCTIONS, "user_instructions"]["before"] == {"memory": "Name local vendors."}

    undo_change(agent.store, "Ann", entries[TODO, "b-swim"]["id"])
    undo_change(agent.store, "Ann", entries[TODO, "rent"]["id"])
    undo_change(agent.store, "Ann", entries[INSTRUCTIONS, "user_instructions"]["id"])

    assert todos(agent, "Ann")["Book swim lessons"] == SWIM_ITEM and "Pay rent" not in todos(agent, "Ann")
    assert agent.store.get(namespace(INSTRUCTIONS, "Ann"), "user_instructions").value == {"memory": "Name local vendors."}


def test_importing_the_same_export_again_records_nothing_more(agent):
    data = {"format": EXPORT_FORMAT, TODO: {"rent": RENT}}
    import_memories(agent.store, "Ann", data)
    import_memories(agent.store, "Ann", data)

    assert [(e["action"], e["key"]) for e in list_history(agent.store, "Ann")] == [("created", "rent")]
