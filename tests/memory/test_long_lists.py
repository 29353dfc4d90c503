"""A user with 10,000 ToDos: edits, deletes and "mark everything about X done" still work, and a turn reads the
list once, in one statement, whatever its length: a process's first turn its head (`graph.memory.list_reads`),
the next turns its changes."""

from langgraph.store.base import PutOp

from graph import build_graph, close_graph
from graph.backends.list_index import INDEX as LIST_INDEX
from graph.memory.store import namespace
from graph.runtime import runtime_of
from testing.helpers import fill, todos, turn
from testing.scripted_model import calls, existing_ids, patch, patch_where, remove_where, replace, route, say
from testing.stored_names import TODO

LARGE = 10_000
DENTIST = ["Book the dentist", "Pay the dentist bill", "Find the dentist insurance form"]


def _named(task: str) -> dict:
    return {"task": task, "time_to_complete": 10, "deadline": None, "solutions": ["Call them"], "status": "not started"}


def seed_large_list(store, user_id: str) -> None:
    """10,000 chores plus a zebra and three dentist items, in one batch each."""
    fill(store, user_id, LARGE - 4)
    extra = {"zebra": "Feed the zebra at the city farm", **{f"dentist-{n}": task for n, task in enumerate(DENTIST)}}
    store.batch([PutOp(namespace(TODO, user_id), key, _named(task)) for key, task in extra.items()])


def mark_every_dentist_item_done(messages, tools):
    """Patch every document in trustcall's prompt whose text names the dentist, as a model asked to would."""
    found = [doc_id for doc_id, doc in existing_ids(messages).items() if "dentist" in doc]
    return calls(*(patch(doc_id, replace("/status", "done")) for doc_id in found))


def test_edit_delete_and_mark_all_done_among_ten_thousand(agent, model):
    seed_large_list(agent.store, "Lance")

    model.add("task_maistro", route("todo"), say("Moved to Sunday."))
    model.add("update_todos", patch_where("zebra", replace("/solutions", ["Sunday morning"])))
    turn(agent, "Feeding the zebra at the city farm: do it on Sunday morning.")
    model.add("task_maistro", route("todo"), say("All dentist items are done."))
    model.add("update_todos", mark_every_dentist_item_done)
    turn(agent, "I did everything about the dentist, mark it all done.")
    model.add("task_maistro", route("todo"), say("Removed the zebra."))
    model.add("update_todos", remove_where("zebra"))
    turn(agent, "Forget the zebra feeding at the city farm.")

    items = todos(agent)
    assert len(items) == LARGE - 1
    assert "Feed the zebra at the city farm" not in items
    assert all(items[task]["status"] == "done" for task in DENTIST)
    assert sum(item["status"] == "done" for item in items.values()) == len(DENTIST), "nothing else changed"
    edit = model.calls_in("update_todos")[0]
    assert "Sunday morning" not in edit.system and "zebra" in " ".join(m.text for m in edit.messages)


def test_a_turn_reads_the_list_once_in_one_statement(tmp_path, model):
    """The first turn reads the long list by its head; once the run is over the list is read whole in the
    background; the next turn reads its changes, in the statement that reads every memory."""
    agent = build_graph(tmp_path / "data", chat_model=lambda _settings: model)
    seed_large_list(agent.store, "Lance")
    statements: list[str] = []
    agent.store.conn.set_trace_callback(statements.append)
    reads: list[list[str]] = []
    try:
        model.add("task_maistro", route("todo"), say("Done."), say("You're welcome."))
        model.add("update_todos", mark_every_dentist_item_done)
        for message in ("I did everything about the dentist, mark it all done.", "Thanks!"):
            statements.clear()
            turn(agent, message)
            runtime_of(agent).reads.reader.wait()
            reads.append([s for s in statements if s.startswith(("SELECT '", "WITH stored"))])  # reads, not a write's check
    finally:
        agent.store.conn.set_trace_callback(None)
        close_graph(agent)
    first, second = reads
    head, memories, whole = first
    assert LIST_INDEX in head and "'todo.Lance'" in head and "OFFSET" not in head.upper()
    assert "'todo.Lance'" not in memories, "the turn's other statement reads the single documents only"
    assert "'todo.Lance'" in whole and "maistro_todo_changes" in whole, "read whole after the run"
    assert len(second) == 1 and "'todo.Lance'" in second[0] and "c.seq > -1" not in second[0], "its changes only"
