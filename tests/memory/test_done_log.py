"""The done log: a ToDo records when it was finished, and moves off the list into the user's log once that is
MAISTRO_DONE_LOG_AFTER_DAYS past, atomically and once; the prompt carries its counts; stale ToDos are raised once."""

import json
import re
import threading
from datetime import datetime, timedelta, timezone

import pytest
from langgraph.store.base import PutOp
from starlette.requests import Request

from graph import open_store
from graph.memory.admin import EXPORT_FORMAT, export_memories, forget_user, import_memories, user_items
from graph.memory.change_log import change_log
from graph.memory.changes import IrreversibleChangeError, undo_change
from graph.memory.done_log import log_namespace, move_finished, read_counts, read_log
from graph.memory.export_file import InvalidExportError
from graph.memory.kinds import DEFAULT_MEMORY_KINDS, TODO
from graph.memory.store import DONE_LOG, namespace, search_all
from graph.server.memory_api import _memories as page_memories
from graph.server.memory_page import HISTORY_SHOWN, edit_document, memories_version
from testing.helpers import todos, turn
from testing.scripted_model import add, calls, patch_where, replace, route, say, todo

NOW = datetime(2026, 6, 20, 12, tzinfo=timezone.utc)


def done_todo(task: str, finished: datetime | None) -> dict:
    """A done ToDo as stored, finished at `finished` (None: written before ToDos recorded it)."""
    value = {"task": task, "time_to_complete": 5, "deadline": None, "solutions": ["x"], "status": "done"}
    return value if finished is None else {**value, "completed_at": finished.isoformat()}


def test_marking_a_todo_done_records_when_and_reopening_clears_it(agent, model):
    model.add("task_maistro", route("todo"), say("Added."), route("todo"), say("Done."), route("todo"), say("Reopened."))
    model.add(
        "update_todos",
        calls(todo("Water plants", solutions=["Blue can"])),
        patch_where("Water", replace("/status", "done"), add("/completed_at", "1999-01-01T00:00:00+00:00")),
        patch_where("Water", replace("/status", "in progress")),
    )
    turn(agent, "Remind me to water the plants.")
    assert "completed_at" not in todos(agent)["Water plants"]

    before = datetime.now(timezone.utc)
    turn(agent, "Watered them.")
    finished = datetime.fromisoformat(todos(agent)["Water plants"]["completed_at"])
    assert before <= finished <= datetime.now(timezone.utc), "the time of the write, never the model's"

    turn(agent, "Oh no, the plants need more water.")
    assert "completed_at" not in todos(agent)["Water plants"]


def test_finished_todos_move_into_the_done_log_by_the_next_turn(agent, model, monkeypatch):
    monkeypatch.setenv("MAISTRO_DONE_LOG_AFTER_DAYS", "14")
    now = datetime.now(timezone.utc)
    store = agent.store
    ns = namespace(TODO, "Lance")
    store.batch([
        PutOp(ns, "old", done_todo("Renew passport", now - timedelta(days=40))),
        PutOp(ns, "recent", done_todo("Call grandma", now - timedelta(days=2))),
        PutOp(ns, "open", {**done_todo("Clean gutters", None), "status": "not started"}),
    ])
    model.add("task_maistro", say("Hello!"))

    turn(agent, "Hi")

    assert sorted(todos(agent)) == ["Call grandma", "Clean gutters"]
    (entry,) = read_log(store, "Lance", TODO)
    assert entry.document["task"] == "Renew passport" and entry.finished == now - timedelta(days=40)
    month = (now - timedelta(days=40)).strftime("%Y-%m")
    assert read_counts(store, "Lance", TODO)[0] == {month: 1}
    (call,) = model.calls_in("task_maistro")
    assert f"{month}: 1. 1 in all since {month}." in call.system
    assert "Renew passport" not in call.system, "the prompt carries the log's counts, not its entries"


def test_a_done_todo_from_before_completed_at_counts_from_its_last_change(database, monkeypatch):
    monkeypatch.setenv("MAISTRO_DONE_LOG_AFTER_DAYS", "0")
    with open_store(**database) as store:
        store.put(namespace(TODO, "Ann"), "legacy", done_todo("Fix the Yale lock", None))
        written = search_all(store, namespace(TODO, "Ann"))[0].updated_at
        written = written if written.tzinfo else written.replace(tzinfo=timezone.utc)  # SQLite's times are UTC

        assert move_finished(store, "Ann", DEFAULT_MEMORY_KINDS) == 1

        (entry,) = read_log(store, "Ann", TODO)
        assert entry.finished == written and entry.document["completed_at"] == written.isoformat()
        assert search_all(store, namespace(TODO, "Ann")) == []


def test_two_writers_moving_at_once_move_each_todo_exactly_once(database, monkeypatch):
    monkeypatch.setenv("MAISTRO_DONE_LOG_AFTER_DAYS", "1")
    with open_store(**database) as first, open_store(**database) as second:
        ns = namespace(TODO, "Ann")
        first.batch([PutOp(ns, f"k{n:03d}", done_todo(f"Chore {n}", NOW - timedelta(days=n % 60 + 2))) for n in range(300)])
        moved: list[int] = []
        start = threading.Barrier(2)

        def move(store) -> None:
            start.wait()
            moved.append(move_finished(store, "Ann", DEFAULT_MEMORY_KINDS, NOW))

        threads = [threading.Thread(target=move, args=(store,)) for store in (first, second)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        assert sum(moved) == 300
        assert search_all(first, ns) == []
        log = read_log(second, "Ann", TODO)
        assert sorted(entry.document["task"] for entry in log) == sorted(f"Chore {n}" for n in range(300))
        assert len(search_all(first, log_namespace(TODO, "Ann"))) == 300
        assert sum(read_counts(first, "Ann", TODO)[0].values()) == 300


def test_stale_open_todos_are_raised_once(agent, model, monkeypatch):
    monkeypatch.setenv("MAISTRO_STALE_TODO_AFTER_DAYS", "14")
    now = datetime.now(timezone.utc)
    ns = namespace(TODO, "Lance")
    stale = {**done_todo("Pay the old invoice", None), "status": "not started",
             "deadline": (now - timedelta(days=30)).isoformat()}
    late = {**stale, "task": "Return the library book", "deadline": (now - timedelta(days=3)).isoformat()}
    agent.store.batch([PutOp(ns, "stale", stale), PutOp(ns, "late", late)])
    model.add("task_maistro", say("About that invoice…"), say("Sure."))

    turn(agent, "Hi")
    turn(agent, "What's on my list?")

    first, second = (call.system for call in model.calls_in("task_maistro"))
    assert "Stale ToDos" in first and "Pay the old invoice (due " in first.split("Stale ToDos")[1]
    assert "Return the library book (due" not in first, "three days late is overdue, not stale"
    assert "Stale ToDos" not in second, "raised once"
    assert sorted(todos(agent)) == ["Pay the old invoice", "Return the library book"], "kept, not dropped"


def moved_user(store, user_id: str = "Lance") -> None:
    """Two ToDos finished in May 2026 moved into the user's log, one open ToDo on the list."""
    ns = namespace(TODO, user_id)
    store.batch([
        PutOp(ns, "may-1", done_todo("Renew passport", datetime(2026, 5, 3, 9, tzinfo=timezone.utc))),
        PutOp(ns, "may-2", done_todo("Pay the May rent", datetime(2026, 5, 1, 8, tzinfo=timezone.utc))),
        PutOp(ns, "open", {**done_todo("Book swim lessons", None), "status": "not started"}),
    ])
    assert move_finished(store, user_id, DEFAULT_MEMORY_KINDS, NOW) == 2


def test_the_done_log_is_exported_imported_and_forgotten(agent):
    moved_user(agent.store)
    exported = export_memories(agent.store, "Lance")
    assert sorted(entry["task"] for entry in exported[DONE_LOG][TODO.name].values()) == ["Pay the May rent", "Renew passport"]

    counts = import_memories(agent.store, "Copy", exported)

    assert counts[DONE_LOG] == 2
    assert [entry.document for entry in read_log(agent.store, "Copy", TODO)] == [
        entry.document for entry in read_log(agent.store, "Lance", TODO)
    ]
    assert read_counts(agent.store, "Copy", TODO)[0] == {"2026-05": 2}, "counted again"
    assert export_memories(agent.store, "Copy")[DONE_LOG] == exported[DONE_LOG]

    forget_user(agent.store, agent.checkpointer, "Lance")
    assert read_log(agent.store, "Lance", TODO) == [] and read_counts(agent.store, "Lance", TODO) == ({}, None)
    assert len(read_log(agent.store, "Copy", TODO)) == 2, "only that user's log"


@pytest.mark.parametrize(
    ("log", "message"),
    [
        ([], '"done_log" must map memory kinds to their logs'),
        ({"profile": {}}, 'the done log of "profile" cannot be imported: no declared memory kind of that name keeps one'),
        ({"todo": {"k": {**done_todo("A", NOW), "status": "not started"}}},
         "\"done_log\" \"todo\" item \"k\" is invalid: a done-log entry is a ToDo with status 'done' and its completed_at"),
        ({"todo": {"k": done_todo("A", None)}}, "a done-log entry is a ToDo with status 'done' and its completed_at"),
        ({"todo": {"k": {**done_todo("A", None), "completed_at": "2026-05-01T10:00:00"}}}, "completed_at: Input should have timezone info"),
        ({"todo": {"k": done_todo("A", datetime.now(timezone.utc) + timedelta(days=2))}}, "its completed_at is in the future"),
        ({"todo": {"k": {**done_todo("A", NOW), "owner": "Bob"}}}, "owner: Extra inputs are not permitted"),
        ({"todo": {"": done_todo("A", NOW)}}, "its key must be a non-empty string"),
        ({"todo": {f"k{n}": done_todo("A", NOW) for n in range(3)}}, "it holds 4 items; an import takes at most 2"),
    ],
)
def test_an_import_of_a_bad_done_log_is_refused_in_one_sentence_and_writes_nothing(database, monkeypatch, log, message):
    monkeypatch.setenv("MAISTRO_IMPORT_MAX_ITEMS", "2")
    data = {"format": EXPORT_FORMAT, TODO.name: {"open": {**done_todo("Keep me", None), "status": "not started"}}, DONE_LOG: log}
    with open_store(**database) as store:
        with pytest.raises(InvalidExportError, match=re.escape(message)):
            import_memories(store, "Ann", data)
        assert user_items(store, "Ann") == []


def test_the_memory_page_reads_the_active_list_and_stamps_what_it_marks_done(monkeypatch, tmp_path):
    monkeypatch.setenv("MAISTRO_DONE_LOG_AFTER_DAYS", "14")
    with open_store(tmp_path) as store:
        moved_user(store)
        store.put(namespace(TODO, "Lance"), "june", done_todo("Pay the June rent", datetime(2026, 6, 1, tzinfo=timezone.utc)))
        request = Request({"type": "http", "method": "GET", "query_string": b"", "headers": []})
        before = memories_version(store, "Lance", DEFAULT_MEMORY_KINDS, HISTORY_SHOWN)

        response = page_memories(store, "Lance", request, {})

        shown = json.loads(response.body)["documents"][TODO.name]
        assert [document["value"]["task"] for document in shown] == ["Book swim lessons"]
        assert response.headers["etag"] != before, "a move changes what the page shows, so its version"
        assert len(read_log(store, "Lance", TODO)) == 3

        edited = edit_document(store, "Lance", TODO, "open", {"status": "done"})
        assert datetime.fromisoformat(edited["value"]["completed_at"]) >= datetime.now(timezone.utc) - timedelta(minutes=1)


def test_a_list_whose_done_todos_moved_is_read_at_the_cost_of_what_it_holds(database, monkeypatch):
    monkeypatch.setenv("MAISTRO_DONE_LOG_AFTER_DAYS", "1")
    with open_store(**database) as store:
        ns = namespace(TODO, "Ann")
        store.batch([PutOp(ns, f"done-{n:03d}", done_todo(f"Chore {n}", NOW - timedelta(days=5))) for n in range(200)])
        store.put(ns, "open", {**done_todo("Keep me", None), "status": "not started"})
        move_finished(store, "Ann", DEFAULT_MEMORY_KINDS, NOW)
        logged = change_log(store)

        whole = logged.read_memory_rows("Ann", [TODO], {})
        assert [change.key for change in whole.changes[TODO.name]] == ["open"], "no row for each document gone"
        again = logged.read_memory_rows("Ann", [TODO], whole.marks)
        assert again.changes[TODO.name] == [], "and the next read starts after them"
        store.put(ns, "new", {**done_todo("New", None), "status": "not started"})
        assert [change.key for change in logged.read_memory_rows("Ann", [TODO], again.marks).changes[TODO.name]] == ["new"]


def test_undoing_the_change_that_finished_a_logged_todo_is_refused_and_leaves_it_in_the_log(agent, model, monkeypatch):
    monkeypatch.setenv("MAISTRO_DONE_LOG_AFTER_DAYS", "0")
    model.add("task_maistro", route("todo"), say("Added."), route("todo"), say("Done."), say("Hi!"))
    model.add("update_todos", calls(todo("Water plants", solutions=["Blue can"])), patch_where("Water", replace("/status", "done")))
    turn(agent, "Remind me to water the plants.")
    turn(agent, "Watered them.")
    turn(agent, "Hello")  # the next turn moves it

    with pytest.raises(IrreversibleChangeError, match=r"cannot be undone: the ToDo it finished has moved to the done log since \(finished \d{4}-\d\d-\d\d; `maistro done` lists it\)"):
        undo_change(agent.store, "Lance")
    assert todos(agent) == {} and [entry.document["task"] for entry in read_log(agent.store, "Lance", TODO)] == ["Water plants"]


def test_the_stores_sweep_moves_every_users_due_todos(database, monkeypatch):
    monkeypatch.setenv("MAISTRO_DONE_LOG_AFTER_DAYS", "14")
    old = datetime.now(timezone.utc) - timedelta(days=30)
    with open_store(**database) as store:
        store.swept_kinds = DEFAULT_MEMORY_KINDS  # as build_graph gives its graph's
        for user_id in ("Ann", "Bob.*"):
            store.put(namespace(TODO, user_id), "old", done_todo("Renew passport", old))
            store.put(namespace(TODO, user_id), "open", {**done_todo("Keep me", None), "status": "not started"})

        store.sweep_ttl()

        for user_id in ("Ann", "Bob.*"):
            assert [item.key for item in search_all(store, namespace(TODO, user_id))] == ["open"]
            assert [entry.document["task"] for entry in read_log(store, user_id, TODO)] == ["Renew passport"]


def test_a_built_graphs_store_sweeps_the_done_logs_of_the_graphs_kinds(agent):
    assert agent.store.swept_kinds == DEFAULT_MEMORY_KINDS
