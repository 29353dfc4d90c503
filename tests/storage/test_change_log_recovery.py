"""The ToDo change log cannot drift from the store: a forget racing a writer, a backup restored into a live
database, a truncated store table and a backup from before the log existed all leave a running reader showing
exactly the ToDos stored, on SQLite and PostgreSQL."""

import sqlite3
import subprocess
import threading
from contextlib import ExitStack

import psycopg
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.postgres import PostgresStore
from langgraph.store.sqlite import SqliteStore

from graph.backends.sqlite import DATABASE_FILE, connect
from graph.backends.storage import open_store
from graph.memory import admin
from graph.memory.context import MemoryReads, select_collection
from graph.memory.kinds import TODO as TODO_KIND
from graph.memory.store import namespace
from testing import postgres_server
from testing.helpers import chore, fill
from testing.stored_names import TODO

NS = namespace(TODO, "u")


# What a graph keeps of its reads, as one process reading the store again and again keeps it.
READS = MemoryReads()


@pytest.fixture(autouse=True)
def fresh_reads():
    """Each test starts as a fresh process."""
    READS.clear()


def agent_view(store) -> set[str]:
    """The tasks the agent's reader shows (through the change log), checked against what the store holds."""
    shown = {item.value["task"] for item in select_collection(TODO_KIND, store, "u", "hello", limit=1000, reads=READS).items}
    stored = {item.value["task"] for item in store.search(NS, limit=100_000)}
    assert shown == stored, f"the agent shows {sorted(shown ^ stored)} unlike the store"
    return shown


class Backup:
    """A backup of the live database, taken and restored the way each backend's tools do it."""

    def __init__(self, database: dict, tmp_path):
        self.database, self.tmp_path = database, tmp_path

    def take(self) -> None:
        """Back the live database up."""
        if self.database["database_url"]:
            self._pg("pg_dump", "--format=custom", f"--file={self.tmp_path / 'backup.dump'}", self.database["database_url"])
        else:
            with sqlite3.connect(self.tmp_path / "backup.sqlite") as target, self._live() as live:
                live.backup(target)

    def restore(self) -> None:
        """Restore the backup into the live database while its readers keep running."""
        if self.database["database_url"]:
            self._pg(
                "pg_restore", "--clean", "--if-exists", "--no-owner", f"--dbname={self.database['database_url']}",
                str(self.tmp_path / "backup.dump"),
            )
        else:
            with sqlite3.connect(self.tmp_path / "backup.sqlite") as source, self._live() as live:
                source.backup(live)

    def _live(self) -> sqlite3.Connection:
        return connect(self.database["data_dir"] / DATABASE_FILE, autocommit=True)

    @staticmethod
    def _pg(program: str, *arguments: str) -> None:
        subprocess.run([str(postgres_server.BIN / program), *arguments], check=True, capture_output=True)


def test_a_forget_racing_a_writer_deletes_what_it_did_not_list_and_leaves_the_log_whole(database, monkeypatch):
    listed = admin.user_items

    def listing_then_a_write(store, user_id):
        items = listed(store, user_id)
        with open_store(**database) as other:  # another process writes after the forget listed the items
            other.put(NS, "late", chore("Feed the okapi"))
        return items

    monkeypatch.setattr(admin, "user_items", listing_then_a_write)
    with open_store(**database) as reader, open_store(**database) as writer:
        fill(writer, "u", 30)
        assert len(agent_view(reader)) == 30
        admin.forget_user(writer, InMemorySaver(), "u")
        after_forget = agent_view(reader)
        writer.put(NS, "next", chore("Walk the okapi"))
        later = agent_view(reader)

    assert after_forget == set(), "the ToDo written after the forget listed the items went with them"
    assert later == {"Walk the okapi"}


def test_forgets_while_another_process_keeps_writing_leave_the_log_whole(database):
    with open_store(**database) as reader, open_store(**database) as writer, open_store(**database) as forgetter:
        started = threading.Event()

        def keep_writing() -> None:
            for n in range(150):
                writer.put(NS, f"w{n}", chore(f"Chore {n}"))
                started.set()

        thread = threading.Thread(target=keep_writing)
        thread.start()
        started.wait()
        for _ in range(5):
            select_collection(TODO_KIND, reader, "u", "hello", limit=1000, reads=READS)  # while writes go on, the store moves on after any read
            admin.forget_user(forgetter, InMemorySaver(), "u")
        thread.join()
        agent_view(reader)  # the agent shows exactly what the store holds


def test_a_backup_restored_into_the_live_database_is_read_whole(database, tmp_path):
    backup = Backup(database, tmp_path)
    with open_store(**database) as reader, open_store(**database) as writer:
        fill(writer, "u", 20)
        writer.put(NS, "okapi", chore("Brush the okapi"))
        assert len(agent_view(reader)) == 21
        backup.take()
        writer.put(NS, "new", chore("Groom the okapi"))
        writer.delete(NS, "okapi")
        writer.put(NS, "item-00003", chore("Feed the okapi"))
        assert {"Groom the okapi", "Feed the okapi"} <= agent_view(reader)
        backup.restore()
        restored = agent_view(reader)
        writer.put(NS, "after", chore("Walk the okapi"))
        writer.delete(NS, "item-00004")
        later = agent_view(reader)

    assert "Brush the okapi" in restored and not {"Groom the okapi", "Feed the okapi"} & restored
    assert len(restored) == 21
    assert "Walk the okapi" in later and len(later) == 21


def test_a_truncated_store_table_is_read_whole(database):
    with open_store(**database) as reader, open_store(**database) as writer:
        fill(writer, "u", 25)
        assert len(agent_view(reader)) == 25
        # PostgreSQL's TRUNCATE fires no row trigger; SQLite has none (DELETE without WHERE is its form).
        with writer._cursor() if database["database_url"] else writer._cursor(transaction=False) as cur:
            cur.execute("TRUNCATE store" if database["database_url"] else "DELETE FROM store")
        emptied = agent_view(reader)
        writer.put(NS, "again", chore("Feed the okapi"))
        later = agent_view(reader)

    assert emptied == set()
    assert later == {"Feed the okapi"}


def test_a_backup_from_before_the_change_log_restored_into_the_live_database_gets_the_log(database, tmp_path):
    backup = Backup(database, tmp_path)
    with ExitStack() as stack:
        # The backup: a database that LangGraph's own store wrote, before task-maistro's log existed.
        if database["database_url"]:
            older = stack.enter_context(PostgresStore.from_conn_string(database["database_url"]))
        else:
            database["data_dir"].mkdir(parents=True)
            older = SqliteStore(connect(database["data_dir"] / DATABASE_FILE, autocommit=True))
            stack.callback(older.conn.close)
        older.setup()
        fill(older, "u", 10)
        backup.take()
        reader = stack.enter_context(open_store(**database))
        writer = stack.enter_context(open_store(**database))
        writer.put(NS, "new", chore("Groom the okapi"))
        assert len(agent_view(reader)) == 11
        if database["database_url"]:  # a restore into an emptied database: the log's tables go too
            with psycopg.connect(database["database_url"], autocommit=True) as conn:
                conn.execute("DROP TABLE maistro_todo_changes, maistro_todo_forgets")
        backup.restore()
        restored = agent_view(reader)
        writer.put(NS, "after", chore("Walk the okapi"))
        later = agent_view(reader)

    assert len(restored) == 10 and "Groom the okapi" not in restored
    assert "Walk the okapi" in later and len(later) == 11
