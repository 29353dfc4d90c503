"""The agent's own bookkeeping on the servers' own stores (issue 31.2): on `langgraph dev` and on Aegra, with alice's
and bob's tokens, no store request reaches the index-outage markers' namespace and no undo of a forged history entry
writes there; and a marker planted in alice's namespace straight into Aegra's database (where a store API write, an
import or an undo would have put it before) makes alice's next memory turn touch nothing of bob's.

The servers' stores are their own (no table of the project's there), so the store rule refuses the namespace and
the markers' reader trusts only where a marker is filed (graph/memory/index_outage.py)."""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import APIStatusError
from psycopg.types.json import Jsonb

from graph.memory.store import HISTORY, UNINDEXED, user_label
from testing.aegra_server import SERVER_KINDS, aegra_instances
from testing.langgraph_server import langgraph_dev, new_thread, play, token_environment
from testing.openai_stub import OpenAIStub, text_reply, tool_calls_reply
from testing.postgres_server import create_database
from testing.stored_names import INSTRUCTIONS, INSTRUCTIONS_KEY, PROFILE, PROFILE_KEY, TODO
from testing.stub_script import Script, update

ALICE, BOB = "alice", "bob"
TOKENS = {ALICE: "alice-books-4c1d7e-token", BOB: "bob-books-9a3f2b-token"}
BOB_PROFILE = {"name": "Bob", "location": "Boston"}
BOB_INSTRUCTIONS = {"memory": "Bob wants short tasks."}
# A marker in the old format, as alice could file it: a pointer at bob's profile, with an index and a one-minute TTL.
AT_BOBS_PROFILE = {"namespace": [PROFILE, user_label(BOB)], "key": PROFILE_KEY, "index": ["name"], "ttl": 1}
REFUSED = f"The namespace '{UNINDEXED}' holds the agent's own bookkeeping; no request may use it"
DROPPED = "Dropped a malformed index-outage marker 'broken'"


@dataclass
class Server:
    """A running server: its kind, URL, log, and (on Aegra) its database."""

    kind: str
    url: str
    log: Path
    database_url: str = ""

    def client(self, user: str) -> SyncLangGraphClient:
        """A client of the server acting as `user` (with their token)."""
        return get_sync_client(url=self.url, api_key=TOKENS[user], timeout=60)


@contextmanager
def server_of(kind: str, directory: Path, stub: OpenAIStub, postgres_url: str) -> Iterator[Server]:
    env = token_environment(directory, stub, TOKENS)
    if kind == "aegra":
        database_url = create_database(postgres_url)
        with aegra_instances(directory, env, database_url) as (url,):
            yield Server(kind, url, directory / "aegra-0.log", database_url)
        return
    with langgraph_dev(directory, env) as url:
        yield Server(kind, url, directory / "server.log")


@pytest.fixture(scope="module", params=SERVER_KINDS)
def server(request, stub: OpenAIStub, tmp_path_factory: pytest.TempPathFactory, postgres_url: str) -> Iterator[Server]:
    """The module's server of each kind, with bob's profile and instructions written through his store API."""
    with server_of(request.param, tmp_path_factory.mktemp(f"bookkeeping-{request.param}"), stub, postgres_url) as running:
        bob = running.client(BOB)
        bob.store.put_item((PROFILE, user_label(BOB)), PROFILE_KEY, BOB_PROFILE)
        bob.store.put_item((INSTRUCTIONS, user_label(BOB)), INSTRUCTIONS_KEY, BOB_INSTRUCTIONS)
        yield running


def bobs_memories(server: Server) -> dict:
    bob = server.client(BOB)
    return {kind: [item["value"] for item in bob.store.search_items((kind, user_label(BOB)), limit=10)["items"]]
            for kind in (PROFILE, INSTRUCTIONS)}


def refusal(call) -> tuple[int, bool]:
    """The status of a refused request, and whether it says why in the store rule's words (langgraph-api answers
    `{"detail": ...}`, Aegra an error object of its own)."""
    with pytest.raises(APIStatusError) as refused:
        call()
    return refused.value.response.status_code, REFUSED in refused.value.response.text


def test_no_store_request_reaches_the_agents_bookkeeping(server):
    alice = server.client(ALICE)
    own = (UNINDEXED, user_label(ALICE))
    requests = {
        "put": lambda: alice.store.put_item(own, "todo:planted", AT_BOBS_PROFILE),
        "get": lambda: alice.store.get_item(own, "todo:planted"),
        "delete": lambda: alice.store.delete_item(own, "todo:planted"),
        "search": lambda: alice.store.search_items(own),
        "search by kind": lambda: alice.store.search_items((UNINDEXED,)),
        "list": lambda: alice.store.list_namespaces(prefix=[UNINDEXED]),
    }

    assert {name: refusal(call) for name, call in requests.items()} == {name: (403, True) for name in requests}


def test_undoing_a_forged_history_entry_on_the_memory_page_writes_nothing_there(server):
    alice = server.client(ALICE)
    forged = {
        "id": "forged", "time": "2026-01-05T10:00:00+00:00", "order": 0, "thread_id": "", "kind": UNINDEXED,
        "message": "forged", "action": "deleted", "key": "todo:planted", "before": AT_BOBS_PROFILE, "after": None,
    }
    alice.store.put_item((HISTORY, user_label(ALICE)), "forged", forged)

    undone = httpx.post(f"{server.url}/memories/api/history/forged/undo",
                        headers={"Authorization": f"Bearer {TOKENS[ALICE]}"}, timeout=60)

    assert (undone.status_code, undone.json()["detail"]) == (
        409, f"Change forged cannot be undone: no memory can be called '{UNINDEXED}'."
    )
    assert bobs_memories(server) == {PROFILE: [BOB_PROFILE], INSTRUCTIONS: [BOB_INSTRUCTIONS]}


def plant_markers(database_url: str) -> None:
    """File markers in alice's namespace straight into the server's `store` table: one naming bob's profile, one
    malformed."""
    prefix = f"{UNINDEXED}.{user_label(ALICE)}"
    with psycopg.connect(database_url, autocommit=True) as connection:
        for key, value in (("todo:planted", AT_BOBS_PROFILE), ("broken", {})):
            connection.execute(
                "INSERT INTO store (prefix, key, value, created_at, updated_at) VALUES (%s, %s, %s, now(), now())",
                (prefix, key, Jsonb(value)),
            )


def bobs_rows(database_url: str) -> list[tuple]:
    with psycopg.connect(database_url) as connection:
        return connection.execute(
            "SELECT prefix, key, updated_at, expires_at FROM store WHERE prefix IN (%s, %s) ORDER BY prefix",
            (f"{PROFILE}.{user_label(BOB)}", f"{INSTRUCTIONS}.{user_label(BOB)}"),
        ).fetchall()


# langgraph dev keeps its store in its own process: nothing reaches it but the store API, which refuses the namespace.
@pytest.mark.parametrize("server", ["aegra"], indirect=True)
def test_a_marker_planted_in_alices_namespace_touches_nothing_of_bobs(server, script: Script):
    plant_markers(server.database_url)
    before = bobs_rows(server.database_url)
    alice = server.client(ALICE)
    script.add("chat", update("todo"), text_reply("I added the dentist."))
    script.add("todo", tool_calls_reply(("ToDo", {"task": "Book the dentist", "solutions": ["Call the clinic"]})))

    play(alice, new_thread(alice), "Remind me to book the dentist.")

    assert [item["value"]["task"] for item in alice.store.search_items((TODO, user_label(ALICE)))["items"]] == [
        "Book the dentist"
    ]
    assert bobs_rows(server.database_url) == before and {row[3] for row in before} == {None}
    with psycopg.connect(server.database_url) as connection:
        assert connection.execute("SELECT count(*) FROM store WHERE prefix LIKE %s", (f"{UNINDEXED}.%",)).fetchone() == (0,)
    assert server.log.read_text(errors="replace").count(DROPPED) == 1
    assert script.remaining() == {}
