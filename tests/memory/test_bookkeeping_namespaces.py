"""The agent's own bookkeeping (the index-outage markers, `("unindexed", user)`) is out of reach of every path a user
writes through: the store API (with auth on or off), an import, an undo of a forged history entry, a memory kind's
name; and an export leaves it out (issue 31.2). What the markers' reader trusts is in tests/storage/test_embedding_outage.py;
the servers' own stores in tests/server/test_bookkeeping.py."""

import asyncio
import json
from types import SimpleNamespace

import pytest
from langgraph_sdk import Auth
from typer.testing import CliRunner

from graph import open_store
from graph.app.cli import app
from graph.memory.admin import EXPORT_FORMAT, InvalidExportError, export_memories, import_memories, user_items
from graph.memory.changes import IrreversibleChangeError, undo_change
from graph.memory.store import HISTORY, UNINDEXED, namespace, search_all, user_label
from graph.server import auth as server_auth
from graph.server.memory_page import PageError, undo
from testing.helpers import LANCE_PROFILE, SWIM_ITEM
from testing.stored_names import PROFILE, TODO

# What an attacker files as a marker of their own: a pointer at bob's profile, with an index and a TTL of 6 ms.
AT_BOBS_PROFILE = {"namespace": [PROFILE, "bob"], "key": "user_profile", "index": ["name"], "ttl": 0.0001}
REFUSED_SECTION = f"the section \"{UNINDEXED}\" cannot be imported: '{UNINDEXED}' holds the agent's own bookkeeping, which no import writes"


def forged_entry(**fields) -> dict:
    """A history entry saying that a document of the bookkeeping's namespace was deleted: undoing it would restore it."""
    return {
        "id": "c1", "time": "2026-01-05T10:00:00+00:00", "order": 0, "thread_id": "", "kind": UNINDEXED,
        "message": "forged", "action": "deleted", "key": "todo:planted", "before": AT_BOBS_PROFILE, "after": None,
        **fields,
    }


def test_an_import_writes_nothing_into_the_agents_bookkeeping(tmp_path):
    crafted = tmp_path / "crafted.json"
    crafted.write_text(json.dumps({"format": EXPORT_FORMAT, TODO: {"swim": SWIM_ITEM},
                                   UNINDEXED: {"todo:planted": AT_BOBS_PROFILE}}))

    result = CliRunner().invoke(app, ["import", str(crafted), "--user", "alice", "--data-dir", str(tmp_path / "data")])

    assert (result.exit_code, result.output) == (1, f"Cannot import {crafted}: {REFUSED_SECTION}.\n")
    with open_store(tmp_path / "data") as store:
        assert user_items(store, "alice") == []
        with pytest.raises(InvalidExportError) as refused:
            import_memories(store, "alice", {"format": EXPORT_FORMAT, HISTORY: {"c1": forged_entry()}})
        assert str(refused.value) == (
            f"\"history\" item \"c1\" is invalid: '{UNINDEXED}' holds the agent's own bookkeeping, which no import writes"
        )
        assert user_items(store, "alice") == []


def test_an_export_leaves_the_agents_bookkeeping_out_and_imports_again(tmp_path):
    with open_store(tmp_path / "data") as store:
        store.put(namespace(TODO, "alice"), "swim", SWIM_ITEM)
        store.put(namespace(UNINDEXED, "alice"), "todo:swim", {}, index=False)

        exported = export_memories(store, "alice")
        import_memories(store, "copy", exported)

        assert UNINDEXED not in exported and exported[TODO] == {"swim": SWIM_ITEM}
        assert search_all(store, namespace(UNINDEXED, "copy")) == []


def test_undoing_a_forged_history_entry_writes_nothing_into_the_agents_bookkeeping(tmp_path):
    with open_store(tmp_path / "data") as store:
        store.put(namespace(PROFILE, "bob"), "user_profile", LANCE_PROFILE)
        store.put(namespace(HISTORY, "alice"), "c1", forged_entry())

        with pytest.raises(IrreversibleChangeError, match=f"no memory can be called '{UNINDEXED}'"):
            undo_change(store, "alice", "c1")
        with pytest.raises(PageError) as page:
            undo(store, "alice", "c1", [])

        assert page.value.status == 409
        assert search_all(store, (UNINDEXED,)) == []
        assert [item.namespace for item in user_items(store, "alice")] == [namespace(HISTORY, "alice")]


@pytest.mark.parametrize("tokens", [{}, {"alice-token-0123456789": "alice"}], ids=["auth off", "auth on"])
def test_no_store_request_reaches_the_agents_bookkeeping(monkeypatch, tokens):
    monkeypatch.setattr(server_auth, "TOKENS", tokens)
    caller = SimpleNamespace(identity="alice" if tokens else server_auth.ANONYMOUS)
    own = (UNINDEXED, user_label("alice"))
    requests = [
        ("put", {"namespace": own, "key": "todo:planted", "value": AT_BOBS_PROFILE}),
        ("get", {"namespace": own, "key": "todo:planted"}),
        ("delete", {"namespace": own, "key": "todo:planted"}),
        ("search", {"namespace": own}),
        ("search", {"namespace": (UNINDEXED,)}),
        ("list_namespaces", {"namespace": (UNINDEXED,)}),
    ]
    for action, request in requests:
        with pytest.raises(Auth.exceptions.HTTPException) as refused:
            asyncio.run(server_auth.own_memories(SimpleNamespace(action=action, user=caller), dict(request)))
        assert (refused.value.status_code, refused.value.detail) == (
            403, f"The namespace '{UNINDEXED}' holds the agent's own bookkeeping; no request may use it"
        ), action
