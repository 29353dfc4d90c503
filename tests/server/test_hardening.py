"""Fail closed on a real `langgraph dev`: token settings that would run open stop the server, standard clients
log in with X-Api-Key, the operator owns cost and behaviour, and oversized writes are refused quickly."""

import time
from collections.abc import Iterator

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import APIStatusError

from graph.memory.store import user_label
from graph.names import AGENT_NAME
from graph.server.limits import MAX_RUN_INPUT_BYTES, MAX_SEARCH_LIMIT, MAX_STORE_VALUE_BYTES
from testing.langgraph_server import (
    langgraph_dev,
    new_thread,
    offline_environment,
    refused_start,
    token_server,
)
from testing.openai_stub import OpenAIStub, system_text, text_reply, tool_calls_reply
from testing.stored_names import TODO
from testing.stub_script import Script, update

ALICE, BOB = "alice", "bob"
TOKENS = {ALICE: "alice-9a1f-hardened-token", BOB: "bob-4c2e-hardened-token"}
OPERATOR_MODEL = "gpt-operator"
LONG_TOKEN = "tok-0123456789abcdef"


@pytest.fixture(scope="module")
def server(stub: OpenAIStub, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server with two users' tokens, the operator's model name, and the stub endpoint."""
    scratch = tmp_path_factory.mktemp("hardened")
    with token_server(scratch, stub, TOKENS, MAISTRO_MODEL=OPERATOR_MODEL) as url:
        yield url
    assert "task-maistro auth is on: 2 token(s) for 2 user(s)" in (scratch / "server.log").read_text()


@pytest.mark.parametrize(
    ("variables", "sentence"),
    [
        ({"MAISTRO_AUTH_TOKENS": ""}, "MAISTRO_AUTH_TOKENS='' is invalid: it is set but empty"),
        ({"MAISTRO_AUTH_TOKEN": "tok:alice"}, "MAISTRO_AUTH_TOKEN is not a task-maistro setting; did you mean"),
        ({"MAISTRO_AUTH_TOKENS": f"{LONG_TOKEN}:alice,{LONG_TOKEN}:carol"}, "a token is listed more than once"),
        ({"MAISTRO_AUTH_TOKENS": "x:alice"}, "MAISTRO_AUTH_TOKENS: a 1-character token is too easy to guess; use at least 16"),
    ],
)
def test_token_settings_that_would_run_open_stop_the_server(tmp_path, variables, sentence):
    log = refused_start(tmp_path, offline_environment(MAISTRO_DATA_DIR=str(tmp_path / "data"), **variables))
    assert sentence in log


def test_memory_kinds_the_server_cannot_load_stop_it_with_one_sentence(tmp_path):
    variables = {"MAISTRO_DATA_DIR": str(tmp_path / "data"), "MAISTRO_MEMORY_KINDS": "nowhere_kinds:KINDS"}
    log = refused_start(tmp_path, offline_environment(**variables))
    assert "MAISTRO_MEMORY_KINDS='nowhere_kinds:KINDS' is invalid: the module nowhere_kinds cannot be imported" in log


@pytest.mark.parametrize("reload", [False, True], ids=["no-reload", "reload"])
@pytest.mark.parametrize(
    ("variables", "sentence"),
    [
        ({"MAISTRO_AUTH_TOKENS": "x:alice"}, "MAISTRO_AUTH_TOKENS: a 1-character token is too easy to guess; use at least 16"),
        ({"MAISTRO_MEMORY_KINDS": "nowhere_kinds:KINDS"}, "MAISTRO_MEMORY_KINDS='nowhere_kinds:KINDS' is invalid"),
    ],
    ids=["auth", "kinds"],
)
def test_a_bad_setting_stops_langgraph_dev_with_one_sentence_reload_or_not(tmp_path, variables, sentence, reload):
    """`langgraph dev` exits with a status that is not 0 (no reloader left serving nothing), and says why in one
    sentence, with no traceback."""
    log = refused_start(tmp_path, offline_environment(MAISTRO_DATA_DIR=str(tmp_path / "data"), **variables), reload=reload)
    (line,) = [line for line in log.splitlines() if sentence in line]
    assert line.startswith("task-maistro cannot start: ") and "Traceback" not in log


def test_an_open_server_says_so_when_it_starts(tmp_path):
    with langgraph_dev(tmp_path, offline_environment(MAISTRO_DATA_DIR=str(tmp_path / "data"))) as url:
        assert get_sync_client(url=url).threads.create()["thread_id"]
    assert "task-maistro auth is OFF" in (tmp_path / "server.log").read_text()


def test_standard_clients_log_in_with_x_api_key(server):
    alice = get_sync_client(url=server, api_key=TOKENS[ALICE])
    thread_id = alice.threads.create()["thread_id"]
    alice.store.put_item((TODO, user_label(ALICE)), "k", {"task": "Water the ferns"})
    assert alice.store.get_item((TODO, user_label(ALICE)), "k")["value"] == {"task": "Water the ferns"}
    assert [thread["thread_id"] for thread in alice.threads.search()] == [thread_id]
    for headers in ({}, {"X-Api-Key": "wrong"}):
        assert httpx.post(f"{server}/threads/search", json={}, headers=headers).status_code == 401


def test_info_offers_crons_and_the_api_docs_show_how_to_log_in(server):
    headers = {"X-Api-Key": TOKENS[ALICE]}
    assert httpx.get(f"{server}/info", headers=headers).json()["flags"]["crons"] is True
    spec = httpx.get(f"{server}/openapi.json", headers=headers).json()
    schemes = spec["components"]["securitySchemes"]
    assert schemes["BearerToken"] == {**schemes["BearerToken"], "type": "http", "scheme": "bearer"}
    assert schemes["ApiKey"] == {**schemes["ApiKey"], "type": "apiKey", "in": "header", "name": "X-Api-Key"}


def test_oversized_writes_are_refused_quickly_and_search_limits_clamped(server):
    alice = get_sync_client(url=server, api_key=TOKENS[ALICE])
    bob = get_sync_client(url=server, api_key=TOKENS[BOB])
    bob.store.put_item((TODO, user_label(BOB)), "b", {"task": "Renew passport"})
    started = time.monotonic()
    with pytest.raises(APIStatusError) as refused:
        alice.store.put_item((TODO, user_label(ALICE)), "huge", {"task": "x" * 20_000_000})
    assert refused.value.response.status_code == 413 and time.monotonic() - started < 10
    assert bob.store.get_item((TODO, user_label(BOB)), "b")["value"] == {"task": "Renew passport"}
    # Just under the limit; the index embeds only `task`, so this measures the limit, not the embedder.
    alice.store.put_item((TODO, user_label(ALICE)), "big", {"task": "Big note", "solutions": ["y" * (MAX_STORE_VALUE_BYTES - 100)]})

    for _ in range(3):
        alice.store.put_item((TODO, user_label(ALICE)), f"n{_}", {"task": "n"})
    for limit in (10**9, -1, 0):
        found = alice.store.search_items((TODO,), limit=limit)["items"]
        assert 1 <= len(found) <= MAX_SEARCH_LIMIT

    thread_id = alice.threads.create()["thread_id"]
    with pytest.raises((APIStatusError, httpx.HTTPStatusError)) as refused:
        alice.runs.wait(thread_id, AGENT_NAME, input={"messages": [{"role": "user", "content": "z" * (MAX_RUN_INPUT_BYTES + 1)}]})
    assert refused.value.response.status_code == 413


def test_a_client_cannot_choose_the_model_the_role_or_the_number_of_rounds(server, stub: OpenAIStub, script: Script):
    bob = get_sync_client(url=server, api_key=TOKENS[BOB])
    for n in range(10):
        script.add("chat", update("todo"))
        script.add("todo", tool_calls_reply(("ToDo", {"task": f"Task {n}", "solutions": ["Do it"]})))
    script.add("chat", text_reply("Saved."))
    sent_before = len(stub.requests)
    greedy = {"model": "o1-pro", "role": "You are Leaky.", "max_memory_rounds": 100, "collection_prompt_limit": 10**6}

    bob.runs.wait(
        new_thread(bob),
        AGENT_NAME,
        input={"messages": [{"role": "user", "content": "Add ten tasks."}]},
        config={"configurable": greedy, "recursion_limit": 500},
    )

    sent = stub.requests[sent_before:]
    assert {request["model"] for request in sent} == {OPERATOR_MODEL}
    assert not any("Leaky" in system_text(request) for request in sent)
    assert len(sent) == 7, "three memory rounds (the operator's default), then an answer without tools"
    tasks = [item["value"]["task"] for item in bob.store.search_items((TODO,), limit=100)["items"]]
    assert sorted(task for task in tasks if task.startswith("Task ")) == ["Task 0", "Task 1", "Task 2"]
    script.replies.clear()
