"""History at the cost of what is shown: the newest N entries in order on SQLite, PostgreSQL and a plain
InMemoryStore (the `langgraph dev` path), undo of the latest change and of an id prefix, `maistro history
--limit/--all`, retention (MAISTRO_HISTORY_KEEP) and the sentence an undo of a pruned change gets, and reads that
validate only what they return."""

import asyncio
import json
import random
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore
from starlette.requests import Request
from typer.testing import CliRunner

import graph.memory.history as history_module
from graph.app.cli import app
from graph.backends.storage import open_store
from graph.memory import kinds
from graph.memory.changes import ChangeContext, MemoryChange, commit_changes, list_history, undo_change
from graph.memory.history import (
    AmbiguousChangeError,
    PrunedChangeError,
    ShortChangeIdError,
    find_change,
    history_page,
    iter_history,
    newest_history,
)
from graph.memory.store import HISTORY, namespace
from graph.server import memory_api
from graph.server.memory_page import memories_version, read_memories
from graph.settings import Settings, SettingsError

USER = "Lance"
START = datetime(2025, 1, 1, tzinfo=timezone.utc)
ENTRY_IDS = uuid.UUID("6a0c2f43-2f0e-4d55-9b3c-3f1b0e8a7d11")


def entry(number: int, moment: datetime, order: int = 0, entry_id: str | None = None) -> dict:
    """A history entry as the agent writes one: a ToDo created."""
    return {
        "id": entry_id or str(uuid.uuid5(ENTRY_IDS, str(number))),
        "time": moment.isoformat(),
        "order": order,
        "thread_id": "t",
        "kind": "todo",
        "message": f"message {number}",
        "action": "created",
        "key": f"todo-{number}",
        "before": None,
        "after": {"task": f"Task {number}", "solutions": [], "status": "not started"},
    }


def history_entries(count: int, start: datetime = START) -> list[dict]:
    """`count` entries, three to a time (orders 0-2), one time a minute."""
    return [entry(n, start + timedelta(minutes=n // 3), n % 3) for n in range(count)]


def write_history(store, entries: list[dict], user: str = USER) -> None:
    """Write the entries in a random order (the store's write order must not be what orders them)."""
    shuffled = random.Random(7).sample(entries, len(entries))
    store.batch([PutOp(namespace(HISTORY, user), e["id"], e, index=False) for e in shuffled])


def newest_first(entries: list[dict]) -> list[dict]:
    return sorted(entries, key=lambda e: (e["time"], e["order"]), reverse=True)


def opened_store(request, tmp_path):
    """The store a parametrization names: this project's on SQLite or PostgreSQL, or a plain InMemoryStore."""
    if request.param == "memory":
        yield InMemoryStore()
        return
    url = request.getfixturevalue("fresh_database") if request.param == "postgres" else ""
    with open_store(tmp_path / "data", database_url=url, embeddings="") as opened:
        yield opened


@pytest.fixture(params=["sqlite", "postgres", "memory"])
def store(request, tmp_path):
    """This project's SQLite and PostgreSQL stores, and a plain InMemoryStore (what `langgraph dev` gives)."""
    yield from opened_store(request, tmp_path)


@pytest.fixture(params=["sqlite", "postgres"])
def sql_store(request, tmp_path):
    """This project's SQLite and PostgreSQL stores: the history index and retention in the TTL sweep."""
    yield from opened_store(request, tmp_path)


@pytest.fixture
def validations(monkeypatch) -> list[int]:
    """How many stored values the history reader has validated (`readable_entry` calls)."""
    counted = [0]
    readable = history_module.readable_entry

    def counting(value):
        counted[0] += 1
        return readable(value)

    monkeypatch.setattr(history_module, "readable_entry", counting)
    return counted


def test_the_newest_entries_come_newest_first_with_their_order(store):
    entries = history_entries(300)
    write_history(store, entries)
    store.put(namespace(HISTORY, USER), "not-an-entry", {"note": "hand-made"}, index=False)
    expected = newest_first(entries)

    assert newest_history(store, USER, 25) == expected[:25]
    assert [e["id"] for e in iter_history(store, USER)] == [e["id"] for e in expected]
    assert list_history(store, USER) == expected[::-1]
    page = history_page(store, USER, 7)
    assert page.entries == expected[:7] and page.total == 301, "the count is of stored items, the entries are checked"
    assert newest_history(store, "Someone else", 5) == []


def test_a_page_and_an_undo_validate_only_what_they_read(sql_store, validations):
    write_history(sql_store, history_entries(3000))
    latest = newest_first(history_entries(3000))[0]

    page = history_page(sql_store, USER, 50)
    assert len(page.entries) == 50 and page.total == 3000
    assert validations[0] == 50, "only the entries shown are validated"

    validations[0] = 0
    assert find_change(sql_store, USER, latest["id"][:6]) == latest
    assert newest_history(sql_store, USER, 1) == [latest]
    assert validations[0] <= 3


def test_undo_reverts_the_latest_change_and_one_named_by_its_prefix(store):
    context = ChangeContext(thread_id="t", message="add", seed="seed-1")
    todo = {"task": "Water the fern", "solutions": ["Blue can"], "status": "not started"}
    commit_changes(store, USER, kinds.TODO, [MemoryChange("created", "fern", None, todo)], context)
    done = {**todo, "status": "done"}
    commit_changes(store, USER, kinds.TODO, [MemoryChange("updated", "fern", todo, done)], ChangeContext("t", "done", "seed-2"))
    created = list_history(store, USER)[0]

    undone = undo_change(store, USER)
    assert undone["undoes"] == list_history(store, USER)[1]["id"]
    assert store.get(namespace(kinds.TODO, USER), "fern").value["status"] == "not started"

    undo_change(store, USER, created["id"][:5])
    assert store.get(namespace(kinds.TODO, USER), "fern") is None

    write_history(store, [entry(1, START, entry_id="abcd1"), entry(2, START, entry_id="abcd2")], user="Ann")
    with pytest.raises(AmbiguousChangeError):
        find_change(store, "Ann", "abcd")
    with pytest.raises(ShortChangeIdError):
        find_change(store, "Ann", "abc")
    assert find_change(store, "Ann", "abcd2")["id"] == "abcd2"


def cli(*args: str):
    return CliRunner().invoke(app, list(args))


def test_maistro_history_shows_a_screenful_and_more_when_asked(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    with open_store(tmp_path, database_url="", embeddings="") as store:
        write_history(store, history_entries(30))
    expected = newest_first(history_entries(30))
    where = ("--user", USER, "--data-dir", str(tmp_path))

    table = cli("history", *where)
    assert table.exit_code == 0
    assert "The 20 newest of 30 changes" in table.output
    assert expected[0]["id"][:8] in table.output and expected[19]["id"][:8] in table.output
    assert expected[20]["id"][:8] not in table.output
    assert table.output.index(expected[1]["id"][:8]) < table.output.index(expected[0]["id"][:8]), "newest last"

    five = json.loads(cli("history", *where, "--limit", "5", "--json").output)
    assert list(five) == [e["id"] for e in expected[:5]][::-1]
    every = json.loads(cli("history", *where, "--all", "--json").output)
    assert list(every) == [e["id"] for e in expected][::-1]
    assert "newest of" not in cli("history", *where, "--all").output
    both = cli("history", *where, "--all", "--limit", "3")
    assert both.exit_code == 1
    assert both.output == "--all shows every change and --limit 3 the newest 3: pass one of them, not both.\n"


def test_retention_prunes_by_count_and_an_undo_says_the_change_is_no_longer_kept(sql_store, monkeypatch, tmp_path):
    write_history(sql_store, history_entries(25))
    write_history(sql_store, history_entries(5), user="Ann")
    oldest = newest_first(history_entries(25))[-1]
    monkeypatch.setenv("MAISTRO_HISTORY_KEEP", "10")

    sql_store.sweep_ttl()

    assert newest_history(sql_store, USER, None) == newest_first(history_entries(25))[:10]
    assert len(newest_history(sql_store, "Ann", None)) == 5
    with pytest.raises(PrunedChangeError) as error:
        undo_change(sql_store, USER, oldest["id"])
    assert str(error.value) == f"change {oldest['id']} is older than the 10 newest changes kept (MAISTRO_HISTORY_KEEP)"
    assert history_page(sql_store, USER, 1).pruned == 15


def test_retention_prunes_by_age(sql_store, monkeypatch):
    now = datetime.now(timezone.utc)
    old, recent = history_entries(6, now - timedelta(days=60)), [entry(99, now - timedelta(days=1))]
    write_history(sql_store, old + recent)
    monkeypatch.setenv("MAISTRO_HISTORY_KEEP", "30d")

    sql_store.prune_history()

    assert newest_history(sql_store, USER, None) == recent
    with pytest.raises(PrunedChangeError, match="older than the last 30 days kept"):
        find_change(sql_store, USER, old[0]["id"][:8])


def test_the_cli_undo_of_a_pruned_change_says_so(tmp_path, monkeypatch):
    with open_store(tmp_path, database_url="", embeddings="") as store:
        write_history(store, history_entries(4))
        monkeypatch.setenv("MAISTRO_HISTORY_KEEP", "2")
        store.prune_history()
    oldest = newest_first(history_entries(4))[-1]["id"]

    result = cli("undo", oldest[:8], "--user", USER, "--data-dir", str(tmp_path))

    assert result.exit_code == 1
    assert result.output == (
        f"Cannot undo for {USER}: change {oldest[:8]} is older than the 2 newest changes kept (MAISTRO_HISTORY_KEEP).\n"
    )


def test_the_page_poll_answers_from_the_version_without_reading_the_memories(store, monkeypatch):
    write_history(store, history_entries(60))
    shown = read_memories(store, USER, kinds.DEFAULT_MEMORY_KINDS, 50)
    assert shown["history"] == newest_first(history_entries(60))[:50] and shown["history_total"] == 60
    tag = memories_version(store, USER, kinds.DEFAULT_MEMORY_KINDS, 50)

    def unread(*args, **kwargs):
        raise AssertionError("a poll that finds nothing new reads no memories")

    monkeypatch.setattr(memory_api, "read_memories", unread)
    scope = {"type": "http", "query_string": b"", "headers": [(b"if-none-match", tag.encode())]}
    assert memory_api._memories(store, USER, Request(scope), {}).status_code == 304

    todo = {"task": "Buy soil", "solutions": ["Garden shop"], "status": "not started"}
    commit_changes(store, USER, kinds.TODO, [MemoryChange("created", "soil", None, todo)], ChangeContext("t", "m", "s"))
    assert memories_version(store, USER, kinds.DEFAULT_MEMORY_KINDS, 50) != tag


@pytest.mark.parametrize("value", ["ten", "0", "-5", "30w", "10,x"])
def test_a_bad_history_keep_is_one_sentence(value):
    with pytest.raises(SettingsError, match=r"^MAISTRO_HISTORY_KEEP=.* is invalid: .*\.$"):
        Settings.from_environ({"MAISTRO_HISTORY_KEEP": value})
    assert Settings.from_environ({"MAISTRO_HISTORY_KEEP": "10000,365d"}).history_keep.describe() == (
        "the 10,000 newest changes of the last 365 days"
    )


def test_langgraph_postgres_stores_as_the_servers_use_them_read_only_the_page(fresh_database, validations):
    from langgraph.store.postgres import AsyncPostgresStore, PostgresStore

    from graph.backends.history_postgres import MIGRATION, read_langgraph_stores_through_sql

    read_langgraph_stores_through_sql()  # as the memory page's endpoints do on Aegra (`server_store`)
    entries = newest_first(history_entries(600))
    with PostgresStore.from_conn_string(fresh_database) as store:
        store.setup()
        with store._cursor() as cur:  # what Aegra's retention sweep gives its database as the server starts
            for statement in MIGRATION:
                cur.execute(statement)
        write_history(store, entries)
        page = history_page(store, USER, 10)
        assert page.entries == entries[:10] and page.total == 600
        assert find_change(store, USER, entries[-1]["id"][:8]) == entries[-1]
    assert validations[0] <= 12, "only the page and the change found are validated"

    async def on_the_servers_loop() -> None:  # Aegra's store, called from a worker thread as the page is
        async with AsyncPostgresStore.from_conn_string(fresh_database) as store:
            page = await asyncio.to_thread(history_page, store, USER, 5)
            assert page.entries == entries[:5] and page.total == 600

    validations[0] = 0
    asyncio.run(on_the_servers_loop())
    assert validations[0] == 5
