"""Aegra as the production server: two real instances sharing one PostgreSQL database and one Redis.

The instances run `aegra serve` from aegra.json (testing.aegra_server) with tokens for a few users; their
model calls go to the benchmark's chore-keeping stub (`testing.chore_endpoint`), which answers each request from
what it carries, so that users running at the same time on both instances get their own replies. The auth and
memory page suites run on Aegra as well (`tests/server/test_server_auth.py`, `test_memory_page.py`).
"""

import json
import threading
from collections.abc import Iterator

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from graph.backends.embeddings import MultilingualEmbeddings
from graph.memory.store import HISTORY, user_label
from graph.names import AGENT_NAME
from testing.aegra_server import aegra_instances, embedding_server, redis_server
from testing.chore_endpoint import ADD, REPLY_FIRST_CONFIRMATION, ChoreEndpoint
from testing.langgraph_server import ROOT, new_thread, play, token_environment
from testing.openai_stub import OpenAIStub
from testing.postgres_server import create_database
from testing.stored_names import INSTRUCTIONS, PROFILE, TODO

USERS = [f"user{n}" for n in range(6)]
TOKENS = {user: f"{user}-token-5b0e9c2d" for user in USERS}
CONCURRENT_TURNS = 4


class GatedChores(ChoreEndpoint):
    """The chore-keeping model, which can be told to hold its next answer until the test lets it go."""

    def __init__(self) -> None:
        super().__init__()
        self.gate: threading.Event | None = None
        self.reached = threading.Event()

    def __call__(self, request: dict) -> dict:
        """Answer as the chore model does, after the gate opens if one is set."""
        gate, self.gate = self.gate, None
        if gate is not None:
            self.reached.set()
            gate.wait()
        return super().__call__(request)


@pytest.fixture(scope="module")
def model() -> GatedChores:
    """The model every run of the module talks to."""
    return GatedChores()


@pytest.fixture(scope="module")
def instances(model: GatedChores, tmp_path_factory: pytest.TempPathFactory, postgres_url: str) -> Iterator[list[str]]:
    """Two Aegra instances on one fresh database and one Redis."""
    scratch = tmp_path_factory.mktemp("aegra-instances")
    with OpenAIStub(model) as stub, redis_server(scratch) as redis:
        env = token_environment(scratch, stub, TOKENS)
        with aegra_instances(scratch, env, create_database(postgres_url), redis, count=2) as urls:
            yield urls


def client(url: str, user: str) -> SyncLangGraphClient:
    """The user's SDK client of one instance."""
    return get_sync_client(url=url, headers={"Authorization": f"Bearer {TOKENS[user]}"}, timeout=60)


def chores(sdk: SyncLangGraphClient, user: str) -> list[str]:
    """The user's ToDo tasks as the SDK reads them, sorted (a duplicate shows twice)."""
    return sorted(item["value"]["task"] for item in sdk.store.search_items((TODO, user_label(user)), limit=100)["items"])


def test_aegra_json_is_langgraph_json_but_for_the_store_aegra_can_build():
    langgraph = json.loads((ROOT / "langgraph.json").read_text())
    aegra = json.loads((ROOT / "aegra.json").read_text())

    assert {k: v for k, v in aegra.items() if k != "store"} == {
        k: v for k, v in langgraph.items() if k not in ("store", "python_version")
    }
    index, served = aegra["store"]["index"], langgraph["store"]["index"]
    assert (index["dims"], index["fields"]) == (served["dims"], served["fields"]) == (MultilingualEmbeddings.dims, ["task"])
    assert {TODO, PROFILE, INSTRUCTIONS, HISTORY} <= set(aegra["store"]["scopes"])
    assert set(map(tuple, aegra["store"]["scopes"].values())) == {("user_label",)}


def test_a_docker_build_leaves_out_secrets_local_data_and_virtualenvs():
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".env", ".venv/", ".aegra-venv/", ".langgraph_api/", "*.sqlite", ".git/"} <= ignored


def test_the_embedding_server_embeds_as_ollama_does_and_refuses_bad_input_with_a_sentence(tmp_path):
    with embedding_server(tmp_path) as url:
        answer = httpx.post(f"{url}/api/embed", json={"model": "multilingual-e5-small", "input": ["游泳课", "swim"]})
        single = httpx.post(f"{url}/api/embed", json={"input": "swim"})
        refused = [httpx.post(f"{url}/api/embed", content=body) for body in (b"not json", b'{"input": [1, 2]}', b"[]")]

    vectors = answer.json()["embeddings"]
    assert answer.status_code == 200 and [len(vector) for vector in vectors] == [384, 384]
    assert abs(sum(x * x for x in vectors[1]) - 1) < 1e-3, "normalized"
    assert single.json()["embeddings"] == [vectors[1]]
    assert [response.status_code for response in refused] == [400, 400, 400]
    assert all(response.json()["error"].count(".") <= 1 for response in refused)


def test_the_server_guard_stands_in_front_of_aegras_routes_and_info_is_aegras_with_crons_on(instances):
    assert httpx.get(f"{instances[0]}/info").status_code == 401, "the server guard stands in front of Aegra too"
    foreign = httpx.post(
        f"{instances[0]}/threads/search", json={}, headers={"X-Api-Key": TOKENS[USERS[0]], "Origin": "https://evil.example"}
    )
    assert foreign.status_code == 403 and "MAISTRO_CORS_ORIGINS" in foreign.json()["detail"], "Aegra's own routes too"
    wrong_token = httpx.post(f"{instances[0]}/threads/search", json={}, headers={"X-Api-Key": "x" * 20})
    assert wrong_token.json()["detail"] == "Unknown or expired token.", "the guard's 401, before Aegra's"
    info = httpx.get(f"{instances[0]}/info", headers={"X-Api-Key": TOKENS[USERS[0]]}).json()
    assert info["name"] == "Aegra" and info["flags"]["crons"] is True


def test_a_thread_started_on_one_instance_is_continued_on_the_other(instances):
    first, second = (client(url, USERS[0]) for url in instances)
    thread_id = new_thread(first)

    play(first, thread_id, f"{ADD}Water the ferns")
    play(second, thread_id, f"{ADD}Call the plumber")

    said = [m["content"] for m in first.threads.get_state(thread_id)["values"]["messages"] if m["type"] == "human"]
    assert said == [f"{ADD}Water the ferns", f"{ADD}Call the plumber"]
    assert chores(first, USERS[0]) == chores(second, USERS[0]) == ["Call the plumber", "Water the ferns"]


def test_a_run_started_on_one_instance_is_joined_from_the_other(instances, model):
    first, second = (client(url, USERS[1]) for url in instances)
    thread_id = new_thread(first)
    gate = model.gate = threading.Event()
    model.reached.clear()

    run = first.runs.create(thread_id, AGENT_NAME, input={"messages": [{"role": "user", "content": f"{ADD}Renew the lease"}]})
    assert model.reached.wait(60), "the run reached the model"
    joined = second.runs.join_stream(thread_id, run["run_id"], stream_mode="values")
    first_part = next(joined)
    gate.set()
    parts = [first_part, *joined]

    assert second.runs.get(thread_id, run["run_id"])["status"] == "success"
    final = [part.data for part in parts if part.event == "values"][-1]
    assert final["messages"][-1]["content"] == "Done, your list is up to date."
    assert chores(second, USERS[1]) == ["Renew the lease"]


def test_users_on_both_instances_at_once_lose_and_duplicate_no_memory(instances):
    users = USERS[2:]
    failures: list[str] = []

    def converse(user: str) -> None:
        clients = [client(url, user) for url in instances]
        thread_id = new_thread(clients[1])
        try:
            for n in range(CONCURRENT_TURNS):
                play(clients[n % 2], thread_id, f"{ADD}{user} chore {n}")
        except Exception as error:
            failures.append(f"{user}: {error!r}")

    workers = [threading.Thread(target=converse, args=(user,)) for user in users]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    assert failures == []
    for user in users:
        expected = [f"{user} chore {n}" for n in range(CONCURRENT_TURNS)]
        assert chores(client(instances[0], user), user) == chores(client(instances[1], user), user) == expected


def test_a_memory_turn_answered_first_streams_the_reply_then_the_updates_note(instances, model):
    sdk = client(instances[0], USERS[2])
    thread_id, asked = new_thread(sdk), len(model.requests)
    model.replies_first = True
    try:
        parts = list(
            sdk.runs.stream(
                thread_id,
                AGENT_NAME,
                input={"messages": [{"role": "user", "content": f"{ADD}Oil the hinges"}]},
                stream_mode=["messages-tuple", "updates", "custom"],
            )
        )
    finally:
        model.replies_first = False

    events = [part.event for part in parts]
    reply = [part.data[0]["content"] for part in parts if part.event == "messages" and part.data[1].get("langgraph_node") == AGENT_NAME]
    assert "".join(reply) == REPLY_FIRST_CONFIRMATION
    first_reply = next(i for i, part in enumerate(parts) if part.event == "messages" and part.data[0].get("content"))
    assert first_reply < events.index("custom"), "the reply streams before the update's note"
    (custom,) = [part.data for part in parts if part.event == "custom"]
    assert custom["memory_update"]["notes"] == ["ToDo added: Oil the hinges"] and not custom["memory_update"]["failed"]
    assert [request.kind for request in model.requests[asked:]] == ["chat", "todo"], "no second chat call"
    assert "Oil the hinges" in chores(sdk, USERS[2])
    thread = sdk.threads.get_state(thread_id)["values"]["messages"]
    assert [m["type"] for m in thread] == ["human", "ai", "tool", "ai"], "the turn ends with its reply"
    assert thread[-1]["content"] == REPLY_FIRST_CONFIRMATION
