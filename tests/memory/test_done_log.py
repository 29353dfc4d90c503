"""The done log: a ToDo records when it was finished, and moves off the list into the user's log once that is
MAISTRO_DONE_LOG_AFTER_DAYS past, atomically and once; the prompt carries its counts; stale ToDos are raised once."""

import threading
from datetime import datetime, timedelta, timezone

from langgraph.store.base import PutOp

from graph import open_store
from graph.memory.done_log import log_namespace, move_finished, read_counts, read_log
from graph.memory.kinds import DEFAULT_MEMORY_KINDS, TODO
from graph.memory.store import namespace, search_all
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
