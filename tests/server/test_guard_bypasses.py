"""Ways around the server guard (graph/server/guard.py, limits.py), on `langgraph dev` and on Aegra.

Each attack is one the guard let through before: a guessed key sent beside a valid one (never counted), a
run input in a field only one route has (`/threads/{id}/commands`, A2A, MCP), a lone surrogate or a `NaN`
(500s), wrong tokens from a DNS-rebound page (the user locked out), a rotating `X-Forwarded-For` (never
locked out), fields without a limit (900 KiB assistant names, run checkpoints), and a run without a user
message (a thread left in error). One server of each kind runs for the module with tokens and a low failed-login
limit; every test that counts wrong tokens sends them from a loopback address of its own.
"""

import asyncio
import ipaddress
import json
import uuid
from collections.abc import Iterator

import httpx
import pytest
from langgraph_sdk import Auth, get_sync_client
from starlette.datastructures import Headers

from graph.names import AGENT_NAME
from graph.server import auth as server_auth
from graph.server.guard import client_address
from graph.server.limits import MAX_RUN_INPUT_BYTES, RequestRefused, check_body
from graph.settings import Settings, SettingsError
from testing.aegra_server import SERVER_KINDS, api_server
from testing.langgraph_server import token_environment
from testing.openai_stub import OpenAIStub

ALICE, BOB = "alice", "bob"
TOKENS = {ALICE: "alice-round-two-7c1d9e", BOB: "bob-round-two-2f8a40"}
MAX_FAILED_LOGINS = 5
PROXY = "127.0.0.5"
OVERSIZED = "x" * (MAX_RUN_INPUT_BYTES + 1024)
NINE_HUNDRED_KIB = "n" * (900 * 1024)
NO_USER_MESSAGE = [{"messages": []}, {}, {"messages": [{"role": "assistant", "content": "Hi."}]}]


def user_says(text: str) -> dict:
    """A run input with one user message."""
    return {"messages": [{"role": "user", "content": text}]}


def a2a_message(*parts: dict, text: str = "Hi") -> dict:
    """An A2A user message: a text part, then `parts`."""
    return {"role": "user", "parts": [{"kind": "text", "text": text}, *parts], "messageId": str(uuid.uuid4())}


def alice() -> dict[str, str]:
    """Alice's valid token."""
    return {"X-Api-Key": TOKENS[ALICE]}


def from_address(address: str) -> httpx.Client:
    """A client whose connections come from `address` (a loopback address of its own: its own failed logins)."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=30)


@pytest.fixture(scope="module", params=SERVER_KINDS)
def server_kind(request: pytest.FixtureRequest) -> str:
    """Each test runs on `langgraph dev` and on Aegra."""
    return request.param


@pytest.fixture(scope="module")
def server(server_kind: str, stub: OpenAIStub, tmp_path_factory: pytest.TempPathFactory, postgres_url: str) -> Iterator[str]:
    """The module's server: tokens on, no MAISTRO_ALLOWED_HOSTS, one trusted proxy, a low failed-login limit."""
    scratch = tmp_path_factory.mktemp(f"{server_kind}-round-two")
    env = token_environment(
        scratch, stub, TOKENS, MAISTRO_MAX_FAILED_LOGINS=str(MAX_FAILED_LOGINS), MAISTRO_TRUSTED_PROXIES=PROXY
    )
    with api_server(server_kind, scratch, env, postgres_url) as url:
        yield url
    log = "".join(path.read_text(errors="replace") for path in scratch.glob("*.log"))
    assert "failed logins from 10.20.30.40" in log, "the proxied client, not the proxy, was locked out"


@pytest.fixture(scope="module")
def thread_id(server: str) -> str:
    """A thread of alice's."""
    return get_sync_client(url=server, api_key=TOKENS[ALICE]).threads.create()["thread_id"]


# Unit tests: no server.


def test_forwarded_for_is_believed_only_from_a_trusted_proxy():
    proxies = Settings.from_environ({"MAISTRO_TRUSTED_PROXIES": "10.0.0.0/8, 192.168.1.7"}).trusted_proxies
    networks = tuple(ipaddress.ip_network(entry) for entry in proxies)
    assert client_address("203.0.113.9", ["1.2.3.4"], networks) == "203.0.113.9"
    assert client_address("10.1.1.1", ["1.2.3.4"], networks) == "1.2.3.4"
    assert client_address("10.1.1.1", ["6.6.6.6, 1.2.3.4", "192.168.1.7"], networks) == "1.2.3.4"
    assert client_address("10.1.1.1", [], networks) == "10.1.1.1"
    assert client_address("::ffff:10.1.1.1", ["1.2.3.4"], networks) == "1.2.3.4", "a dual-stack socket's IPv4 peer"
    assert client_address("127.0.0.1", ["1.2.3.4"], ()) == "127.0.0.1"
    with pytest.raises(SettingsError, match="MAISTRO_TRUSTED_PROXIES='nginx' is invalid: 'nginx' is not an IP"):
        Settings.from_environ({"MAISTRO_TRUSTED_PROXIES": "nginx"})


def test_every_reader_of_a_credential_refuses_a_repeated_header(monkeypatch):
    monkeypatch.setattr(server_auth, "TOKENS", {TOKENS[ALICE]: ALICE})
    raw = [(b"x-api-key", b"guess-0000000000000000"), (b"x-api-key", TOKENS[ALICE].encode())]
    for headers in (raw, Headers(raw=raw), [(b"authorization", b"Bearer a"), (b"Authorization", b"Bearer b")]):
        with pytest.raises(server_auth.RepeatedCredentialError):
            server_auth.presented_token(headers)
    with pytest.raises(Auth.exceptions.HTTPException) as refused:
        asyncio.run(server_auth.authenticate(Headers(raw=raw)))
    assert refused.value.status_code == 400
    single = [(b"authorization", f"Bearer {TOKENS[ALICE]}".encode()), (b"x-api-key", b"guess-0000000000000000")]
    assert {server_auth.presented_token(form) for form in (single, Headers(raw=single), dict(single))} == {TOKENS[ALICE]}


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b'{"metadata": {"note": "\\ud800"}}', "lone surrogate"),
        (b'{"\\udfff": 1}', "lone surrogate"),
        (b'{"metadata": {"n": NaN}}', "NaN"),
        (b'{"metadata": {"n": -Infinity}}', "-Infinity"),
        (b'{"metadata": {"n": 1e999999}}', "not finite"),
        (json.dumps({"input": {"messages": []}}).encode(), "holds no user message"),
        (json.dumps({"id": 1, "method": "run.start", "params": {"assistant_id": AGENT_NAME, "input": {}}}).encode(), "no user message"),
        (json.dumps({"method": "tools/call", "params": {"name": AGENT_NAME, "arguments": {"messages": []}}}).encode(), "arguments holds no"),
        (json.dumps({"method": "message/send", "params": {"message": a2a_message({"kind": "data", "data": {"messages": []}})}}).encode(), "A2A"),
        (json.dumps({"method": "message/send", "params": {"message": {**a2a_message(), "role": "agent"}}}).encode(), "A2A"),
    ],
)
def test_bad_text_numbers_and_runs_without_a_user_message_are_a_400(body, words):
    with pytest.raises(RequestRefused) as refused:
        check_body(body)
    assert refused.value.status == 400 and words in refused.value.sentence


def test_a_user_message_in_any_form_langchain_reads_passes():
    for messages in ("Hi", [("user", "Hi")], [{"type": "human", "content": "Hi"}], [{"role": "assistant", "content": "?"}, {"role": "user", "content": "Hi"}]):
        check_body(json.dumps({"input": {"messages": messages}}).encode())
    check_body(json.dumps({"method": "message/send", "params": {"message": a2a_message({"kind": "data", "data": {"x": 1}})}}).encode())
    check_body(json.dumps({"input": None, "command": {"resume": "yes"}}).encode())


# The servers.


def test_a_guess_beside_a_valid_key_is_counted_and_refused_everywhere(server):
    guesser = from_address("127.0.0.21")
    statuses = []
    for n in range(MAX_FAILED_LOGINS + 3):
        for path in ("/memories/api/memories", "/threads/search"):
            method = "GET" if path.startswith("/memories") else "POST"
            headers = [("X-Api-Key", f"guess-{n:016d}"), ("X-Api-Key", TOKENS[ALICE])]
            statuses.append(guesser.request(method, f"{server}{path}", headers=headers, json={} if method == "POST" else None).status_code)
    assert statuses[:MAX_FAILED_LOGINS] == [400] * MAX_FAILED_LOGINS and set(statuses[MAX_FAILED_LOGINS:]) == {429}
    repeated = from_address("127.0.0.22").get(
        f"{server}/memories/api/memories", headers=[("Authorization", f"Bearer {TOKENS[ALICE]}"), ("Authorization", "Bearer guess")]
    )
    assert repeated.status_code == 400 and repeated.json()["detail"] == "Send one Authorization or X-Api-Key header, not several."
    assert from_address("127.0.0.22").get(f"{server}/memories/api/memories", headers=alice()).status_code == 200


def test_every_run_path_takes_the_same_input_limit_and_stores_nothing(server, thread_id):
    big = user_says(OVERSIZED)
    message = a2a_message(text=OVERSIZED)
    attempts = {
        "thread run": (f"/threads/{thread_id}/runs", {"assistant_id": AGENT_NAME, "input": big}),
        "thread run stream": (f"/threads/{thread_id}/runs/stream", {"assistant_id": AGENT_NAME, "input": big}),
        "thread run wait": (f"/threads/{thread_id}/runs/wait", {"assistant_id": AGENT_NAME, "input": big}),
        "stateless run": ("/runs", {"assistant_id": AGENT_NAME, "input": big}),
        "stateless stream": ("/runs/stream", {"assistant_id": AGENT_NAME, "input": big}),
        "stateless wait": ("/runs/wait", {"assistant_id": AGENT_NAME, "input": big}),
        "batch": ("/runs/batch", [{"assistant_id": AGENT_NAME, "input": user_says("Hi")}, {"assistant_id": AGENT_NAME, "input": big}]),
        "command run.start": (f"/threads/{thread_id}/commands", {"id": 1, "method": "run.start", "params": {"assistant_id": AGENT_NAME, "input": big}}),
        "command input.respond": (f"/threads/{thread_id}/commands", {"id": 2, "method": "input.respond", "params": {"response": OVERSIZED}}),
        "A2A": (f"/a2a/{AGENT_NAME}", {"jsonrpc": "2.0", "id": 3, "method": "message/send", "params": {"message": message}}),
        "MCP": ("/mcp", {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": AGENT_NAME, "arguments": big}}),
        "state update": (f"/threads/{thread_id}/state", {"values": big}),
    }
    for what, (path, body) in attempts.items():
        response = httpx.post(f"{server}{path}", json=body, headers={**alice(), "Accept": "application/json, text/event-stream"}, timeout=30)
        assert response.status_code == 413, (what, response.status_code, response.text[:300])
        assert "the limit is 262,144 bytes." in response.json()["detail"], what
    sdk = get_sync_client(url=server, api_key=TOKENS[ALICE])
    assert sdk.runs.list(thread_id) == [] and not sdk.threads.get_state(thread_id)["values"]


def test_bad_unicode_and_non_finite_numbers_are_a_400_with_a_sentence(server, thread_id):
    bodies = [b'{"metadata": {"note": "\\ud800"}}', b'{"metadata": {"n": NaN}}', b'{"metadata": {"n": 1e999999}}']
    for path in ("/threads", f"/threads/{thread_id}/runs", "/store/items/search", "/assistants"):
        for body in bodies:
            response = httpx.post(f"{server}{path}", content=body, headers={**alice(), "Content-Type": "application/json"})
            assert response.status_code == 400, (path, body, response.status_code, response.text[:200])
            assert response.json()["detail"].endswith("."), (path, body)


def test_a_rebound_host_is_refused_before_its_tokens_are_counted(server):
    port = server.rsplit(":", 1)[1]
    browser = from_address("127.0.0.23")
    rebound = {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}
    for n in range(MAX_FAILED_LOGINS + 5):
        response = browser.post(f"{server}/threads/search", json={}, headers={**rebound, "X-Api-Key": f"guess-{n:016d}"})
        assert response.status_code == 403 and "MAISTRO_ALLOWED_HOSTS" in response.json()["detail"]
    assert browser.post(f"{server}/threads/search", json={}, headers=alice()).status_code == 200, "not locked out"


def test_fields_without_a_limit_of_their_own_are_bounded_and_nothing_is_stored(server, thread_id):
    attempts = {
        "assistant name": ("POST", "/assistants", {"graph_id": AGENT_NAME, "name": NINE_HUNDRED_KIB}),
        "assistant description": ("POST", "/assistants", {"graph_id": AGENT_NAME, "description": NINE_HUNDRED_KIB}),
        "assistant config": ("POST", "/assistants", {"graph_id": AGENT_NAME, "config": {"tags": [NINE_HUNDRED_KIB]}}),
        "assistant update name": ("PATCH", f"/assistants/{uuid.uuid4()}", {"name": NINE_HUNDRED_KIB}),
        "run checkpoint": ("POST", f"/threads/{thread_id}/runs", {"assistant_id": AGENT_NAME, "checkpoint": {"checkpoint_id": NINE_HUNDRED_KIB}}),
        "run checkpoint_id": ("POST", f"/threads/{thread_id}/runs", {"assistant_id": AGENT_NAME, "checkpoint_id": "c" * 1000}),
        "run webhook": ("POST", f"/threads/{thread_id}/runs", {"assistant_id": AGENT_NAME, "webhook": "http://x/" + NINE_HUNDRED_KIB}),
        "thread search ids": ("POST", "/threads/search", {"ids": [str(uuid.uuid4())] * 20_000}),
        "store search query": ("POST", "/store/items/search", {"namespace_prefix": ["todo"], "query": NINE_HUNDRED_KIB}),
        "store search filter": ("POST", "/store/items/search", {"namespace_prefix": ["todo"], "filter": {"task": NINE_HUNDRED_KIB}}),
        "an unknown field": ("POST", "/threads", {"anything": NINE_HUNDRED_KIB}),
    }
    sdk = get_sync_client(url=server, api_key=TOKENS[ALICE])
    assistants_before, threads_before = len(sdk.assistants.search(limit=100)), len(sdk.threads.search(limit=100))
    for what, (method, path, body) in attempts.items():
        response = httpx.request(method, f"{server}{path}", json=body, headers=alice(), timeout=30)
        assert response.status_code == 413, (what, response.status_code, response.text[:200])
        assert response.json()["detail"].endswith("bytes.") or response.json()["detail"].endswith("256."), what
    assert len(sdk.assistants.search(limit=100)) == assistants_before
    assert len(sdk.threads.search(limit=100)) == threads_before
    assert sdk.runs.list(thread_id) == []


def test_a_run_without_a_user_message_is_a_400_and_the_thread_stays_usable(server, thread_id):
    for run_input in NO_USER_MESSAGE:
        for path, body in (
            (f"/threads/{thread_id}/runs/wait", {"assistant_id": AGENT_NAME, "input": run_input}),
            ("/runs/wait", {"assistant_id": AGENT_NAME, "input": run_input}),
            (f"/threads/{thread_id}/commands", {"id": 5, "method": "run.start", "params": {"assistant_id": AGENT_NAME, "input": run_input}}),
            ("/mcp", {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": AGENT_NAME, "arguments": run_input}}),
            # A2A merges a data part over the message its text parts make: `{"messages": []}` empties it.
            (f"/a2a/{AGENT_NAME}", {"jsonrpc": "2.0", "id": 7, "method": "message/send", "params": {"message": a2a_message({"kind": "data", "data": {**run_input, "messages": []}})}}),
        ):
            response = httpx.post(f"{server}{path}", json=body, headers=alice(), timeout=30)
            assert response.status_code == 400, (path, run_input, response.status_code, response.text[:200])
            assert "holds no user message" in response.json()["detail"]
    sdk = get_sync_client(url=server, api_key=TOKENS[ALICE])
    assert sdk.runs.list(thread_id) == [] and sdk.threads.get(thread_id)["status"] == "idle"


# Last on each server: it locks 127.0.0.1 (the address every other client here uses) out for a minute.
def test_the_limiter_keys_on_the_socket_unless_a_trusted_proxy_forwards(server):
    rotating = from_address("127.0.0.1")
    statuses = [
        rotating.post(f"{server}/threads/search", json={}, headers={"X-Api-Key": f"guess-{n:016d}", "X-Forwarded-For": f"198.51.100.{n}"}).status_code
        for n in range(MAX_FAILED_LOGINS + 3)
    ]
    assert statuses[MAX_FAILED_LOGINS:] == [429] * 3, "a rotating X-Forwarded-For from an untrusted peer changes nothing"

    proxy = from_address(PROXY)
    for n in range(MAX_FAILED_LOGINS):
        proxy.post(f"{server}/threads/search", json={}, headers={"X-Api-Key": f"guess-{n:016d}", "X-Forwarded-For": "10.20.30.40"})
    locked = proxy.post(f"{server}/threads/search", json={}, headers={**alice(), "X-Forwarded-For": "6.6.6.6, 10.20.30.40"})
    assert locked.status_code == 429, "the client behind the proxy is locked out, whatever it prepends"
    other = proxy.post(f"{server}/threads/search", json={}, headers={**alice(), "X-Forwarded-For": "10.20.30.41"})
    assert other.status_code == 200, "another client behind the same proxy is not"
