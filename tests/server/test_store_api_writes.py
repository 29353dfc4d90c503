"""Store API writes to the memories on a real `langgraph dev` follow the rules every change follows: checked
against the schema (HTTP 422 with a sentence, nothing stored), secrets redacted, recorded in the history once,
and undoable on the memory page; on a server with tokens and on an open one."""

from collections.abc import Iterator

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import APIStatusError

from graph.memory.api_writes import API_MESSAGE
from graph.memory.store import HISTORY, UNINDEXED, user_label
from testing.langgraph_server import langgraph_dev, offline_environment, token_server
from testing.openai_stub import OpenAIStub
from testing.stored_names import PROFILE, TODO

TOKENS = {"alice": "alice-store-7d2b"}
RENT = {"task": "Pay rent", "time_to_complete": 5, "deadline": None, "solutions": ["Bank app"], "status": "not started"}
CARD = "4111 1111 1111 1111"


@pytest.fixture(scope="module", params=["tokens", "open"])
def server(request, stub: OpenAIStub, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """A server with alice's token, or an open one: its URL and the headers that make a client alice."""
    scratch = tmp_path_factory.mktemp(f"store-api-{request.param}")
    if request.param == "tokens":
        with token_server(scratch, stub, TOKENS) as url:
            yield {"url": url, "api_key": TOKENS["alice"], "query": {}}
        return
    environment = offline_environment(MAISTRO_DATA_DIR=str(scratch / "data"), OPENAI_BASE_URL=stub.base_url)
    with langgraph_dev(scratch, environment) as url:
        yield {"url": url, "api_key": None, "query": {"user_id": "alice"}}


def history(client) -> list[dict]:
    """Alice's history entries in the server's store, oldest first."""
    items = client.store.search_items((HISTORY, user_label("alice")), limit=100)["items"]
    return sorted((item["value"] for item in items), key=lambda entry: (entry["time"], entry["order"]))


def refusal(raised: pytest.ExceptionInfo) -> tuple[int, str]:
    """The HTTP status and the sentence of a refused request."""
    return raised.value.response.status_code, raised.value.response.json()["detail"]


def test_a_document_that_does_not_fit_its_schema_is_refused_with_a_sentence(server):
    client = get_sync_client(url=server["url"], api_key=server["api_key"])
    todo_ns = (TODO, user_label("alice"))

    with pytest.raises(APIStatusError) as bad_todo:
        client.store.put_item(todo_ns, "bad", {**RENT, "solutions": "not a list"})
    with pytest.raises(APIStatusError) as bad_profile:
        client.store.put_item((PROFILE, user_label("alice")), "other-key", {"name": "Alice"})
    with pytest.raises(APIStatusError) as too_deep:
        client.store.put_item((*todo_ns, "sub"), "deep", RENT)

    assert refusal(bad_todo) == (422, "The ToDo was not saved: solutions: Input should be a valid array.")
    assert refusal(bad_profile) == (422, 'The profile was not saved: the profile is kept under the key "user_profile" only.')
    assert refusal(too_deep) == (422, "The ToDo was not saved: todo memories live in the namespace (todo, user) only.")
    assert client.store.get_item(todo_ns, "bad") is None and client.store.search_items(todo_ns)["items"] == []


def test_writes_are_recorded_once_redacted_and_can_be_undone_on_the_memory_page(server):
    client = get_sync_client(url=server["url"], api_key=server["api_key"])
    todo_ns = (TODO, user_label("alice"))
    before = len(history(client))

    client.store.put_item(todo_ns, "rent", RENT)
    client.store.put_item(todo_ns, "rent", RENT)  # sent again: nothing changes, nothing more is recorded
    client.store.put_item(todo_ns, "rent", {**RENT, "solutions": [f"Card {CARD}"]})
    stored = client.store.get_item(todo_ns, "rent")["value"]
    client.store.delete_item(todo_ns, "rent")
    entries = history(client)[before:]

    assert CARD not in str(stored) and stored["solutions"] == ["Card [redacted]"]
    assert [(e["action"], e["key"], e["message"]) for e in entries] == [
        ("created", "rent", API_MESSAGE), ("updated", "rent", API_MESSAGE), ("deleted", "rent", API_MESSAGE)
    ]
    assert entries[2]["before"] == stored and CARD not in str(entries)

    headers = {"Authorization": f"Bearer {server['api_key']}"} if server["api_key"] else {}
    undone = httpx.post(
        f"{server['url']}/memories/api/history/{entries[2]['id']}/undo", headers=headers, params=server["query"], timeout=30
    )
    assert undone.status_code == 200, undone.text
    assert client.store.get_item(todo_ns, "rent")["value"] == stored


def test_the_agents_bookkeeping_is_refused_with_tokens_and_on_an_open_server(server):
    """An open server has no owners, but its store rule still keeps every request off the index-outage markers."""
    client = get_sync_client(url=server["url"], api_key=server["api_key"])
    marker = {"namespace": [PROFILE, user_label("bob")], "key": "user_profile", "index": ["name"], "ttl": 1}

    with pytest.raises(APIStatusError) as planted:
        client.store.put_item((UNINDEXED, user_label("alice")), "todo:planted", marker)
    with pytest.raises(APIStatusError) as listed:
        client.store.list_namespaces(prefix=[UNINDEXED])

    refused = (403, f"The namespace '{UNINDEXED}' holds the agent's own bookkeeping; no request may use it")
    assert (refusal(planted), refusal(listed)) == (refused, refused)
