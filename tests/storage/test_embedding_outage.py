"""An embeddings provider that is down, answers errors or cannot load its tokenizer costs no memory (issue 22.7).

The index is `MAISTRO_EMBEDDINGS=openai` against a local OpenAI-compatible endpoint (`testing.embedding_stub`,
real multilingual-e5 vectors), on SQLite and PostgreSQL, with the real LangChain OpenAI embeddings client.
"""

import logging
import socket
import time

import httpx
import pytest
import tiktoken
from langchain_openai import OpenAIEmbeddings

from graph import build_graph, close_graph
from graph.memory import index_outage
from graph.memory.admin import user_items
from graph.memory.changes import ChangeContext, MemoryChange, commit_changes
from graph.memory.context import select_collection
from graph.memory.kinds import DEFAULT_MEMORY_KINDS
from graph.memory.kinds import TODO as TODO_KIND
from graph.memory.store import HISTORY, namespace, search_all
from graph.server.memory_page import search_memories
from testing.embedding_stub import EmbeddingStub
from testing.helpers import chore, profile_of, todos, turn
from testing.openai_stub import text_reply, tool_calls_reply
from testing.scripted_model import ScriptedChatModel, calls, profile, route, say, todo
from testing.stored_names import INSTRUCTIONS, PROFILE, TODO
from testing.stub_script import update

SWIM = "Book swim lessons for my daughter"
BILL = "Pay the electricity bill"
SWIM_QUESTION = "Did I sign my kid up for swimming?"


@pytest.fixture(autouse=True)
def index_health(monkeypatch):
    """Each test starts with the index known to be up, as a fresh process does."""
    monkeypatch.setattr(index_outage, "health", index_outage._IndexHealth())


@pytest.fixture(autouse=True)
def offline_tokenizer(monkeypatch):
    """tiktoken cannot fetch its encodings, as on a machine without internet."""

    def download(*_args, **_kwargs):
        raise ConnectionError("HTTPSConnectionPool(host='openaipublic.blob.core.windows.net'): Name resolution failed")

    monkeypatch.setattr(tiktoken, "get_encoding", download)
    monkeypatch.setattr(tiktoken, "encoding_for_model", download)


@pytest.fixture
def endpoint(monkeypatch):
    """The embedding endpoint at OPENAI_BASE_URL, stopped until a test starts it."""
    stub = EmbeddingStub()
    monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
    yield stub
    stub.close()


@pytest.fixture(params=["sqlite", "postgres"])
def storage(request, tmp_path) -> dict:
    if request.param == "postgres":
        return {"database_url": request.getfixturevalue("fresh_database")}
    return {"data_dir": tmp_path}


def outage_lines(caplog) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.levelno >= logging.WARNING]


def found_by_meaning(store, user: str, question: str) -> list[str]:
    return [item.value["task"] for item in store.search(namespace(TODO, user), query=question, limit=1) if item.score]


def test_a_stopped_endpoint_refuses_connections_and_keeps_its_port(endpoint):
    """Playing an outage gives the port away to no one: left free for the seconds of a turn on a loaded machine,
    any socket could take it (another test's server, an outgoing connection's source port), and the endpoint then
    failed to start again with "Address already in use", the likeliest reason the `down` case below failed once in
    the fast tier under load."""
    endpoint.start()
    endpoint.stop()

    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", endpoint.port), timeout=5)
    with socket.socket() as other, pytest.raises(OSError, match="Address already in use"):
        other.bind(("127.0.0.1", endpoint.port))
    endpoint.start()
    answered = httpx.post(f"{endpoint.base_url}/embeddings", json={"input": ["swim"], "model": "m"}, timeout=30)
    assert answered.status_code == 200 and len(answered.json()["data"][0]["embedding"]) == endpoint.dims


@pytest.mark.parametrize("outage", ["down", "errors"])
def test_a_turn_saves_its_memories_unindexed_and_they_are_indexed_once_the_endpoint_is_back(
    storage, endpoint, outage, caplog
):
    if outage == "errors":
        endpoint.start().failing = True
    model = ScriptedChatModel()
    agent = build_graph(**storage, embeddings="openai", chat_model=lambda _settings: model)
    model.add("task_maistro", route("user", "todo"), say("Nice to meet you, Lance. I noted the swim lessons."))
    model.add("update_profile", calls(profile(name="Lance", location="San Francisco")))
    model.add("update_todos", calls(todo(SWIM, solutions=["Call the community pool"])))

    with caplog.at_level(logging.INFO):
        messages = turn(agent, "I'm Lance from SF; I need to book swim lessons for my daughter.")

    assert messages[-1].content == "Nice to meet you, Lance. I noted the swim lessons."
    assert profile_of(agent)["location"] == "San Francisco"
    assert list(todos(agent)) == [SWIM]
    assert len(search_all(agent.store, namespace(HISTORY, "Lance"))) == 2
    (line,) = outage_lines(caplog)
    assert line.name == "graph.memory.index_outage" and line.exc_info is None
    assert "semantic index is unavailable" in line.getMessage()

    endpoint.failing = False
    if outage == "down":
        endpoint.start()
    assert found_by_meaning(agent.store, "Lance", SWIM_QUESTION) == []
    caplog.clear()
    model.add("task_maistro", route("todo"), say("Added the bill."))
    model.add("update_todos", calls(todo(BILL, solutions=["Pay online"])))
    with caplog.at_level(logging.INFO):
        turn(agent, "Remind me to pay the electricity bill.")

    assert found_by_meaning(agent.store, "Lance", SWIM_QUESTION) == [SWIM]
    assert found_by_meaning(agent.store, "Lance", "power company invoice") == [BILL]
    assert search_all(agent.store, (index_outage.UNINDEXED,)) == []
    assert ["answers again" in record.getMessage() for record in outage_lines(caplog)] == [True]
    close_graph(agent)


def test_searches_rank_by_words_while_the_index_fails(storage, endpoint, caplog):
    endpoint.start()
    agent = build_graph(**storage, embeddings="openai", chat_model=lambda _settings: ScriptedChatModel())
    tasks = [SWIM, BILL, "Renew passport", "Call grandma", "Clean the gutters", "Water the plants"]
    changes = [MemoryChange("created", task, None, chore(task)) for task in tasks]
    commit_changes(agent.store, "Lance", TODO_KIND, changes, ChangeContext(thread_id="t", message="m", seed="fill"))
    endpoint.stop()

    with caplog.at_level(logging.INFO):
        shown = select_collection(TODO_KIND, agent.store, "Lance", "Did I renew my passport?", limit=4).items
        page = search_memories(agent.store, "Lance", DEFAULT_MEMORY_KINDS, "passport", limit=3)

    assert "Renew passport" in [item.value["task"] for item in shown]
    assert (page["semantic"], [found["value"]["task"] for found in page["results"]]) == (False, ["Renew passport"])
    assert len(outage_lines(caplog)) == 1
    close_graph(agent)


def test_an_index_that_cannot_load_its_tokenizer_costs_no_memory(tmp_path, endpoint, caplog):
    """The index LangChain's OpenAI embeddings make by default tokenizes with tiktoken, which fails offline."""
    from graph.backends.sqlite import open_sqlite
    from graph.backends.storage import store_ttl_config

    endpoint.start()
    tokenizing = OpenAIEmbeddings(base_url=endpoint.base_url, api_key="not-needed", model="text-embedding-3-small")
    _, store = open_sqlite(tmp_path, {"embed": tokenizing, "dims": 1536, "fields": ["task"]}, store_ttl_config(), checkpointer=False)
    context = ChangeContext(thread_id="t", message="m", seed="swim")

    with caplog.at_level(logging.INFO):
        commit_changes(store, "Lance", TODO_KIND, [MemoryChange("created", "swim", None, chore(SWIM))], context)

    assert [item.value["task"] for item in search_all(store, namespace(TODO, "Lance"))] == [SWIM]
    assert [record.getMessage().split(" (")[0] for record in outage_lines(caplog)] == ["The semantic index is unavailable"]
    assert endpoint.requests == 0
    store.conn.close()


def test_openai_embeddings_work_offline_against_a_compatible_endpoint(tmp_path, endpoint):
    endpoint.start()
    agent = build_graph(tmp_path, embeddings="openai", chat_model=lambda _settings: ScriptedChatModel())
    changes = [MemoryChange("created", task, None, chore(task)) for task in (SWIM, BILL)]
    commit_changes(agent.store, "Lance", TODO_KIND, changes, ChangeContext(thread_id="t", message="m", seed="two"))

    assert found_by_meaning(agent.store, "Lance", SWIM_QUESTION) == [SWIM]
    assert endpoint.requests == 2
    assert search_all(agent.store, (index_outage.UNINDEXED,)) == []
    close_graph(agent)


def test_maistro_reindex_indexes_what_an_outage_left_unindexed(tmp_path, endpoint, monkeypatch):
    from typer.testing import CliRunner

    from graph import open_store
    from graph.app.cli import app

    monkeypatch.setenv("MAISTRO_EMBEDDINGS", "openai")
    with open_store(tmp_path) as store:
        changes = [MemoryChange("created", task, None, chore(task)) for task in (SWIM, BILL)]
        commit_changes(store, "Lance", TODO_KIND, changes, ChangeContext(thread_id="t", message="m", seed="two"))
    runner = CliRunner()

    still_down = runner.invoke(app, ["reindex", "--data-dir", str(tmp_path)])
    endpoint.start()
    back = runner.invoke(app, ["reindex", "--data-dir", str(tmp_path)])

    assert (still_down.exit_code, still_down.output.splitlines()[-1]) == (
        1, "2 memories still wait: the semantic index is still unavailable."
    )
    assert (back.exit_code, back.output) == (0, "Indexed 2 memories saved while the semantic index was unavailable.\n")
    with open_store(tmp_path) as store:
        assert found_by_meaning(store, "Lance", SWIM_QUESTION) == [SWIM]
        assert found_by_meaning(store, "Lance", "power company invoice") == [BILL]


def test_maistro_chat_saves_the_first_turn_when_the_endpoint_has_no_embeddings(stub, script, monkeypatch, caplog):
    """The issue's first turn: `maistro chat` with MAISTRO_EMBEDDINGS=openai on an endpoint that serves chat only."""
    from typer.testing import CliRunner

    from graph import open_store
    from graph.app.cli import app

    monkeypatch.setenv("MAISTRO_EMBEDDINGS", "openai")
    script.add("chat", update("todo"), text_reply("I added the swim lessons."))
    script.add("todo", tool_calls_reply(("ToDo", {"task": SWIM, "solutions": ["Call the community pool"]})))

    with caplog.at_level(logging.INFO):
        result = CliRunner().invoke(app, ["chat", "--user", "Lance"], input=f"{SWIM}\n")

    assert (result.exit_code, result.stdout.splitlines()) == (0, [f"✎ ToDo added: {SWIM}", "I added the swim lessons."])
    (line,) = outage_lines(caplog)
    assert line.getMessage().startswith("The semantic index is unavailable (NotFoundError: Error code: 404")
    with open_store() as store:
        assert [item.value["task"] for item in search_all(store, namespace(TODO, "Lance"))] == [SWIM]


def test_reindexing_drops_the_marker_of_a_memory_deleted_meanwhile_and_indexes_the_rest(tmp_path, endpoint):
    agent = build_graph(tmp_path, embeddings="openai", chat_model=lambda _settings: ScriptedChatModel())
    context = ChangeContext(thread_id="t", message="m", seed="two")
    changes = [MemoryChange("created", task, None, chore(task)) for task in (SWIM, BILL)]
    commit_changes(agent.store, "Lance", TODO_KIND, changes, context)
    removal = ChangeContext(thread_id="t", message="m", seed="gone")
    commit_changes(agent.store, "Lance", TODO_KIND, [MemoryChange("deleted", BILL, chore(BILL), None)], removal)
    endpoint.start()

    assert index_outage.reindex(agent.store) == 1
    assert search_all(agent.store, (index_outage.UNINDEXED,)) == []
    assert found_by_meaning(agent.store, "Lance", SWIM_QUESTION) == [SWIM]
    close_graph(agent)


# What a user can file as a marker of their own (an import, a server's store API, an undo of a forged entry did,
# before those were closed): a marker in the old format naming bob's profile and instructions, with a 6 ms TTL.
def pointer_at(namespace_: tuple[str, str], key: str) -> dict:
    return {"namespace": list(namespace_), "key": key, "index": ["name"], "ttl": 0.0001}


def test_a_marker_is_read_from_where_it_is_filed_and_never_reaches_another_user(storage, endpoint, caplog):
    from graph.memory.kinds import INSTRUCTIONS as INSTRUCTIONS_KIND
    from graph.memory.kinds import PROFILE as PROFILE_KIND

    endpoint.start()
    model = ScriptedChatModel()
    agent = build_graph(**storage, embeddings="openai", chat_model=lambda _settings: model)
    bobs = ChangeContext(thread_id="b", message="m", seed="bob")
    commit_changes(agent.store, "bob", PROFILE_KIND, [MemoryChange("created", "user_profile", None, {"name": "Bob"})], bobs)
    commit_changes(agent.store, "bob", INSTRUCTIONS_KIND,
                   [MemoryChange("created", "user_instructions", None, {"memory": "Short tasks."})], bobs)
    bob_before = {(item.namespace, item.key): item.value for item in user_items(agent.store, "bob")}
    alices = namespace(index_outage.UNINDEXED, "alice")
    agent.store.put(alices, "todo:planted", pointer_at(namespace(PROFILE, "bob"), "user_profile"), index=False)
    agent.store.put(alices, "todo:again", pointer_at(namespace(INSTRUCTIONS, "bob"), "user_instructions"), index=False)
    agent.store.put(alices, "no-kind-named", {}, index=False)
    agent.store.put((*alices, "deeper"), "todo:x", {"key": "x"}, index=False)
    model.add("task_maistro", route("todo"), say("Added the bill."))
    model.add("update_todos", calls(todo(BILL, solutions=["Pay online"])))

    with caplog.at_level(logging.INFO):
        turn(agent, "Remind me to pay the electricity bill.", user_id="alice")
    time.sleep(0.05)
    agent.store.sweep_ttl()

    assert list(todos(agent, "alice")) == [BILL]
    assert {(item.namespace, item.key): item.value for item in user_items(agent.store, "bob")} == bob_before
    assert search_all(agent.store, (index_outage.UNINDEXED,)) == []
    dropped = [r.getMessage() for r in caplog.records if r.name == "graph.memory.index_outage"]
    assert dropped == [
        "Dropped a malformed index-outage marker 'no-kind-named' in 'unindexed.alice': it names no memory of that user.",
        "Dropped a malformed index-outage marker 'todo:x' in 'unindexed.alice.deeper': it names no memory of that user.",
    ]
    close_graph(agent)


def test_maistro_reindex_drops_a_malformed_marker_and_indexes_every_other_users_memories(
    tmp_path, endpoint, monkeypatch, caplog
):
    from typer.testing import CliRunner

    from graph import open_store
    from graph.app.cli import app

    monkeypatch.setenv("MAISTRO_EMBEDDINGS", "openai")
    with open_store(tmp_path) as store:
        store.put(namespace(index_outage.UNINDEXED, "carol"), "todo", {}, index=False)
        store.put(namespace(index_outage.UNINDEXED, "carol"), "history:c1", pointer_at(namespace(TODO, "Lance"), "x"), index=False)
        changes = [MemoryChange("created", task, None, chore(task)) for task in (SWIM, BILL)]
        commit_changes(store, "Lance", TODO_KIND, changes, ChangeContext(thread_id="t", message="m", seed="two"))
    endpoint.start()
    caplog.clear()

    with caplog.at_level(logging.INFO):
        result = CliRunner().invoke(app, ["reindex", "--data-dir", str(tmp_path)])

    assert (result.exit_code, result.output) == (0, "Indexed 2 memories saved while the semantic index was unavailable.\n")
    assert sorted(r.getMessage() for r in caplog.records if r.name == "graph.memory.index_outage") == [
        "Dropped a malformed index-outage marker 'history:c1' in 'unindexed.carol': it names no memory of that user.",
        "Dropped a malformed index-outage marker 'todo' in 'unindexed.carol': it names no memory of that user.",
    ]
    with open_store(tmp_path) as store:
        assert found_by_meaning(store, "Lance", SWIM_QUESTION) == [SWIM]
        assert store.search((index_outage.UNINDEXED,)) == []
