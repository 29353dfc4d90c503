"""Bearer-token auth and per-user isolation on a real `langgraph dev` server (graph/auth.py).

One server runs for the module with tokens for alice (`MAISTRO_AUTH_TOKENS`) and for bob and carol
(`MAISTRO_AUTH_TOKENS_FILE`); its model calls go to the local OpenAI-compatible stub. Bob's data is made
through the graph and the SDK; alice and carol then try to reach it through every endpoint. The unit tests
at the top (tokens, user resolution, namespace scoping) need no server.
"""

import asyncio
import json
import threading
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace

import httpx
import pytest
from langgraph_sdk import Auth, get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from graph.memory.store import UNINDEXED, user_label
from graph.names import AGENT_NAME
from graph.run_context import RunContext
from graph.server import auth as server_auth
from graph.server.limits import MAX_STORE_VALUE_BYTES
from graph.settings import Settings
from testing.aegra_server import HEALTH, SERVER_KINDS, api_server
from testing.langgraph_server import new_thread, offline_environment, play
from testing.openai_stub import OpenAIStub, system_text, text_reply, tool_calls_reply
from testing.stored_names import INSTRUCTIONS, INSTRUCTIONS_KEY, PROFILE, PROFILE_KEY, TODO
from testing.stub_script import Script, update

ALICE = "alice"
BOB = "bob.smith@example.com"
CAROL = "carol"
TOKENS = {ALICE: "alice-3f9c1e-auth-token", BOB: "bob-7d21aa-auth-token", CAROL: "carol-55aa0b-auth-token"}
# 405: a route the server does not have (Aegra has no `POST /threads/count`).
BLOCKED_STATUSES = {403, 404, 405, 409, 422}
BOB_TASKS = ["Renew Bob's passport", "Water Bob's ferns"]
BOB_PROFILE = {"name": "Robert Smith", "location": "Boston"}
BOB_INSTRUCTIONS = {"memory": "Bob wants every ToDo to name a hardware store."}
BOB_ROLE = "You are Bob's butler."
HELLO = {"messages": [{"role": "user", "content": "Hello"}]}
ATTEMPT_SECONDS = 10


def bearer(url: str, token: str | None = None, **headers: str) -> SyncLangGraphClient:
    """A client of the server that sends `Authorization: Bearer <token>` (no header without a token)."""
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return get_sync_client(url=url, headers=headers, timeout=30)


def remember(client: SyncLangGraphClient, script: Script, thread_id: str, task: str, **run) -> None:
    """One turn in which the graph saves `task` as a new ToDo (scripted model replies)."""
    script.add("chat", update("todo"), text_reply(f"I added {task}."))
    script.add("todo", tool_calls_reply(("ToDo", {"task": task, "solutions": ["Do it this week"]})))
    play(client, thread_id, f"Remind me: {task}.", **run)


def todo_tasks(client: SyncLangGraphClient, user: str) -> list[str]:
    """The tasks in a user's ToDo namespace, as that client can read them, sorted."""
    items = client.store.search_items((TODO, user_label(user)), limit=100)["items"]
    return sorted(entry["value"]["task"] for entry in items)


# Unit tests: no server.


def test_tokens_come_from_the_variable_and_the_file(tmp_path):
    token_file = tmp_path / "tokens.json"
    token_file.write_text(json.dumps({"t2-0123456789abcdef": "bob.smith@example.com", "t3-0123456789abcdef": "张伟"}))
    environ = {
        server_auth.TOKENS_VARIABLE: " t1-0123456789abcdef:alice , t4-0123456789abcdef:team:ops ",
        server_auth.TOKENS_FILE_VARIABLE: str(token_file),
    }

    assert server_auth.load_tokens(Settings.from_environ(environ)) == {"t1-0123456789abcdef": "alice", "t4-0123456789abcdef": "team:ops", "t2-0123456789abcdef": BOB, "t3-0123456789abcdef": "张伟"}
    assert server_auth.load_tokens(Settings.from_environ({})) == {}


@pytest.mark.parametrize(
    "listed, filed",
    [(" , ", None), ("t1-0123456789abcdef", None), ("t1-0123456789abcdef:", None), (":alice", None), (None, "[]"), (None, '{"t1-0123456789abcdef": ""}'),
     (None, "{}"), ("t1-0123456789abcdef:alice", '{"t1-0123456789abcdef": "bob"}'), (None, "missing"), ("", None), (None, " "),
     ("tok-0123456789abcdef:alice,tok-0123456789abcdef:carol", None), ("tok-0123456789abcdef:alice, tok-0123456789abcdef :alice", None), (None, '{"tok-0123456789abcdef": "alice", " tok-0123456789abcdef ": "carol"}'),
     ("tok-0123456789abcdef:" + "u" * 300, None), (None, '{"tok-0123456789abcdef": "a\\u0000b"}')],
)
def test_a_token_setting_that_names_no_valid_token_stops_the_server(tmp_path, listed, filed):
    environ = {server_auth.TOKENS_VARIABLE: listed} if listed is not None else {}
    if filed == " ":
        environ[server_auth.TOKENS_FILE_VARIABLE] = filed
    elif filed:
        path = tmp_path / "tokens.json"
        if filed != "missing":
            path.write_text(filed)
        environ[server_auth.TOKENS_FILE_VARIABLE] = str(path)

    with pytest.raises((ValueError, OSError)):
        server_auth.load_tokens(Settings.from_environ(environ))


def caller_of(*headers: dict) -> str:
    """Who `authenticate` says the caller is, for each server's form of the same headers (they must agree)."""
    users = {asyncio.run(server_auth.authenticate(form))["identity"] for form in headers}
    assert len(users) == 1, users
    return users.pop()


def both_forms(**headers: str) -> tuple[dict, dict]:
    """Request headers as langgraph-api hands them to the auth handler (bytes) and as Aegra does (text)."""
    return {name.encode(): value.encode() for name, value in headers.items()}, dict(headers)


def test_authenticate_maps_a_bearer_token_to_its_user_and_refuses_the_rest(monkeypatch):
    monkeypatch.setattr(server_auth, "TOKENS", {"tok-a": ALICE})

    assert caller_of(*both_forms(authorization="Bearer tok-a")) == ALICE
    assert caller_of(*both_forms(authorization="bearer  tok-a ")) == ALICE
    assert asyncio.run(server_auth.authenticate({"authorization": "Bearer tok-a"}))["user_label"] == user_label(ALICE)
    for header in (None, "", "Bearer", "Bearer tok-b", "Basic tok-a", "tok-a", "Bearer tok-a2"):
        for form in both_forms(**({"authorization": header} if header is not None else {})):
            with pytest.raises(Auth.exceptions.HTTPException) as refused:
                asyncio.run(server_auth.authenticate(form))
            assert refused.value.status_code == 401, header


def test_a_misspelt_auth_variable_stops_the_server_instead_of_running_open():
    with pytest.raises(ValueError, match="did you mean MAISTRO_AUTH_TOKENS"):
        Settings.from_environ({"MAISTRO_AUTH_TOKEN": "tok:alice"})


def test_the_token_may_come_as_x_api_key(monkeypatch):
    monkeypatch.setattr(server_auth, "TOKENS", {"tok-a": ALICE})
    assert caller_of(*both_forms(**{"x-api-key": " tok-a "})) == ALICE
    assert caller_of(*both_forms(authorization="Bearer tok-a", **{"x-api-key": "wrong"})) == ALICE
    for form in both_forms(**{"x-api-key": "tok-b"}):
        with pytest.raises(Auth.exceptions.HTTPException) as refused:
            asyncio.run(server_auth.authenticate(form))
        assert refused.value.status_code == 401


def test_store_values_are_bounded_and_search_limits_clamped():
    with pytest.raises(Auth.exceptions.HTTPException) as refused:
        server_auth.bound_store_request("put", {"value": {"task": "x" * MAX_STORE_VALUE_BYTES}})
    assert refused.value.status_code == 413
    server_auth.bound_store_request("put", {"value": {"task": "x" * 1000}})
    for sent, kept in ((10**9, 100), (-1, 1), ("abc", 10), (20, 20)):
        request = {"limit": sent, "offset": -5}
        server_auth.bound_store_request("search", request)
        assert request == {"limit": kept, "offset": 0}


def test_without_tokens_auth_is_off_and_everyone_is_anonymous(monkeypatch):
    monkeypatch.setattr(server_auth, "TOKENS", {})
    assert not server_auth.auth_enabled()
    assert caller_of({}, None) == server_auth.ANONYMOUS
    value = {"metadata": {}}
    creating = SimpleNamespace(action="create", user=SimpleNamespace(identity=server_auth.ANONYMOUS))
    assert asyncio.run(server_auth.own_threads(creating, value)) is None and value == {"metadata": {}}
    assert asyncio.run(server_auth.refuse_the_rest(None, {})) is None


def test_with_tokens_unowned_resources_are_refused(monkeypatch):
    monkeypatch.setattr(server_auth, "TOKENS", {"tok-a": ALICE})
    assert asyncio.run(server_auth.refuse_the_rest(None, {})) is False


def test_the_authenticated_user_wins_over_any_client_user_id(monkeypatch):
    monkeypatch.setenv("MAISTRO_DEFAULT_USER", "fallback")

    def resolved(**configurable) -> str:
        return RunContext.from_runnable_config({"configurable": configurable}).resolved_user_id

    def caller(identity: str) -> dict:
        return {"langgraph_auth_user": {"identity": identity}}

    assert resolved(user_id=BOB, **caller(ALICE)) == ALICE
    assert resolved(user_id="", default_user_id=BOB, **caller(ALICE)) == ALICE
    assert resolved(**caller(BOB)) == BOB
    assert resolved(user_id=BOB, langgraph_auth_user=SimpleNamespace(identity=ALICE)) == ALICE, "a user object"
    assert resolved(user_id=BOB, **caller("")) == BOB, "an open server sends an empty identity"
    assert resolved(user_id=BOB, langgraph_auth_user=None) == BOB
    assert resolved(**caller("  ")) == "fallback"
    assert resolved() == "fallback"
    assert resolved(user_id=BOB, langgraph_auth_user_id=ALICE) == BOB, "Aegra passes this key on from the client"


def test_store_namespaces_are_scoped_to_the_callers_label():
    label = user_label(BOB)
    scoped = server_auth.scoped_namespace

    assert scoped("get", (TODO, label), label) == (TODO, label)
    assert scoped("put", ("history", label, "2026"), label) == ("history", label, "2026")
    assert scoped("search", (TODO,), label) == (TODO, label)
    assert scoped("list_namespaces", None, label) == ("*", label)
    assert scoped("list_namespaces", (TODO,), label) == (TODO, label)
    refused_requests = [
        ("get", (TODO, ALICE)), ("put", (TODO,)), ("delete", ()), ("search", ()), ("search", ("*", "*")),
        ("list_namespaces", (TODO, BOB)), ("put", (TODO, label.upper())),
    ]
    for action, namespace in refused_requests:
        with pytest.raises(Auth.exceptions.HTTPException) as refused:
            scoped(action, namespace, label)
        assert refused.value.status_code == 403, (action, namespace)


# The server.


@pytest.fixture(scope="module", params=SERVER_KINDS)
def server_kind(request: pytest.FixtureRequest) -> str:
    """Which server the module's server tests run on: each runs on `langgraph dev` and on Aegra."""
    return request.param


@pytest.fixture(scope="module")
def server(server_kind: str, stub: OpenAIStub, tmp_path_factory: pytest.TempPathFactory, postgres_url: str) -> Iterator[str]:
    """The module's server with auth on: alice's token in the variable, bob's and carol's in the file."""
    scratch = tmp_path_factory.mktemp(f"{server_kind}-auth")
    token_file = scratch / "tokens.json"
    token_file.write_text(json.dumps({TOKENS[BOB]: BOB, TOKENS[CAROL]: CAROL}))
    env = offline_environment(
        OPENAI_BASE_URL=stub.base_url,
        OPENAI_API_KEY="test",
        MAISTRO_DATA_DIR=str(scratch / "data"),
        MAISTRO_AUTH_TOKENS=f"{TOKENS[ALICE]}:{ALICE}",
        MAISTRO_AUTH_TOKENS_FILE=str(token_file),
        # This module sends dozens of wrong tokens on purpose; test_lockdown.py checks the 429 itself.
        MAISTRO_MAX_FAILED_LOGINS="1000",
    )
    with api_server(server_kind, scratch, env, postgres_url) as url:
        yield url


@pytest.fixture(scope="module")
def clients(server: str) -> dict[str, SyncLangGraphClient]:
    """One authenticated client per user."""
    return {user: bearer(server, token) for user, token in TOKENS.items()}


def snapshot(client: SyncLangGraphClient, thread_ids: list[str], assistant_id: str) -> dict:
    """Everything of bob's the tests compare: thread messages and runs, the assistant, the store items."""
    return {
        "threads": {
            thread_id: {
                "messages": [(m["type"], m["content"]) for m in client.threads.get_state(thread_id)["values"]["messages"]],
                "runs": sorted((run["run_id"], run["status"]) for run in client.runs.list(thread_id)),
            }
            for thread_id in thread_ids
        },
        "assistant": client.assistants.get(assistant_id)["context"],
        "items": {
            (tuple(item["namespace"]), item["key"]): item["value"]
            for kind in (PROFILE, TODO, INSTRUCTIONS)
            for item in client.store.search_items((kind, user_label(BOB)), limit=100)["items"]
        },
    }


@dataclass
class BobsData:
    """Bob's threads (each with one run), his assistant and his memories, with what they held at the start."""

    thread_ids: list[str]
    run_ids: dict[str, str]
    assistant_id: str
    before: dict

    @property
    def markers(self) -> list[str]:
        """Strings only bob's data contains: finding one in another user's response is a leak."""
        ids = [*self.thread_ids, *self.run_ids, self.assistant_id, user_label(BOB)]
        return [*ids, *BOB_TASKS, BOB_ROLE, BOB_PROFILE["name"], BOB_INSTRUCTIONS["memory"]]


@pytest.fixture(scope="module")
def bobs_data(clients: dict[str, SyncLangGraphClient], script: Script) -> BobsData:
    """Bob's conversation (two threads, the second through his own assistant) and memories he wrote himself."""
    bob = clients[BOB]
    assistant_id = bob.assistants.create(AGENT_NAME, context={"role": BOB_ROLE})["assistant_id"]
    thread_ids = [new_thread(bob), new_thread(bob)]
    remember(bob, script, thread_ids[0], BOB_TASKS[0])
    remember(bob, script, thread_ids[1], BOB_TASKS[1], assistant_id=assistant_id)
    bob.store.put_item((PROFILE, user_label(BOB)), PROFILE_KEY, BOB_PROFILE)
    bob.store.put_item((INSTRUCTIONS, user_label(BOB)), INSTRUCTIONS_KEY, BOB_INSTRUCTIONS)
    run_ids = {run["run_id"]: thread_id for thread_id in thread_ids for run in bob.runs.list(thread_id)}
    assert script.remaining() == {} and len(run_ids) == 2
    return BobsData(thread_ids, run_ids, assistant_id, snapshot(bob, thread_ids, assistant_id))


def test_requests_without_a_valid_token_get_401(server, server_kind):
    callers = {
        "no token": bearer(server),
        "unknown token": bearer(server, "not-a-token"),
        "token in another scheme": bearer(server, Authorization=f"Basic {TOKENS[ALICE]}"),
        "Studio's scheme header": bearer(server, **{"x-auth-scheme": "langsmith"}),
    }
    calls: dict[str, Callable[[SyncLangGraphClient], object]] = {
        "threads.search": lambda client: client.threads.search(),
        "threads.create": lambda client: client.threads.create(),
        "assistants.search": lambda client: client.assistants.search(),
        "runs.wait": lambda client: client.runs.wait(None, AGENT_NAME, input=HELLO),
        "store.search_items": lambda client: client.store.search_items((TODO, ALICE)),
        "store.put_item": lambda client: client.store.put_item((TODO, ALICE), "k", {"task": "x"}),
        "store.list_namespaces": lambda client: client.store.list_namespaces(),
    }
    statuses = {}
    for caller, client in callers.items():
        for name, call in calls.items():
            with pytest.raises(httpx.HTTPStatusError) as refused:
                call(client)
            statuses[caller, name] = refused.value.response.status_code

    assert set(statuses.values()) == {401}, statuses
    health_path = HEALTH if server_kind == "aegra" else "/ok"
    with urllib.request.urlopen(f"{server}{health_path}", timeout=5) as health:
        assert health.status == 200, "the health check stays open"


def test_each_user_converses_with_their_own_memories(clients, script, stub, bobs_data):
    alice = clients[ALICE]
    thread_id = new_thread(alice)
    remember(alice, script, thread_id, "Book the dentist")
    script.add("chat", text_reply("You have one thing to do: book the dentist."))

    play(alice, thread_id, "What is on my list?")

    prompt = system_text(stub.requests[-1])
    assert "Book the dentist" in prompt and not any(task in prompt for task in BOB_TASKS)
    assert todo_tasks(alice, ALICE) == ["Book the dentist"]
    assert todo_tasks(clients[BOB], BOB) == sorted(BOB_TASKS)
    messages = alice.threads.get_state(thread_id)["values"]["messages"]
    assert [m["content"] for m in messages if m["type"] == "human"] == ["Remind me: Book the dentist.", "What is on my list?"]
    assert {thread["metadata"]["owner"] for thread in alice.threads.search(limit=100)} == {ALICE}
    assert script.remaining() == {}


def test_a_client_supplied_user_id_is_ignored(clients, script, bobs_data):
    alice = clients[ALICE]
    bobs_assistant_copy = alice.assistants.create(AGENT_NAME, context={"user_id": BOB})["assistant_id"]
    spoofs = {
        "config user_id": {"config": {"configurable": {"user_id": BOB}}},
        "config default_user_id": {"config": {"configurable": {"user_id": "", "default_user_id": BOB}}},
        "context user_id": {"context": {"user_id": BOB}},
        "config auth user id": {"config": {"configurable": {"user_id": BOB, "langgraph_auth_user_id": BOB}}},
        "config auth user": {"config": {"configurable": {"langgraph_auth_user": {"identity": BOB}}}},
        "context auth user": {"context": {"langgraph_auth_user": {"identity": BOB}, "langgraph_auth_user_id": BOB}},
        "assistant context": {"assistant_id": bobs_assistant_copy},
    }
    for way, run in spoofs.items():
        remember(alice, script, new_thread(alice), f"Call the bank ({way})", **run)

    assert todo_tasks(alice, ALICE) == sorted(["Book the dentist", *(f"Call the bank ({way})" for way in spoofs)])
    assert todo_tasks(clients[BOB], BOB) == sorted(BOB_TASKS)
    assert script.remaining() == {}


def bounded(call: Callable[[], object], seconds: float) -> object:
    """Run `call`, reading to its end any stream it returns, in a worker; TimeoutError if it is still going.

    A request that wrongly got through may answer with a stream that stays open (heartbeats keep the read
    timeout from firing); the worker is left to end when the server stops.
    """
    outcome: dict[str, object] = {}

    def work() -> None:
        try:
            result = call()
            outcome["result"] = list(result) if isinstance(result, Iterator) else result
        except Exception as error:
            outcome["error"] = error

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise TimeoutError(f"still answering after {seconds} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


@dataclass
class Attempts:
    """One user's attempts on another user's data: what got through, and what failed in an unexpected way."""

    attacker: str
    markers: list[str]
    count: int = 0
    leaks: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)

    def _call(self, name: str, call: Callable[[], object]) -> tuple[bool, object]:
        self.count += 1
        try:
            return True, bounded(call, ATTEMPT_SECONDS)
        except httpx.HTTPStatusError as error:
            if error.response.status_code not in BLOCKED_STATUSES:
                self.unexpected.append(f"{name}: HTTP {error.response.status_code} {error.response.text[:200]}")
        except TimeoutError as error:
            self.leaks.append(f"{name}: {error}")
        return False, None

    def not_own(self, resource: dict) -> bool:
        """Whether a thread or assistant the attacker just made is owned by another user (planted on them)."""
        return resource["metadata"].get("owner") != self.attacker

    def _shows_markers(self, result: object) -> bool:
        text = json.dumps(result, default=str)
        return any(marker in text for marker in self.markers)

    def target(self, name: str, call: Callable[[], object]) -> None:
        """An operation on the other user's thread, run, assistant or namespace: any success is a leak.

        A stream that answers only with error events counts as refused, and so does an answer that reached
        nothing: an empty list, or counts that are all zero (Aegra filters another user's runs out of a
        listing, and prunes none of their threads, where langgraph-api answers 404).
        """
        succeeded, result = self._call(name, call)
        refused_stream = isinstance(result, list) and result and all(getattr(p, "event", "") == "error" for p in result)
        reached_nothing = result == [] or (isinstance(result, dict) and result and set(result.values()) == {0})
        if succeeded and not refused_stream and not reached_nothing:
            self.leaks.append(f"{name} succeeded: {json.dumps(result, default=str)[:200]}")

    def listing(self, name: str, call: Callable[[], object], leaked: Callable[[object], bool] | None = None) -> None:
        """An operation scoped to the caller: it may succeed, but must show none of the other user's data."""
        succeeded, result = self._call(name, call)
        if succeeded and (self._shows_markers(result) or (leaked and leaked(result))):
            self.leaks.append(f"{name} showed the other user's data: {json.dumps(result, default=str)[:200]}")


def attack_threads_and_runs(client: SyncLangGraphClient, attempts: Attempts, bob: BobsData) -> None:
    """Every thread and run endpoint, aimed at each of bob's threads and runs."""
    for run_id, thread_id in bob.run_ids.items():
        attempts.target("threads.get", lambda: client.threads.get(thread_id))
        attempts.target("threads.get_state", lambda: client.threads.get_state(thread_id))
        attempts.target("threads.get_history", lambda: client.threads.get_history(thread_id))
        attempts.target("threads.update", lambda: client.threads.update(thread_id, metadata={"owner": ALICE}))
        attempts.target("threads.update_state", lambda: client.threads.update_state(thread_id, {"messages": []}))
        attempts.target("threads.copy", lambda: client.threads.copy(thread_id))
        attempts.target("threads.create over", lambda: client.threads.create(thread_id=thread_id, if_exists="do_nothing"))
        attempts.target("threads.join_stream", lambda: client.threads.join_stream(thread_id))
        attempts.target("threads.prune", lambda: client.threads.prune([thread_id]))
        attempts.target("threads.delete", lambda: client.threads.delete(thread_id))
        attempts.target("runs.list", lambda: client.runs.list(thread_id))
        attempts.target("runs.get", lambda: client.runs.get(thread_id, run_id))
        attempts.target("runs.create", lambda: client.runs.create(thread_id, AGENT_NAME, input=HELLO))
        attempts.target("runs.stream", lambda: client.runs.stream(thread_id, AGENT_NAME, input=HELLO))
        attempts.target("runs.wait", lambda: client.runs.wait(thread_id, AGENT_NAME, input=HELLO))
        attempts.target("runs.join", lambda: client.runs.join(thread_id, run_id))
        attempts.target("runs.join_stream", lambda: client.runs.join_stream(thread_id, run_id))
        attempts.target("runs.cancel", lambda: client.runs.cancel(thread_id, run_id))
        attempts.target("runs.delete", lambda: client.runs.delete(thread_id, run_id))
        attempts.target("crons.create_for_thread", lambda: client.crons.create_for_thread(
            thread_id, AGENT_NAME, schedule="* * * * *", input=HELLO))
    own_thread = new_thread(client)
    not_own = attempts.not_own
    attempts.listing("threads.create as B's", lambda: client.threads.create(metadata={"owner": BOB}), not_own)
    attempts.listing("threads.update to B", lambda: client.threads.update(own_thread, metadata={"owner": BOB}), not_own)
    attempts.listing("threads.search", lambda: client.threads.search(limit=100))
    attempts.listing("threads.search by owner", lambda: client.threads.search(metadata={"owner": BOB}))
    attempts.target("crons.create", lambda: client.crons.create(AGENT_NAME, schedule="* * * * *", input=HELLO))
    attempts.listing("crons.search", lambda: client.crons.search())
    attempts.listing("threads.count by owner", lambda: client.threads.count(metadata={"owner": BOB}), bool)


def attack_assistants(client: SyncLangGraphClient, attempts: Attempts, bob: BobsData, system_id: str) -> None:
    """Bob's assistant, and the server's own assistant (`system_id`) that every user's runs share."""
    assistant_id = bob.assistant_id
    own_thread = new_thread(client)
    attempts.target("assistants.get", lambda: client.assistants.get(assistant_id))
    attempts.target("assistants.get_graph", lambda: client.assistants.get_graph(assistant_id))
    attempts.target("assistants.get_schemas", lambda: client.assistants.get_schemas(assistant_id))
    attempts.target("assistants.get_versions", lambda: client.assistants.get_versions(assistant_id))
    attempts.target("assistants.update", lambda: client.assistants.update(assistant_id, context={"role": "Leak."}))
    attempts.target("assistants.set_latest", lambda: client.assistants.set_latest(assistant_id, 1))
    attempts.target("assistants.delete", lambda: client.assistants.delete(assistant_id))
    attempts.target("runs.create with it", lambda: client.runs.create(own_thread, assistant_id, input=HELLO))
    attempts.target("stateless runs.wait with it", lambda: client.runs.wait(None, assistant_id, input=HELLO))
    attempts.target("update the server's assistant", lambda: client.assistants.update(system_id, context={"role": "Leak."}))
    attempts.target("delete the server's assistant", lambda: client.assistants.delete(system_id))
    system_claim = {"owner": BOB, "created_by": "system"}
    attempts.listing("assistants.create as B's", lambda: client.assistants.create(AGENT_NAME, metadata=system_claim),
                     attempts.not_own)
    attempts.listing("assistants.search", lambda: client.assistants.search(limit=100))
    attempts.listing("assistants.search by owner", lambda: client.assistants.search(metadata={"owner": BOB}))


def attack_store(client: SyncLangGraphClient, attempts: Attempts, bob: BobsData) -> None:
    """Every store endpoint, aimed at each of bob's items and namespaces."""
    for namespace, key in bob.before["items"]:
        attempts.target("store.get_item", lambda: client.store.get_item(namespace, key))
        attempts.target("store.put_item", lambda: client.store.put_item(namespace, key, {"task": "Overwritten"}))
        attempts.target("store.delete_item", lambda: client.store.delete_item(namespace, key))
        attempts.target("store.search_items", lambda: client.store.search_items(namespace, limit=100))
        attempts.target("store.search_items query", lambda: client.store.search_items(namespace, query="passport"))
        attempts.target("store.list_namespaces prefix", lambda: client.store.list_namespaces(prefix=list(namespace)))
        attempts.listing("store.search_items kind", lambda: client.store.search_items(namespace[:1], limit=100))
    label = user_label(BOB)
    attempts.target("store.put_item deeper", lambda: client.store.put_item((TODO, label, "x"), "k", {"task": "x"}))
    attempts.target("store.list_namespaces wildcard", lambda: client.store.list_namespaces(prefix=["*", label]))
    attempts.target("store.search_items everything", lambda: client.store.search_items((), limit=100))
    attempts.listing("store.list_namespaces", lambda: client.store.list_namespaces())
    attempts.listing("store.list_namespaces suffix", lambda: client.store.list_namespaces(suffix=[label]))
    # The agent's bookkeeping in the attacker's own namespace: a marker there once pointed the next memory turn at
    # the other user's profile (tests/server/test_bookkeeping.py plays the whole attack).
    own_markers = (UNINDEXED, user_label(attempts.attacker))
    pointer = {"namespace": [PROFILE, label], "key": PROFILE_KEY, "index": ["name"], "ttl": 1}
    attempts.target("store.put_item bookkeeping", lambda: client.store.put_item(own_markers, "todo:planted", pointer))
    attempts.target("store.get_item bookkeeping", lambda: client.store.get_item(own_markers, "todo:planted"))
    attempts.target("store.list_namespaces bookkeeping", lambda: client.store.list_namespaces(prefix=[UNINDEXED]))


def test_no_user_reaches_another_users_threads_runs_assistants_or_memories(clients, bobs_data):
    bob = clients[BOB]
    (system,) = bob.assistants.search(graph_id=AGENT_NAME, metadata={"created_by": "system"})
    results = {}
    for attacker in (ALICE, CAROL):
        attempts = Attempts(attacker, bobs_data.markers)
        attack_threads_and_runs(clients[attacker], attempts, bobs_data)
        attack_assistants(clients[attacker], attempts, bobs_data, system["assistant_id"])
        attack_store(clients[attacker], attempts, bobs_data)
        results[attacker] = attempts

    assert sum(attempts.count for attempts in results.values()) >= 100
    assert [leak for attempts in results.values() for leak in attempts.leaks] == [], "\n".join(leak for attempts in results.values() for leak in attempts.leaks)
    assert [error for attempts in results.values() for error in attempts.unexpected] == []
    assert snapshot(bob, bobs_data.thread_ids, bobs_data.assistant_id) == bobs_data.before
    assert bob.assistants.get(system["assistant_id"]) == system
    assert {a["assistant_id"] for a in bob.assistants.search(limit=100)} == {bobs_data.assistant_id, system["assistant_id"]}
    assert {thread["thread_id"] for thread in bob.threads.search(limit=100)} == set(bobs_data.thread_ids)
    assert clients[CAROL].store.list_namespaces()["namespaces"] == []
