"""The server guard (graph/server/guard.py) on a real `langgraph dev`: every route it answers, the upstream
development routes included, needs a token; no other web site can act on the server from the user's browser;
every part of a request is bounded; wrong-token bursts get 429.

One server runs with tokens and an allowed web origin, another open (no tokens). The attacks are the ones the
issue found: `/internal/truncate` wiping every thread from a page on another origin, `/memories/api/...`
read and changed by any site on an open server, DNS rebinding, 3 MB names and metadata, deep JSON.
"""

import http.server
import json
import re
import threading
import uuid
from collections.abc import Iterator

import httpx
import pytest
from langgraph_sdk import get_sync_client
from playwright.sync_api import Browser
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from graph.memory.store import user_label
from graph.names import AGENT_NAME
from graph.server.guard import FailedLogins, is_loopback_host, same_origin
from graph.server.limits import MAX_JSON_DEPTH, RequestRefused, check_body
from testing.helpers import free_port
from testing.langgraph_server import langgraph_dev, offline_environment, token_server
from testing.openai_stub import OpenAIStub
from testing.stored_names import PROFILE, PROFILE_KEY, TODO

ALICE, BOB = "alice", "bob"
TOKENS = {ALICE: "alice-lockdown-5b9e2c", BOB: "bob-lockdown-0d7f31"}
CHAT_UI = "http://localhost:3000"
FOREIGN = "https://evil.example"
THREE_MB = "x" * (3 * 1024 * 1024)
BIG_NAME = "n" * 300_000
# Paths a browser or a health check loads without a token.
PUBLIC = {"/", "/ok", "/memories", "/memories/", "/memories/api/session"}
# Development routes of the in-memory runtime that act on every user's data, and routes no server has yet.
EVERY_USER_ROUTES = [
    ("POST", "/internal/truncate"),
    ("GET", f"/internal/debug/thread/{uuid.uuid4()}"),
    ("POST", "/deploy"),
    ("GET", "/deploy"),
    ("GET", "/metrics"),
]
FUTURE_ROUTES = [("GET", "/internal/something-new"), ("POST", "/v2/anything"), ("GET", "/runs/crons/future")]


def nested(depth: int) -> list:
    """A list nested `depth` levels deep."""
    document: list = []
    for _ in range(depth - 1):
        document = [document]
    return document


def alice_headers() -> dict[str, str]:
    """Alice's token, as the SDKs and Agent Chat UI send it."""
    return {"X-Api-Key": TOKENS[ALICE]}


@pytest.fixture(scope="module")
def server(stub: OpenAIStub, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server with alice's and bob's tokens that lets Agent Chat UI's origin in."""
    scratch = tmp_path_factory.mktemp("lockdown")
    with token_server(scratch, stub, TOKENS, MAISTRO_CORS_ORIGINS=CHAT_UI) as url:
        yield url
    assert "failed logins from 127.0.0.9" in (scratch / "server.log").read_text()


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server without tokens, as `langgraph dev` runs on a developer's machine."""
    scratch = tmp_path_factory.mktemp("lockdown-open")
    with langgraph_dev(scratch, offline_environment(MAISTRO_DATA_DIR=str(scratch / "data"))) as url:
        yield url


@pytest.fixture(scope="module")
def foreign_site() -> Iterator[str]:
    """A web site on another origin (another port of localhost), as a page the user happens to visit."""
    handler = type("Quiet", (http.server.BaseHTTPRequestHandler,), {
        "do_GET": lambda self: (self.send_response(200), self.send_header("Content-Type", "text/html"),
                                self.end_headers(), self.wfile.write(b"<html><body>cats</body></html>")),
        "log_message": lambda self, *args: None,
    })
    site = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    yield f"http://localhost:{site.server_address[1]}"
    site.shutdown()


def openapi_requests(spec: dict) -> list[tuple[str, str]]:
    """(method, path) for every operation in an OpenAPI document, path parameters filled with fresh UUIDs."""
    requests = []
    for template, operations in spec["paths"].items():
        path = re.sub(r"\{[^}]+\}", lambda _: str(uuid.uuid4()), template)
        requests += [(method.upper(), path) for method in operations if method in ("get", "post", "put", "patch", "delete")]
    return requests


# Unit tests: no server.


def test_an_origin_is_the_same_only_with_the_same_host_and_port():
    assert same_origin("http://127.0.0.1:2024", "127.0.0.1:2024", "http")
    assert same_origin("http://localhost", "localhost:80", "http")
    assert not same_origin("http://127.0.0.1:3000", "127.0.0.1:2024", "http")
    assert not same_origin("https://127.0.0.1:2024", "127.0.0.1:2024", "http")
    assert not same_origin("null", "127.0.0.1:2024", "http")
    assert not same_origin("http://[bad", "127.0.0.1:2024", "http")


def test_only_loopback_names_are_loopback_hosts():
    for host in ("localhost:2024", "127.0.0.1", "127.1.2.3:80", "[::1]:2024", "studio.localhost"):
        assert is_loopback_host(host), host
    for host in ("evil.example", "10.0.0.1:2024", "localhost.evil.example", "", "[bad"):
        assert not is_loopback_host(host), host


def test_a_client_is_refused_after_the_limit_of_failed_logins_until_the_window_passes(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr("graph.server.guard.time.monotonic", lambda: clock[0])
    logins = FailedLogins(limit=3, window=60)
    for _ in range(3):
        assert logins.retry_after("1.2.3.4") == 0
        logins.record("1.2.3.4")
    assert logins.retry_after("1.2.3.4") == 60 and logins.retry_after("5.6.7.8") == 0
    clock[0] += 61
    assert logins.retry_after("1.2.3.4") == 0


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        (b"{not json", 400, "not valid JSON"),
        (b"\xff\xfe", 400, "not valid JSON"),
        (b"[" * 5000 + b"]" * 5000, 400, "nests deeper"),
        (json.dumps({"a": nested(MAX_JSON_DEPTH + 1)}).encode(), 400, "nests deeper"),
        (json.dumps({"key": BIG_NAME, "namespace": ["todo", "x"], "value": {}}).encode(), 413, "store key"),
        (json.dumps({"key": "k", "namespace": ["todo", BIG_NAME], "value": {}}).encode(), 413, "namespace"),
        (json.dumps({"namespace": ["todo"] * 20}).encode(), 413, "labels"),
        (json.dumps({"key": "k", "namespace": ["todo"], "value": {}, "index": [BIG_NAME]}).encode(), 413, "index field"),
        (json.dumps({"metadata": {"note": "m" * 20_000}}).encode(), 413, "'metadata'"),
        (json.dumps([{"input": None}, {"command": {"update": {"messages": ["z" * 300_000]}}}]).encode(), 413, "'command'"),
    ],
)
def test_bodies_are_refused_with_a_sentence(body, status, words):
    with pytest.raises(RequestRefused) as refused:
        check_body(body)
    assert refused.value.status == status and words in refused.value.sentence


def test_ordinary_bodies_pass():
    check_body(json.dumps({"input": {"messages": [{"role": "user", "content": "你好"}]}, "metadata": {"a": 1}}).encode())
    check_body(json.dumps({"namespace": ["todo", "alice"], "key": "k", "value": {"task": "t"}, "index": ["task"]}).encode())
    check_body(json.dumps({"a": nested(MAX_JSON_DEPTH)}).encode())


# The server with tokens.


def test_every_route_in_the_api_and_every_development_route_needs_a_token(server):
    spec = httpx.get(f"{server}/openapi.json", headers=alice_headers()).json()
    assert httpx.get(f"{server}/openapi.json").status_code == 401
    routes = openapi_requests(spec) + EVERY_USER_ROUTES + FUTURE_ROUTES
    assert len(routes) > 40, "the server's whole API"
    statuses = {}
    for method, path in routes:
        for headers in ({}, {"Authorization": f"Basic {TOKENS[ALICE]}"}):
            status = httpx.request(method, f"{server}{path}", headers=headers, json={}).status_code
            statuses[method, path, tuple(headers)] = status
    opened = {route: status for route, status in statuses.items() if route[1] not in PUBLIC and status != 401}
    assert opened == {("GET", "/docs", ()): 404, ("GET", "/docs", ("Authorization",)): 404}
    assert httpx.get(f"{server}/ok").status_code == 200, "the health check stays open"


def test_development_routes_that_act_on_every_user_are_refused_even_with_a_token(server):
    alice = get_sync_client(url=server, api_key=TOKENS[ALICE])
    bob = get_sync_client(url=server, api_key=TOKENS[BOB])
    thread_id = bob.threads.create()["thread_id"]
    for method, path in EVERY_USER_ROUTES:
        response = httpx.request(method, f"{server}{path}", headers=alice_headers(), json={})
        assert response.status_code == 403 and "every user's data" in response.json()["detail"], path
    assert bob.threads.get(thread_id)["thread_id"] == thread_id
    assert alice.threads.search() == []


def test_the_api_docs_that_load_a_cdn_script_are_off(server, open_server):
    for url in (server, open_server):
        response = httpx.get(f"{url}/docs", headers=alice_headers())
        assert response.status_code == 404 and "/openapi.json" in response.json()["detail"]


def test_another_origin_is_refused_and_the_allowed_one_gets_exact_cors_headers(server):
    bob = get_sync_client(url=server, api_key=TOKENS[BOB])
    thread_id = bob.threads.create()["thread_id"]
    wipe = httpx.post(f"{server}/internal/truncate", headers={"Origin": FOREIGN, "Content-Type": "text/plain"})
    assert wipe.status_code == 403 and "MAISTRO_CORS_ORIGINS" in wipe.json()["detail"]
    with_token = httpx.post(f"{server}/threads/search", json={}, headers={**alice_headers(), "Origin": FOREIGN})
    assert with_token.status_code == 403
    preflight = httpx.options(
        f"{server}/threads/search",
        headers={"Origin": FOREIGN, "Access-Control-Request-Method": "POST", "Access-Control-Request-Private-Network": "true"},
    )
    assert preflight.status_code == 403 and "access-control-allow-origin" not in preflight.headers

    preflight = httpx.options(
        f"{server}/threads/search",
        headers={"Origin": CHAT_UI, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "x-api-key"},
    )
    assert preflight.status_code == 200 and preflight.headers["access-control-allow-origin"] == CHAT_UI
    allowed = httpx.post(f"{server}/threads/search", json={}, headers={**alice_headers(), "Origin": CHAT_UI})
    assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == CHAT_UI
    same = httpx.post(f"{server}/threads/search", json={}, headers={**alice_headers(), "Origin": server})
    assert same.status_code == 200
    for response in (preflight, allowed, same, httpx.get(f"{server}/ok")):
        assert response.headers.get("access-control-allow-origin") != "*"
        assert "access-control-allow-private-network" not in response.headers
    assert bob.threads.get(thread_id)["thread_id"] == thread_id


def test_oversized_names_metadata_commands_and_supersteps_are_refused_and_nothing_is_stored(server):
    alice = get_sync_client(url=server, api_key=TOKENS[ALICE])
    thread_id = alice.threads.create()["thread_id"]
    threads_before = len(alice.threads.search(limit=100))
    namespace = [TODO, user_label(ALICE)]
    attempts = {
        "store key": ("PUT", "/store/items", {"namespace": namespace, "key": THREE_MB, "value": {"task": "t"}}),
        "namespace label": ("PUT", "/store/items", {"namespace": [TODO, user_label(ALICE), THREE_MB], "key": "k", "value": {"task": "t"}}),
        "index field": ("PUT", "/store/items", {"namespace": namespace, "key": "k", "value": {"task": "t"}, "index": [BIG_NAME]}),
        "thread metadata": ("POST", "/threads", {"metadata": {"note": THREE_MB}}),
        "thread metadata update": ("PATCH", f"/threads/{thread_id}", {"metadata": {"note": "m" * 100_000}}),
        "assistant metadata": ("POST", "/assistants", {"graph_id": AGENT_NAME, "metadata": {"note": "m" * 100_000}}),
        "run command": ("POST", f"/threads/{thread_id}/runs", {"assistant_id": AGENT_NAME, "command": {"update": {"messages": [{"role": "user", "content": THREE_MB}]}}}),
        "supersteps": ("POST", "/threads", {"supersteps": [{"updates": [{"values": {"messages": [THREE_MB]}, "as_node": "__input__"}]}]}),
        "small command, huge body": ("POST", f"/threads/{thread_id}/runs", {"assistant_id": AGENT_NAME, "padding": THREE_MB}),
    }
    for what, (method, path, body) in attempts.items():
        response = httpx.request(method, f"{server}{path}", headers=alice_headers(), json=body, timeout=30)
        assert response.status_code == 413, (what, response.status_code, response.text[:200])
        assert response.json()["detail"].endswith("."), what
    assert alice.store.search_items((TODO,), limit=100)["items"] == []
    assert len(alice.threads.search(limit=100)) == threads_before
    assert "note" not in alice.threads.get(thread_id)["metadata"]
    assert alice.runs.list(thread_id) == []


def test_malformed_or_deep_json_is_a_400_with_a_sentence_everywhere(server):
    deep = b'{"value": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    for path, method in (("/threads", "POST"), ("/store/items", "PUT"), (f"/memories/api/kinds/{PROFILE}/documents/{PROFILE_KEY}", "PUT")):
        for body in (b"{not json", deep):
            response = httpx.request(method, f"{server}{path}", headers={**alice_headers(), "Content-Type": "application/json"}, content=body)
            assert response.status_code == 400 and response.json()["detail"].endswith("."), (path, response.text[:200])
    profile = httpx.get(f"{server}/memories/api/memories", headers=alice_headers()).json()["documents"][PROFILE]
    assert [entry["value"] for entry in profile] in ([], [{}]), "the refused writes wrote nothing"


def test_a_burst_of_wrong_tokens_gets_429_and_the_right_user_is_not_locked_out(server):
    guesser = httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.9"))
    statuses = [guesser.post(f"{server}/threads/search", json={}, headers={"X-Api-Key": f"guess-{n:016d}"}).status_code for n in range(40)]
    assert statuses[:20] == [401] * 20 and set(statuses[20:]) == {429}
    refused = guesser.post(f"{server}/threads/search", json={}, headers=alice_headers())
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0, "a right guess looks like a wrong one"
    assert httpx.post(f"{server}/threads/search", json={}, headers=alice_headers()).status_code == 200


# The open server.


def test_an_open_server_answers_only_to_loopback_host_names(open_server):
    port = open_server.rsplit(":", 1)[1]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
        assert httpx.get(f"{open_server}/memories/api/memories", headers={"Host": host}).status_code == 200
    rebound = httpx.get(f"{open_server}/memories/api/memories", headers={"Host": f"evil.example:{port}"})
    assert rebound.status_code == 403 and "MAISTRO_ALLOWED_HOSTS" in rebound.json()["detail"]
    rebound = httpx.post(f"{open_server}/internal/truncate", headers={"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"})
    assert rebound.status_code == 403


def test_a_page_on_another_origin_can_neither_wipe_threads_nor_touch_memories(open_server, foreign_site, browser: Browser):
    client = get_sync_client(url=open_server)
    thread_id = client.threads.create()["thread_id"]
    client.store.put_item((PROFILE, user_label(ALICE)), PROFILE_KEY, {"name": "Alice"})
    page = browser.new_page()
    page.goto(foreign_site)
    outcome = page.evaluate(
        """async (server) => {
            const tries = [
                fetch(server + "/internal/truncate", {method: "POST", mode: "no-cors", body: "{}", headers: {"Content-Type": "text/plain"}}),
                fetch(server + "/memories/api/kinds/profile/documents/user_profile?user_id=alice", {method: "PUT", mode: "no-cors", body: JSON.stringify({value: {name: "Mallory"}})}),
                fetch(server + "/memories/api/memories?user_id=alice").then((r) => r.text()),
            ];
            return (await Promise.allSettled(tries)).map((result) => result.status === "fulfilled" && typeof result.value === "string" ? result.value : result.status);
        }""",
        open_server,
    )
    page.close()
    assert "Alice" not in json.dumps(outcome), "the page could not read the memories"
    assert client.threads.get(thread_id)["thread_id"] == thread_id, "the threads are still there"
    assert client.store.get_item((PROFILE, user_label(ALICE)), PROFILE_KEY)["value"] == {"name": "Alice"}


def test_websockets_are_refused_on_every_route(server, open_server):
    for url in (server, open_server):
        with pytest.raises(InvalidStatus) as refused:
            connect(url.replace("http://", "ws://") + "/threads", additional_headers=alice_headers(), open_timeout=10)
        assert refused.value.response.status_code == 403
