"""No silent loss: an update that fails is kept as a pending change of its user alone, which the user retries
against the memories as they are now (once, whatever races it) or drops; through the real ChatOpenAI against the
strict stub."""

import asyncio
import json
from types import SimpleNamespace

import pytest
from langgraph.store.base import PutOp
from langgraph_sdk import Auth

from graph import build_graph, close_graph
from graph.app.session import ChatSession, Note
from graph.backends.model import load_chat_model
from graph.memory.admin import EXPORT_FORMAT, InvalidExportError, export_memories, forget_user, import_memories
from graph.memory.changes import list_history
from graph.memory.pending import (
    PendingChange,
    UnknownPendingError,
    drop_pending,
    keep_pending,
    list_pending,
    pending_change,
)
from graph.memory.store import PENDING, namespace, user_label
from graph.nodes.pending_retry import retry_pending
from graph.runtime import runtime_of
from graph.server import auth as server_auth
from graph.server import pending_page
from graph.server.memory_page import PageError, add_document, memories_version, read_memories
from prompts import TEXT_ANSWER_PROBLEM
from testing.helpers import kept, todos
from testing.openai_stub import text_reply, tool_calls_reply
from testing.stub_script import kind_of, update

DENTIST = "Book a dentist"
ASKED = "I need to book a dentist, the portal password is Swordfish42."
ADD_DENTIST = tool_calls_reply(("ToDo", {"task": DENTIST, "solutions": ["Call Dr. Lee"]}))


@pytest.fixture(params=["sqlite", "postgres"])
def served(request, stub, tmp_path):
    """The agent on SQLite and on PostgreSQL, through the real ChatOpenAI against the stub."""
    database_url = request.getfixturevalue("fresh_database") if request.param == "postgres" else ""
    agent = build_graph(tmp_path / "data", database_url=database_url)
    yield agent
    close_graph(agent)


def failed_turn(agent, script) -> PendingChange:
    """A turn whose ToDo extraction is answered in text: the update fails and is kept."""
    script.add("chat", update("todo", content="I'll add the dentist."), text_reply("Sorry, the dentist did not save."))
    script.add("todo", text_reply("Sure! I have added 'Book a dentist' to the list."))
    events = list(ChatSession(agent, "Lance", "t1").send(ASKED))
    assert [event for event in events if isinstance(event, Note)] == [
        Note(f"ToDo list not updated: the update failed{kept(agent.store)}", failed=True)
    ]
    (pending,) = list_pending(agent.store, "Lance")
    return pending


def retry(agent, pending: PendingChange, user_id: str = "Lance"):
    return retry_pending(agent.store, runtime_of(agent), load_chat_model, user_id, pending)


def test_a_failed_update_is_kept_with_its_message_redacted_and_its_problem(served, stub, script):
    pending = failed_turn(served, script)

    assert (pending.kind, pending.thread_id, pending.problem, pending.proposal) == ("todo", "t1", TEXT_ANSWER_PROBLEM, None)
    assert "book a dentist" in pending.message and "Swordfish42" not in pending.message
    assert "Swordfish42" not in json.dumps([item.value for item in served.store.search(namespace(PENDING, "Lance"))])
    assert todos(served) == {} and stub.rejections == []


def test_a_retry_proposes_again_against_the_current_memory_saves_once_and_removes_the_pending_change(served, stub, script):
    pending = failed_turn(served, script)
    add_document(served.store, "Lance", runtime_of(served).kinds[1], {"task": "Water the plants", "solutions": ["Blue can"]})
    script.add("todo", ADD_DENTIST)
    sent = len(stub.requests)

    outcome = retry(served, pending)

    assert (outcome.failed, outcome.notes) == (False, [f"ToDo added: {DENTIST}"])
    (request,) = stub.requests[sent:]
    assert kind_of(request) == "todo" and "Water the plants" in json.dumps(request), "it sees the memory as it is now"
    assert "Swordfish42" not in json.dumps(request) and "book a dentist" in json.dumps(request)
    assert sorted(todos(served)) == [DENTIST, "Water the plants"] and list_pending(served.store, "Lance") == []
    entry = list_history(served.store, "Lance")[-1]
    assert (entry["thread_id"], entry["message"], entry["after"]["task"]) == ("t1", pending.message, DENTIST)

    again = retry(served, pending)  # the same retry once more (a replay): it answers from what it saved

    assert (again.failed, again.notes) == (False, [f"ToDo added: {DENTIST}"])
    assert len(stub.requests) == sent + 1, "no model call"
    assert [entry["after"]["task"] for entry in list_history(served.store, "Lance")] == ["Water the plants", DENTIST]
    assert sorted(todos(served)) == [DENTIST, "Water the plants"]


def test_a_retry_that_fails_again_leaves_the_pending_change_as_it_was(served, stub, script):
    pending = failed_turn(served, script)
    script.add("todo", text_reply("Done, it is on your list."))

    outcome = retry(served, pending)

    assert outcome.failed and outcome.notes == [f"ToDo list not updated: the update failed (kept as pending change {pending.id[:8]}, to retry or drop)"]
    assert list_pending(served.store, "Lance") == [pending] and todos(served) == {}


def test_a_retry_of_a_dropped_pending_change_saves_nothing(served, stub, script):
    pending = failed_turn(served, script)
    drop_pending(served.store, "Lance", pending)
    script.add("todo", ADD_DENTIST, ADD_DENTIST)

    outcome = retry(served, pending)  # read before the drop, sent after it

    assert outcome.failed and outcome.notes == ["ToDo list not updated: the update failed"]
    assert todos(served) == {} and list_pending(served.store, "Lance") == []


def test_a_pending_change_belongs_to_its_user_alone_and_forget_removes_it(served, stub, script):
    pending = failed_turn(served, script)

    assert list_pending(served.store, "Bob") == []
    for given in (pending.id, pending.id[:8]):
        with pytest.raises(UnknownPendingError):
            pending_change(served.store, "Bob", given)
    script.add("todo", ADD_DENTIST, ADD_DENTIST)
    assert retry(served, pending, "Bob").failed, "a pending change passed for another user saves nothing"
    assert todos(served, "Bob") == {}
    assert list_pending(served.store, "Lance") == [pending] and todos(served) == {}
    assert "pending" not in export_memories(served.store, "Lance", runtime_of(served).kinds), "exports leave them out"

    forget_user(served.store, served.checkpointer, "Lance")

    assert list_pending(served.store, "Lance") == []


@pytest.mark.parametrize("tokens", [{}, {"alice-token-0123456789": "alice"}], ids=["auth off", "auth on"])
def test_no_store_request_reaches_a_pending_change(monkeypatch, tokens):
    monkeypatch.setattr(server_auth, "TOKENS", tokens)
    caller = SimpleNamespace(identity="alice" if tokens else server_auth.ANONYMOUS)
    for owner in ("alice", "bob"):
        own = (PENDING, user_label(owner))
        for action, request in [
            ("put", {"namespace": own, "key": "p1", "value": {"problem": "forged"}}),
            ("get", {"namespace": own, "key": "p1"}),
            ("delete", {"namespace": own, "key": "p1"}),
            ("search", {"namespace": own}),
            ("list_namespaces", {"namespace": (PENDING,)}),
        ]:
            with pytest.raises(Auth.exceptions.HTTPException) as refused:
                asyncio.run(server_auth.own_memories(SimpleNamespace(action=action, user=caller), dict(request)))
            assert refused.value.status_code == 403, (owner, action)


def test_a_replayed_failure_keeps_one_pending_change_and_an_unreadable_one_is_left_out(tmp_path):
    from graph import open_store

    with open_store(tmp_path / "data") as store:
        fields = {"seed": "s", "thread_id": "t", "message": "m", "problem": "p", "proposal": None}
        first = keep_pending(store, "Lance", "todo", **fields)
        again = keep_pending(store, "Lance", "todo", **fields)
        store.batch([PutOp(namespace(PENDING, "Lance"), "junk", {"not": "a pending change"})])

        assert first.id == again.id and [pending.id for pending in list_pending(store, "Lance")] == [first.id]


def test_the_page_lists_retries_and_drops_only_the_callers_own_and_its_poll_sees_them(served, stub, script):
    kinds = runtime_of(served).kinds
    empty = memories_version(served.store, "Lance", kinds, 50)
    pending = failed_turn(served, script)
    listed = memories_version(served.store, "Lance", kinds, 50)

    assert listed != empty, "a poll sees a new pending change"
    assert read_memories(served.store, "Lance", kinds)["pending"] == [pending.model_dump()]
    assert read_memories(served.store, "Bob", kinds)["pending"] == []
    for attempt in (lambda: pending_page.drop(served.store, "Bob", pending.id),
                    lambda: pending_page.retry(served.store, "Bob", pending.id, runtime_of(served)),
                    lambda: pending_page.drop(served.store, "Lance", pending.id[:8])):
        with pytest.raises(PageError) as refused:
            attempt()
        assert refused.value.status == 404
    script.add("todo", text_reply("It is on your list now."))

    assert pending_page.retry(served.store, "Lance", pending.id, runtime_of(served)) == {
        "failed": True, "notes": [f"ToDo list not updated: the update failed{kept(served.store)}"]
    }
    script.add("todo", ADD_DENTIST)
    assert pending_page.retry(served.store, "Lance", pending.id, runtime_of(served)) == {
        "failed": False, "notes": [f"ToDo added: {DENTIST}"]
    }
    assert list_pending(served.store, "Lance") == [] and memories_version(served.store, "Lance", kinds, 50) != listed


def test_the_page_drops_a_pending_change(served, stub, script):
    pending = failed_turn(served, script)

    assert pending_page.drop(served.store, "Lance", pending.id) == pending.model_dump()
    assert list_pending(served.store, "Lance") == [] and todos(served) == {}


def test_an_import_writes_no_pending_change(tmp_path):
    from graph import open_store

    forged = {"id": "p1", "time": "2026-01-05T10:00:00+00:00", "kind": "todo", "thread_id": "t", "message": "m", "problem": "p"}
    with open_store(tmp_path / "data") as store:
        with pytest.raises(InvalidExportError, match="'pending' holds the agent's own bookkeeping, which no import writes"):
            import_memories(store, "Lance", {"format": EXPORT_FORMAT, PENDING: {"p1": forged}})
        assert list_pending(store, "Lance") == []
