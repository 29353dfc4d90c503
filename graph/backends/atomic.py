"""Store batches that write all of their items or none, however many there are, and only if nothing changed.

Every memory change is one `store.batch([...])` holding the change and its history entry, so a batch must be
a transaction. LangGraph's `SqliteStore.batch` commits in a `finally` (a failure half-way keeps the writes made
so far) and `PostgresStore.batch` pipelines on an autocommit connection (what was sent is committed). The
stores here roll the whole batch back on any error instead. They also send a batch's writes in chunks of
`PUT_CHUNK` items, so one batch can write any number of them: SQLite and PostgreSQL cap the variables of
one statement (an import of 60,000 items is one batch).

A batch may also hold `Unchanged` conditions (`graph.memory.conditions`) next to its puts, one for each item it writes: the item must
still hold the value the writer read. They are checked in the batch's own transaction, before its writes,
and hold until it commits (SQLite: the write lock, taken when the transaction begins; PostgreSQL: the
transaction's snapshot at REPEATABLE READ, see `graph.backends.atomic_postgres`). If one does not hold, the
batch writes nothing and raises `ConflictError`. Batches without conditions are LangGraph's, unchanged, and
so is the rest of the public store API.

The stores also keep the memory change log (`graph.backends.collection_changes`) and read the history through an
index of their own (`graph.backends.history_sql`), each in its own SQL dialect.
"""

import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from langgraph.store.base import Op, PutOp, Result
from langgraph.store.sqlite import SqliteStore

from graph.backends import list_index
from graph.backends.collection_changes import (
    FIRST_LOGGED_PREFIX,
    FORGET_LOG,
    FORGET_ROWS,
    FORGETS,
    FORGOTTEN_TABLES,
    MIGRATIONS,
    TABLE,
    UNLOGGED_PREFIX,
    VECTORS,
    CollectionChangeLog,
)
from graph.backends.collection_sql import KIND, MEMORY, VERSION, Dialect, memory_statement, statement_parameters
from graph.backends.history_sql import HISTORY_PREFIX, INDEX, PRUNED, HistorySql, history_prefix
from graph.backends.langgraph_private import CursorHook, PutsHook
from graph.backends.list_index import ListIndexed
from graph.backends.sqlite_errors import operational_error
from graph.memory.change_log import Erasure
from graph.memory.conditions import ConflictError, Unchanged
from graph.memory.kinds import MemoryKind

# Items per statement: 5 variables each stay under 999, the smallest cap SQLite builds use (PostgreSQL: 65,535).
PUT_CHUNK = 150


def prefix_of(namespace: tuple[str, ...]) -> str:
    """A namespace as LangGraph's SQL stores write it in the `prefix` column."""
    return ".".join(namespace)


class ConditionalBatches:
    """Mixin for a LangGraph store: `batch` takes `Unchanged` conditions beside its puts (see the module docstring).

    A store class supplies `_checking_cursor` (a transaction in which what was checked holds until the commit)
    and `_stored_values` (what the named items hold, read on that cursor).
    """

    checks_conditions = True

    def batch(self, ops: Sequence[Op | Unchanged]) -> list[Result]:
        """Run the batch; with conditions, write its puts only if every condition holds, else raise `ConflictError`."""
        ops = list(ops)
        conditions = [op for op in ops if isinstance(op, Unchanged)]
        if not conditions:
            return super().batch(ops)
        puts = [(index, op) for index, op in enumerate(ops) if isinstance(op, PutOp)]
        if len(puts) + len(conditions) != len(ops):
            raise TypeError("a batch with conditions may only hold puts besides them")
        if {(c.namespace, c.key) for c in conditions} - {(op.namespace, op.key) for _, op in puts}:
            raise TypeError("a batch's conditions may only name items it writes")
        with self._checking_cursor(conditions) as cur:
            stored = self._stored_values(conditions, cur)
            failed = [c for c in conditions if stored.get((prefix_of(c.namespace), c.key)) != c.value]
            if failed:
                raise ConflictError(failed)
            self.write_puts(puts, cur)
        return [None] * len(ops)

    def _checking_cursor(self, conditions: Sequence[Unchanged]) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _stored_values(self, conditions: Sequence[Unchanged], cur: Any) -> dict[tuple[str, str], Any]:
        raise NotImplementedError


class ChunkedPuts(PutsHook):
    """Mixin for a LangGraph store: write a batch's puts `PUT_CHUNK` at a time, in order, on one cursor."""

    def write_puts(self, put_ops: Sequence[tuple[int, PutOp]], cur: Any) -> None:
        """Write the puts in chunks of `PUT_CHUNK`, each the way LangGraph's store does."""
        for start in range(0, len(put_ops), PUT_CHUNK):
            super().write_puts(put_ops[start : start + PUT_CHUNK], cur)


# A user's history rows, for the history index (a partial index: the query names its condition too).
_SQLITE_HISTORY = f"substr(prefix, 1, {len(HISTORY_PREFIX)}) = '{HISTORY_PREFIX}'"
_SQLITE_HISTORY_ORDER = "json_extract(value, '$.time') DESC, json_extract(value, '$.order') DESC, key DESC"
# The history rows retention deletes: beyond the newest :keep of their user, or dated before :cutoff.
_SQLITE_PRUNED_ROWS = f"""SELECT prefix, key FROM (
    SELECT prefix, key, json_extract(value, '$.time') AS time,
    ROW_NUMBER() OVER (PARTITION BY prefix ORDER BY {_SQLITE_HISTORY_ORDER}) AS rank
    FROM store WHERE {_SQLITE_HISTORY}
) WHERE rank > :keep OR time < :cutoff"""


class AtomicSqliteStore(HistorySql, ListIndexed, CollectionChangeLog, ConditionalBatches, ChunkedPuts, CursorHook, SqliteStore):
    """A `SqliteStore` whose batches commit when they succeed and roll back when anything in them fails, with the
    memory change log and the history index in SQLite's dialect (`graph.backends.collection_changes`,
    `graph.backends.history_sql`)."""

    # The log stamps a row with a number that grows with every write: INSERT OR REPLACE gives the (prefix, key)
    # a new, higher `seq` (AUTOINCREMENT never reuses one).
    CHANGE_LOG_MIGRATIONS = (
        (
            f"""CREATE TABLE IF NOT EXISTS {TABLE} (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, prefix TEXT NOT NULL, key TEXT NOT NULL, UNIQUE (prefix, key)
)""",
            f"CREATE INDEX IF NOT EXISTS {TABLE}_since ON {TABLE} (prefix, seq)",
            f"CREATE TABLE IF NOT EXISTS {FORGETS} (id INTEGER PRIMARY KEY AUTOINCREMENT)",
            *(
                f"""CREATE TRIGGER IF NOT EXISTS {TABLE}_{event} AFTER {event} ON store
WHEN substr({row}.prefix, 1, {len(FIRST_LOGGED_PREFIX)}) = '{FIRST_LOGGED_PREFIX}'
BEGIN
    INSERT OR REPLACE INTO {TABLE} (prefix, key) VALUES ({row}.prefix, {row}.key);
END"""
                for event, row in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD"))
            ),
        ),
        # Every collection kind is read by its changes: log every namespace but the history.
        tuple(
            statement
            for event, row in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD"))
            for statement in (
                f"DROP TRIGGER IF EXISTS {TABLE}_{event}",
                f"""CREATE TRIGGER {TABLE}_{event} AFTER {event} ON store
WHEN substr({row}.prefix, 1, {len(UNLOGGED_PREFIX)}) <> '{UNLOGGED_PREFIX}'
BEGIN
    INSERT OR REPLACE INTO {TABLE} (prefix, key) VALUES ({row}.prefix, {row}.key);
END""",
            )
        ),
        (
            f"""CREATE INDEX IF NOT EXISTS {INDEX} ON store
(prefix, json_extract(value, '$.time'), json_extract(value, '$.order'), key) WHERE {_SQLITE_HISTORY}""",
            f"CREATE TABLE IF NOT EXISTS {PRUNED} (prefix TEXT PRIMARY KEY, pruned INTEGER NOT NULL)",
        ),
        list_index.SQLITE_MIGRATION,
    )
    HISTORY_NEWEST = f"""SELECT key, value FROM store WHERE {_SQLITE_HISTORY} AND prefix = :prefix
ORDER BY {_SQLITE_HISTORY_ORDER} LIMIT :limit OFFSET :offset"""
    HISTORY_COUNT = f"""SELECT (SELECT count(*) FROM store WHERE {_SQLITE_HISTORY} AND prefix = :prefix),
(SELECT coalesce(max(pruned), 0) FROM {PRUNED} WHERE prefix = :prefix)"""
    HISTORY_IDS = """SELECT key FROM store WHERE prefix = :prefix AND key >= :start AND key < :end
ORDER BY key LIMIT :limit"""
    CHANGE_LOG_BACKFILL = f"""INSERT OR IGNORE INTO {TABLE} (prefix, key)
SELECT prefix, key FROM store WHERE substr(prefix, 1, {len(UNLOGGED_PREFIX)}) <> '{UNLOGGED_PREFIX}'"""
    CHANGE_LOG_PRESENT = f"""(SELECT count(*) = 5 FROM sqlite_master
WHERE (type = 'table' AND name IN ('{TABLE}', '{FORGETS}'))
OR (type = 'trigger' AND name IN ('{TABLE}_INSERT', '{TABLE}_UPDATE', '{TABLE}_DELETE')))"""
    # A restore through SQLite's backup API or from an SQL dump changes the schema version.
    CHANGE_LOG_IDENTITY = "(SELECT schema_version FROM pragma_schema_version)"
    MEMORY_DIALECT = Dialect(
        parameter=":{}", log=TABLE, version="c.seq", value="s.value", plain_value="value", time_text="{column}",
        epoch="CAST(strftime('%s', {column}) AS INTEGER)", live="", since="c.seq > {seen}", first="{seen} = -1",
        forgets="coalesce(max(id), 0)", forgets_table=FORGETS, identity=CHANGE_LOG_IDENTITY,
        # The list's newest log number, gone documents' included (a first read leaves those out): the next mark.
        per_collection=f"SELECT 'newest', '{{name}}', NULL, max(seq), NULL, NULL, NULL, NULL, NULL FROM {TABLE} "
        "WHERE prefix = {prefix}",
    )

    def reinstall_change_log(self) -> None:
        """Install the log again on a store whose table was reset (a restore), and index its lists again."""
        super().reinstall_change_log()
        self.reindex_lists()

    def list_index_dialect(self) -> list_index.ListIndexDialect:
        """The list index in SQLite's SQL (`graph.backends.list_index`)."""
        return list_index.SQLITE

    def _list_index_cursor(self) -> AbstractContextManager[sqlite3.Cursor]:
        return self.sql_cursor(begin="BEGIN IMMEDIATE")

    def _head_rows(self, statement: str, parameters: Mapping[str, Any]) -> list[tuple]:
        with self.sql_cursor(transaction=False) as cur:
            cur.execute(statement, parameters)
            return cur.fetchall()

    @contextmanager
    def sql_cursor(self, *, transaction: bool = True, begin: str = "BEGIN") -> Iterator[sqlite3.Cursor]:
        """LangGraph's cursor outside a transaction; in one, a transaction begun with `begin` that commits when the
        block succeeds and rolls back when anything in it fails."""
        if not transaction:
            with super().sql_cursor(transaction=False) as cur:
                yield cur
            return
        if not self.is_setup:
            self.setup()
        with self.lock:
            self.conn.execute(begin)
            cur = self.conn.cursor()
            try:
                yield cur
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            else:
                self.conn.execute("COMMIT")
            finally:
                cur.close()

    def _checking_cursor(self, conditions: Sequence[Unchanged]) -> AbstractContextManager[sqlite3.Cursor]:
        # The write lock from the start: a deferred transaction that read first could not write after another
        # connection's commit (SQLITE_BUSY_SNAPSHOT), and no other writer can commit between check and write.
        return self.sql_cursor(begin="BEGIN IMMEDIATE")

    def _stored_values(self, conditions: Sequence[Unchanged], cur: sqlite3.Cursor) -> dict[tuple[str, str], Any]:
        stored = {}
        for start in range(0, len(conditions), PUT_CHUNK):
            chunk = conditions[start : start + PUT_CHUNK]
            rows = ",".join(["(?, ?)"] * len(chunk))
            params = [part for c in chunk for part in (prefix_of(c.namespace), c.key)]
            cur.execute(
                f"WITH wanted(prefix, key) AS (VALUES {rows}) "
                "SELECT s.prefix, s.key, s.value FROM wanted JOIN store AS s ON s.prefix = wanted.prefix AND s.key = wanted.key",
                params,
            )
            stored.update({(prefix, key): json.loads(value) for prefix, key, value in cur.fetchall()})
        return stored

    def install_change_log(self) -> None:
        """Give the set-up store's database the change log and its triggers, log the memory rows it lacks, and read
        the store through the log from now on."""
        with self.sql_cursor(begin="BEGIN IMMEDIATE") as cur:
            cur.execute(f"CREATE TABLE IF NOT EXISTS {MIGRATIONS} (v INTEGER PRIMARY KEY)")
            cur.execute(f"SELECT {self.CHANGE_LOG_PRESENT}, (SELECT coalesce(max(v), -1) FROM {MIGRATIONS})")
            for version, statements in self._pending_migrations(*cur.fetchone()):
                for statement in statements:
                    cur.execute(statement)
                cur.execute(f"INSERT OR IGNORE INTO {MIGRATIONS} (v) VALUES (?)", (version,))
            cur.execute(self.CHANGE_LOG_BACKFILL)
        self.change_log_installed = True

    def change_log_present(self) -> bool:
        """Whether the database has the change log's tables and triggers (a restore may have taken them)."""
        with self.sql_cursor(transaction=False) as cur:
            cur.execute(f"SELECT {self.CHANGE_LOG_PRESENT}")
            return bool(cur.fetchone()[0])

    def forget_user_items(self, user_id: str, namespaces: Sequence[tuple[str, ...]]) -> dict[str, int]:
        """Delete every row of the user's `namespaces` (embeddings, list-index rows, store items, then log rows) and
        their count of pruned history in one transaction (SQLite lets one writer at a time), and tell every reader
        to read afresh; returns the rows deleted, by table."""
        in_namespaces = "prefix IN (SELECT value FROM json_each(:prefixes))"
        prefixes = {"prefixes": json.dumps(sorted({prefix_of(ns) for ns in namespaces}))}
        rows = {}
        with self.sql_cursor() as cur:
            cur.execute(f"INSERT INTO {FORGETS} DEFAULT VALUES")  # a write first: the transaction is the writer
            cur.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            present = {name for (name,) in cur.fetchall()}
            for table in (table for table in FORGOTTEN_TABLES if table in present):
                cur.execute(FORGET_ROWS.format(table=table, prefixes=in_namespaces), prefixes)
                rows[table] = cur.rowcount
            cur.execute(FORGET_LOG.format(prefixes=in_namespaces), prefixes)
            rows[TABLE] = cur.rowcount
            cur.execute(f"DELETE FROM {PRUNED} WHERE prefix = ?", (history_prefix(user_id),))
            rows[PRUNED] = cur.rowcount
        return rows

    def erase_deleted(self, tables: Sequence[str]) -> Erasure:
        """Rebuild the database file (every one of `tables` is in it) from its remaining rows, so that no free page
        and no free space in a page keeps what was deleted — also what was freed before `secure_delete` was on, or
        by programs that do not turn it on — then copy the write-ahead log into it and truncate the log to nothing.

        The rebuild waits for other writers (the busy timeout) and the truncation for other readers; whichever did
        not happen is said in `kept`, with what still holds copies until when.
        """
        done, kept = [], []
        with self.lock:
            name = Path(self.conn.execute("PRAGMA database_list").fetchone()[2]).name
            try:
                self.conn.execute("VACUUM")
                done.append(f"{name} was rebuilt from its remaining rows (VACUUM): no free space in it holds deleted data.")
            except operational_error(self.conn) as error:  # busy, full, unreadable; a damaged file raises
                kept.append(
                    f"{name} could not be rebuilt now ({error}): the rows just deleted were overwritten with zeros, but "
                    "space freed before (by an earlier version of task-maistro or another program) may still hold "
                    "earlier copies of them; forget the user again to rebuild it."
                )
            busy = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        if busy:
            kept.append(
                f"Another connection kept reading the database, so its write-ahead log ({name}-wal) could not be emptied "
                f"and {name} may not hold the erased pages yet: both can keep copies of the deleted rows until SQLite "
                "checkpoints the log after that reader is done and writes over it, or the last process using the "
                "database closes it (which deletes the log); forget the user again to empty it now."
            )
        else:
            done.append(f"{name}-wal, its write-ahead log, was copied into it and truncated to nothing.")
        return Erasure(tuple(done), tuple(kept))

    def drop_orphan_embeddings(self) -> int:
        """Delete the embeddings whose store row is gone, which deletes made without foreign keys left behind
        (LangGraph's own store, and this project's before `graph.backends.sqlite.connect` turned them on); returns
        how many."""
        with self.sql_cursor(begin="BEGIN IMMEDIATE") as cur:
            cur.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", (VECTORS,))
            if not cur.fetchone()[0]:
                return 0
            cur.execute(
                f"""DELETE FROM {VECTORS} WHERE NOT EXISTS
(SELECT 1 FROM store WHERE store.prefix = {VECTORS}.prefix AND store.key = {VECTORS}.key)"""
            )
            return cur.rowcount

    def _history_rows(self, statement: str, parameters: dict[str, Any]) -> list[tuple]:
        with self.sql_cursor(transaction=False) as cur:
            cur.execute(statement, parameters)
            return cur.fetchall()

    def _prune_history(self, keep: int, cutoff: str) -> None:
        with self.sql_cursor(begin="BEGIN IMMEDIATE") as cur:
            cur.execute("CREATE TEMP TABLE IF NOT EXISTS maistro_history_doomed (prefix TEXT, key TEXT)")
            cur.execute("DELETE FROM maistro_history_doomed")
            cur.execute(f"INSERT INTO maistro_history_doomed {_SQLITE_PRUNED_ROWS}", {"keep": keep, "cutoff": cutoff})
            cur.execute(
                f"""INSERT INTO {PRUNED} (prefix, pruned) SELECT prefix, count(*) FROM maistro_history_doomed
WHERE true GROUP BY prefix ON CONFLICT (prefix) DO UPDATE SET pruned = pruned + excluded.pruned"""
            )
            cur.execute("DELETE FROM store WHERE (prefix, key) IN (SELECT prefix, key FROM maistro_history_doomed)")

    def _changed_rows(
        self,
        user_id: str,
        collections: Sequence[MemoryKind],
        documents: Sequence[MemoryKind],
        positions: Mapping[str, Any],
        stored: Sequence[tuple[tuple[str, ...], str]],
    ) -> tuple[list[tuple], dict[str, Any]]:
        seen = {kind.name: positions.get(kind.name, -1) for kind in collections}
        names = (tuple(kind.name for kind in collections), tuple(kind.name for kind in documents))
        parameters = statement_parameters(user_id, collections, documents, stored)
        parameters.update({f"seen{n}": seen[kind.name] for n, kind in enumerate(collections)})
        with self.sql_cursor(transaction=False) as cur:
            cur.execute(memory_statement(self.MEMORY_DIALECT, *names, len(stored)), parameters)
            rows = cur.fetchall()
        newest = {
            name: max((row[VERSION] for row in rows if row[KIND] in ("changed", "newest") and row[MEMORY] == name
                       and row[VERSION] is not None), default=last)
            for name, last in seen.items()
        }
        return rows, newest
