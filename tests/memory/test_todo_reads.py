"""A turn reads only the ToDo rows that changed since this process last read the list (the database logs the
changes), and still sees every change: made through another connection, deleted and re-created keys, expired
items, a transaction that commits after a later one, a database that had no change log yet."""

import time
from contextlib import ExitStack

import psycopg
import pytest
from langgraph.store.base import Item
from langgraph.store.postgres import PostgresStore
from langgraph.store.sqlite import SqliteStore
from psycopg.types.json import Jsonb

from graph.backends import collection_changes
from graph.backends.atomic_postgres import AtomicPostgresStore
from graph.backends.collection_changes import CollectionChangeLog
from graph.backends.sqlite import DATABASE_FILE, connect
from graph.backends.storage import open_store
from graph.memory.admin import forget_user
from graph.memory.context import MemoryReads, select_collection
from graph.memory.kinds import TODO as TODO_KIND
from graph.memory.store import namespace
from testing.helpers import chore, fill
from testing.stored_names import TODO

NS = namespace(TODO, "u")


@pytest.fixture
def fetched(monkeypatch) -> list[int]:
    """How many ToDo rows each read fetched from the database, in order."""
    counts: list[int] = []
    read = CollectionChangeLog.read_memory_rows

    def counting(store, user_id, kinds, marks, stored=()):
        rows = read(store, user_id, kinds, marks, stored)
        counts.append(sum(map(len, rows.changes.values())))
        return rows

    monkeypatch.setattr(CollectionChangeLog, "read_memory_rows", counting)
    return counts


# What a graph keeps of its reads, as one process reading the store again and again keeps it.
READS = MemoryReads()


@pytest.fixture(autouse=True)
def fresh_reads():
    """Each test starts as a fresh process."""
    READS.clear()


def tasks(store, query: str = "hello") -> set[str]:
    selection = select_collection(TODO_KIND, store, "u", query, limit=30, reads=READS)
    assert len(selection.items) + selection.hidden_open + selection.hidden_closed == total(store)
    return {item.value["task"] for item in selection.items}


def total(store) -> int:
    return len(store.search(NS, limit=100_000))


def test_a_read_fetches_only_the_rows_changed_since_the_last(database, fetched):
    with open_store(**database) as store:
        fill(store, "u", 300)
        tasks(store)
        tasks(store)
        store.put(NS, "item-00042", chore("Brush the okapi"))
        store.delete(NS, "item-00007")
        found = tasks(store, "okapi")

    assert fetched == [300, 0, 2]
    assert "Brush the okapi" in found


def test_writes_through_another_connection_are_seen_by_the_next_read(database, fetched):
    with open_store(**database) as reader, open_store(**database) as writer:
        fill(writer, "u", 200)
        assert tasks(reader, "okapi") & {"Brush the okapi", "Groom the okapi"} == set()
        writer.put(NS, "new", chore("Groom the okapi"))
        writer.put(NS, "item-00010", chore("Brush the okapi"))
        writer.delete(NS, "item-00020")
        found = tasks(reader, "okapi")
        assert total(reader) == 200

    assert {"Brush the okapi", "Groom the okapi"} <= found
    assert fetched == [200, 3]


def test_a_deleted_then_recreated_key_is_read_again(database, fetched):
    with open_store(**database) as reader, open_store(**database) as writer:
        fill(writer, "u", 50)
        tasks(reader)
        # The newest row goes and another takes its place (SQLite reuses the rowid), then a key comes back.
        writer.delete(NS, "item-00049")
        writer.put(NS, "okapi", chore("Walk the okapi"))
        writer.delete(NS, "item-00003")
        writer.put(NS, "item-00003", chore("Feed the okapi"))
        assert tasks(reader, "okapi") >= {"Walk the okapi", "Feed the okapi"}
        writer.delete(NS, "okapi")
        found = tasks(reader, "okapi")

    assert "Walk the okapi" not in found and "Feed the okapi" in found
    assert fetched == [50, 3, 1]


def test_expired_items_leave_the_list(database, fetched):
    with open_store(**database) as reader, open_store(**database) as writer:
        fill(writer, "u", 40)
        writer.put(NS, "soon", chore("Feed the okapi"), ttl=1 / 60)  # a second
        assert "Feed the okapi" in tasks(reader, "okapi")
        time.sleep(2.2)  # SQLite compares expiry times with the clock to the second
        if database["database_url"]:  # PostgreSQL hides expired items before the sweeper deletes them
            assert "Feed the okapi" not in tasks(reader, "okapi")
        assert writer.sweep_ttl() == 1
        found = tasks(reader, "okapi")

    assert "Feed the okapi" not in found
    assert fetched == ([41, 1, 1] if database["database_url"] else [41, 1])


def test_a_transaction_that_commits_after_a_later_one_is_still_seen(fresh_database, fetched):
    with open_store(None, fresh_database, "") as reader, open_store(None, fresh_database, "") as writer:
        fill(writer, "u", 20)
        tasks(reader)
        with psycopg.connect(fresh_database) as slow:
            slow.execute(
                "INSERT INTO store (prefix, key, value, created_at, updated_at) VALUES (%s, 'slow', %s, NOW(), NOW())",
                (".".join(NS), Jsonb(chore("Feed the okapi"))),
            )
            writer.put(NS, "fast", chore("Walk the okapi"))
            assert "Walk the okapi" in tasks(reader, "okapi")
            slow.commit()
        found = tasks(reader, "okapi")

    assert {"Walk the okapi", "Feed the okapi"} <= found
    # The last read goes back to the transaction that was still running: it fetches "fast" again, and "slow".
    assert fetched == [20, 1, 2]


def test_a_database_without_the_change_log_gets_it_when_it_opens(database, fetched):
    with ExitStack() as stack:
        if database["database_url"]:
            plain = stack.enter_context(PostgresStore.from_conn_string(database["database_url"]))
        else:
            database["data_dir"].mkdir(parents=True)
            plain = SqliteStore(connect(database["data_dir"] / DATABASE_FILE, autocommit=True))
            stack.callback(plain.conn.close)
        plain.setup()
        fill(plain, "u", 100)
        store = stack.enter_context(open_store(**database))
        assert len(tasks(store)) == 30
        plain.put(NS, "new", chore("Groom the okapi"))
        found = tasks(store, "okapi")

    assert "Groom the okapi" in found
    assert fetched == [100, 1]


def test_a_postgresql_server_too_old_for_the_change_log_is_refused_with_a_sentence(monkeypatch, fresh_database):
    monkeypatch.setattr(AtomicPostgresStore, "OLDEST_SERVER", 10**9)  # every real server is "too old" now
    with pytest.raises(RuntimeError, match=r"needs PostgreSQL 13 or later; this server is version \d+"):
        with open_store(None, fresh_database):
            pass


def test_a_forgotten_user_leaves_nothing_in_the_log_and_readers_read_afresh(database, fetched):
    from langgraph.checkpoint.memory import InMemorySaver

    with open_store(**database) as reader, open_store(**database) as writer:
        fill(writer, "u", 30)
        fill(writer, "other", 5)
        assert len(tasks(reader)) == 30
        forget_user(writer, InMemorySaver(), "u")
        assert tasks(reader) == set(), "the reader learnt of the deletions the log no longer holds"
        writer.put(NS, "again", chore("Feed the okapi"))
        found = tasks(reader, "okapi")
        logged = log_prefixes(writer, database)

    assert found == {"Feed the okapi"}
    assert fetched == [30, 0, 0, 1], "the read after the forget found the count changed and read the list again"
    assert logged == {".".join(namespace(TODO, "other")): 5, ".".join(NS): 1}, "only the new ToDo of u is logged"


def test_the_change_log_setup_runs_each_migration_once_and_then_only_those_a_database_lacks(database, monkeypatch):
    with open_store(**database) as store:
        store_class = type(store)
        first = migrations_run(store, database)
    # A later version of the store class adds a migration that can run only once (a plain CREATE TABLE).
    added = (*store_class.CHANGE_LOG_MIGRATIONS, ("CREATE TABLE maistro_probe (id integer)",))
    monkeypatch.setattr(store_class, "CHANGE_LOG_MIGRATIONS", added)
    with open_store(**database) as store:
        fill(store, "u", 3)
    with open_store(**database) as store:  # a second run of the new migration would fail here
        later = migrations_run(store, database)
        found = tasks(store)

    assert first == list(range(len(added) - 1))
    assert later == list(range(len(added)))
    assert len(found) == 3, "the ToDos written after the upgrade are logged and read"


def migrations_run(store, database: dict) -> list[int]:
    """The change log migrations the database records as run."""
    return [row[0] for row in query(store, database, f"SELECT v FROM {collection_changes.MIGRATIONS} ORDER BY v")]


def log_prefixes(store, database: dict) -> dict[str, int]:
    """How many log rows each prefix has, read straight from the database."""
    return dict(query(store, database, f"SELECT prefix, count(*) FROM {collection_changes.TABLE} GROUP BY prefix"))


def query(store, database: dict, statement: str) -> list[tuple]:
    """The rows of a statement run straight on the database (on PostgreSQL, through a connection of its own)."""
    if database["database_url"]:
        with psycopg.connect(database["database_url"]) as conn:
            return conn.execute(statement).fetchall()
    with store._cursor(transaction=False) as cur:
        cur.execute(statement)
        return cur.fetchall()


def test_a_first_read_builds_the_items_of_only_what_the_turn_can_show(database, monkeypatch):
    """A fresh process's first read fetches the whole list, but parses the times and builds the `Item` of only
    the documents a selection can pick, so its cost per ToDo stays small; what the turn shows is the same."""
    built: list[str] = []
    build = Item.__init__

    def counted(item, **fields):
        built.append(fields["key"])
        build(item, **fields)

    with open_store(**database) as store:
        fill(store, "u", 1000)
        store.put(NS, "item-00042", chore("Brush the okapi"))
        with monkeypatch.context() as patched:
            patched.setattr(Item, "__init__", counted)
            selection = select_collection(TODO_KIND, store, "u", "okapi", limit=30)
        stored = {item.key: item for item in store.search(NS, limit=100_000)}

    assert len(built) <= 2 * 30, f"{len(built)} items of 1,000 built by a first read"
    assert selection.relevance[0] == "item-00042"
    assert len(selection.items) + selection.hidden_open + selection.hidden_closed == 1000
    for item in selection.items:
        assert (item.value, item.created_at, item.updated_at) == (
            stored[item.key].value, stored[item.key].created_at, stored[item.key].updated_at
        )
