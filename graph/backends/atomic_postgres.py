"""The PostgreSQL store whose batches are transactions (see `graph.backends.atomic`); needs the postgres extra."""

import functools
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from langgraph.store.postgres import PostgresStore
from psycopg import Cursor, IsolationLevel, sql
from psycopg.errors import DeadlockDetected, SerializationFailure
from psycopg.rows import dict_row, tuple_row

from graph.backends import history_postgres, list_index
from graph.backends.atomic import ChunkedPuts, ConditionalBatches, prefix_of
from graph.backends.collection_changes import (
    FIRST_LOGGED_PREFIX,
    FORGET_LOG,
    FORGET_ROWS,
    FORGETS,
    FORGOTTEN_TABLES,
    MIGRATIONS,
    TABLE,
    UNLOGGED_PREFIX,
    CollectionChangeLog,
)
from graph.backends.collection_sql import CREATED_AT, KIND, VERSION, Dialect, memory_statement, statement_parameters
from graph.backends.history_sql import PRUNED, HistorySql, history_prefix
from graph.backends.langgraph_private import CursorHook, pg_connection
from graph.backends.list_index import ListIndexed
from graph.memory.change_log import Erasure
from graph.memory.conditions import ConflictError, Unchanged
from graph.memory.kinds import MemoryKind

# What no client of PostgreSQL can erase.
WAL_KEPT = (
    "PostgreSQL's write-ahead log (pg_wal in the server's data directory) still holds the deleted rows, as it holds "
    "every change, until the server's checkpoints recycle those segments and later changes write over them (or, "
    "with wal_recycle off, remove them); WAL archives, replicas and backups keep copies of their own."
)
_FILE = "SELECT pg_relation_filenode(to_regclass(%s)) AS node"


def not_rewritten(tables: Sequence[str]) -> str:
    """What stays when PostgreSQL skipped rewriting `tables` (VACUUM FULL needs a table's owner), and what to run."""
    names = ", ".join(tables)
    return (
        f"Not rewritten, as only a table's owner may run VACUUM FULL on it: {names}. The deleted rows stay in their "
        f"files, in space PostgreSQL reuses later, until their owner runs VACUUM FULL {names}."
    )

# Serialises table setup across processes starting at once on a fresh database.
SETUP_LOCK = 0x6D61697374726F

_STORED = """SELECT s.prefix, s.key, s.value::text AS value
FROM unnest(%s::text[], %s::text[]) AS wanted(prefix, key) JOIN store AS s USING (prefix, key)"""


@contextmanager
def setup_lock(conn: Any) -> Iterator[None]:
    """Hold the lock that serialises table setup across processes on the connection `conn` (autocommit)."""
    # Poll instead of blocking in pg_advisory_lock: a blocked statement holds a snapshot that the
    # migrations' CREATE INDEX CONCURRENTLY in the lock holder would wait for, a deadlock.
    while not conn.execute("SELECT pg_try_advisory_lock(%s) AS locked", (SETUP_LOCK,)).fetchone()["locked"]:
        time.sleep(0.05)
    try:
        yield
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK,))


class AtomicPostgresStore(HistorySql, ListIndexed, CollectionChangeLog, ConditionalBatches, ChunkedPuts, CursorHook, PostgresStore):
    """A `PostgresStore` whose batches commit when they succeed and roll back when anything in them fails, with the
    memory change log and the history index in PostgreSQL's dialect (`graph.backends.collection_changes`,
    `graph.backends.history_postgres`).

    A batch with conditions runs at REPEATABLE READ: the conditions are read in its snapshot, and PostgreSQL
    refuses (serialization failure) to write any item of the batch that another transaction changed,
    created or deleted since that snapshot, so the check holds until the commit; the refusal becomes
    `ConflictError`, nothing written.
    """

    # pg_current_xact_id() and xid8, which the change log is stamped with, came in PostgreSQL 13.
    OLDEST_SERVER = 130000
    # The log stamps a row with the writing transaction's id. PostgreSQL 13 has no CREATE OR REPLACE TRIGGER:
    # a trigger is dropped and created again, in the migration's transaction.
    CHANGE_LOG_MIGRATIONS = (
        (
            f"CREATE TABLE IF NOT EXISTS {TABLE} (prefix text NOT NULL, key text NOT NULL, xid xid8 NOT NULL, PRIMARY KEY (prefix, key))",
            f"CREATE INDEX IF NOT EXISTS {TABLE}_since ON {TABLE} (prefix, xid)",
            f"CREATE TABLE IF NOT EXISTS {FORGETS} (id bigserial PRIMARY KEY)",
            f"""CREATE OR REPLACE FUNCTION {TABLE}_log() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed store%ROWTYPE;
BEGIN
    IF TG_OP = 'DELETE' THEN changed := OLD; ELSE changed := NEW; END IF;
    INSERT INTO {TABLE} (prefix, key, xid) VALUES (changed.prefix, changed.key, pg_current_xact_id())
    ON CONFLICT (prefix, key) DO UPDATE SET xid = EXCLUDED.xid;
    RETURN NULL;
END
$$""",
            f"DROP TRIGGER IF EXISTS {TABLE}_written ON store",
            f"""CREATE TRIGGER {TABLE}_written AFTER INSERT OR UPDATE ON store FOR EACH ROW
WHEN (left(NEW.prefix, {len(FIRST_LOGGED_PREFIX)}) = '{FIRST_LOGGED_PREFIX}') EXECUTE FUNCTION {TABLE}_log()""",
            f"DROP TRIGGER IF EXISTS {TABLE}_deleted ON store",
            f"""CREATE TRIGGER {TABLE}_deleted AFTER DELETE ON store FOR EACH ROW
WHEN (left(OLD.prefix, {len(FIRST_LOGGED_PREFIX)}) = '{FIRST_LOGGED_PREFIX}') EXECUTE FUNCTION {TABLE}_log()""",
        ),
        # Every collection kind is read by its changes: log every namespace but the history.
        (
            f"DROP TRIGGER IF EXISTS {TABLE}_written ON store",
            f"""CREATE TRIGGER {TABLE}_written AFTER INSERT OR UPDATE ON store FOR EACH ROW
WHEN (left(NEW.prefix, {len(UNLOGGED_PREFIX)}) <> '{UNLOGGED_PREFIX}') EXECUTE FUNCTION {TABLE}_log()""",
            f"DROP TRIGGER IF EXISTS {TABLE}_deleted ON store",
            f"""CREATE TRIGGER {TABLE}_deleted AFTER DELETE ON store FOR EACH ROW
WHEN (left(OLD.prefix, {len(UNLOGGED_PREFIX)}) <> '{UNLOGGED_PREFIX}') EXECUTE FUNCTION {TABLE}_log()""",
        ),
        history_postgres.MIGRATION,
        list_index.POSTGRES_MIGRATION,
    )
    HISTORY_NEWEST, HISTORY_COUNT, HISTORY_IDS = history_postgres.NEWEST, history_postgres.COUNT, history_postgres.IDS
    CHANGE_LOG_BACKFILL = f"""INSERT INTO {TABLE} (prefix, key, xid)
SELECT prefix, key, pg_current_xact_id() FROM store WHERE left(prefix, {len(UNLOGGED_PREFIX)}) <> '{UNLOGGED_PREFIX}'
ON CONFLICT (prefix, key) DO NOTHING"""
    CHANGE_LOG_PRESENT = f"""(to_regclass('{TABLE}') IS NOT NULL AND to_regclass('{FORGETS}') IS NOT NULL
AND (SELECT count(*) FROM pg_trigger WHERE tgrelid = to_regclass('store')
     AND tgname IN ('{TABLE}_written', '{TABLE}_deleted')) = 2)"""
    # TRUNCATE and a restore give a table new files; another database or server has another oid or identifier.
    CHANGE_LOG_IDENTITY = f"""concat_ws('/', (SELECT oid FROM pg_database WHERE datname = current_database()),
    pg_relation_filenode('store'), pg_relation_filenode('{TABLE}'), pg_relation_filenode('{FORGETS}'),
    (SELECT system_identifier FROM pg_control_system()))"""
    _EXPIRED = """SELECT 'expired', '{name}', key, NULL, NULL, NULL, NULL, NULL, NULL FROM store
WHERE prefix = {prefix} AND expires_at > %(expired_after{n})s::timestamptz AND expires_at <= NOW()"""
    _MARK = """SELECT 'mark', NULL, NULL, pg_snapshot_xmin(pg_current_snapshot())::text, NULL, to_json(NOW()) #>> '{}',
    NULL, NULL, NULL"""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Without pipeline mode, `PostgresStore` runs each batch inside `conn.transaction()` on one connection.
        self.supports_pipeline = False

    @contextmanager
    def _checking_cursor(self, conditions: Sequence[Unchanged]) -> Iterator[Cursor]:
        with pg_connection(self.conn) as conn, self.lock:
            conn.isolation_level = IsolationLevel.REPEATABLE_READ
            try:
                with conn.transaction(), conn.cursor(binary=True, row_factory=dict_row) as cur:
                    yield cur
            except (SerializationFailure, DeadlockDetected) as error:
                raise ConflictError(conditions) from error
            finally:
                conn.isolation_level = None

    def _stored_values(self, conditions: Sequence[Unchanged], cur: Cursor) -> dict[tuple[str, str], Any]:
        cur.execute(_STORED, ([prefix_of(c.namespace) for c in conditions], [c.key for c in conditions]))
        return {(row["prefix"], row["key"]): json.loads(row["value"]) for row in cur.fetchall()}

    @classmethod
    @functools.cache
    def memory_dialect(cls, hide_expired: bool) -> Dialect:
        """How the one-statement read (`graph.backends.collection_sql`) is written here: values as JSON text; expired rows
        hidden (and reported) when the store hides them."""
        return Dialect(
            parameter="%({})s", log=TABLE, version="c.xid::text", value="s.value::text", plain_value="value::text",
            time_text="to_json({column}) #>> '{{}}'", epoch="extract(epoch FROM {column})::float8",
            live="AND ({column}expires_at IS NULL OR {column}expires_at > NOW())" if hide_expired else "",
            since="c.xid >= {seen}::xid8", first="{seen}::xid8 = '0'::xid8", forgets="coalesce(max(id), 0)::text", forgets_table=FORGETS,
            identity=cls.CHANGE_LOG_IDENTITY, per_collection=cls._EXPIRED if hide_expired else "", tail=cls._MARK,
        )

    def list_index_dialect(self) -> list_index.ListIndexDialect:
        """The list index in PostgreSQL's SQL (`graph.backends.list_index`)."""
        return list_index.postgres_dialect(bool((self.ttl_config or {}).get("omit_expired")))

    def _list_index_cursor(self) -> AbstractContextManager[Cursor]:
        return self.sql_cursor(pipeline=True)  # one transaction (the store has no pipeline mode)

    def _head_rows(self, statement: str, parameters: Mapping[str, Any]) -> list[tuple]:
        with self.sql_cursor() as cur:
            cur.row_factory = tuple_row
            cur.execute(statement, parameters)
            return cur.fetchall()

    def install_change_log(self) -> None:
        """Give the set-up store's database the change log and its triggers, log the memory rows it lacks, and read
        the store through the log from now on. The caller holds the setup lock (`setup_lock`)."""
        with self.sql_cursor(pipeline=True) as cur:  # one transaction (the store has no pipeline mode)
            cur.execute("SHOW server_version_num")
            server = int(cur.fetchone()["server_version_num"])
            if server < self.OLDEST_SERVER:
                raise RuntimeError(f"task-maistro needs PostgreSQL 13 or later; this server is version {server // 10000}.")
            cur.execute(f"CREATE TABLE IF NOT EXISTS {MIGRATIONS} (v integer PRIMARY KEY)", prepare=False)
            cur.execute(f"SELECT {self.CHANGE_LOG_PRESENT} AS present, (SELECT coalesce(max(v), -1) FROM {MIGRATIONS}) AS v")
            found = cur.fetchone()
            for version, statements in self._pending_migrations(found["present"], found["v"]):
                for statement in statements:
                    cur.execute(statement, prepare=False)
                cur.execute(f"INSERT INTO {MIGRATIONS} (v) VALUES (%s) ON CONFLICT DO NOTHING", (version,))
            cur.execute(self.CHANGE_LOG_BACKFILL, prepare=False)
        self.change_log_installed = True

    def reinstall_change_log(self) -> None:
        """Install the log again on a store whose table was reset, under the setup lock, and index its lists again."""
        with self.sql_cursor() as cur, setup_lock(cur.connection):
            self.install_change_log()
            self.reindex_lists()

    def change_log_present(self) -> bool:
        """Whether the database has the change log's tables and triggers (a restore may have taken them)."""
        with self.sql_cursor() as cur:
            cur.execute(f"SELECT {self.CHANGE_LOG_PRESENT} AS present")
            return bool(cur.fetchone()["present"])

    def forget_user_items(self, user_id: str, namespaces: Sequence[tuple[str, ...]]) -> dict[str, int]:
        """Delete every row of the user's `namespaces` (embeddings, list-index rows, store items, then log rows) and
        their count of pruned history in one transaction, which locks the store table against writes first (for the
        few milliseconds it lasts), and tell every reader to read afresh; returns the rows deleted, by table."""
        in_namespaces = "prefix = ANY(%(prefixes)s::text[])"
        prefixes = {"prefixes": sorted({prefix_of(ns) for ns in namespaces})}
        rows = {}
        with self.sql_cursor(pipeline=True) as cur:
            cur.execute("LOCK TABLE store IN SHARE ROW EXCLUSIVE MODE")
            cur.execute(f"INSERT INTO {FORGETS} DEFAULT VALUES")
            for table in FORGOTTEN_TABLES:
                cur.execute("SELECT to_regclass(%s) IS NOT NULL AS present", (table,))
                if not cur.fetchone()["present"]:  # no embeddings: the semantic index was never on
                    continue
                cur.execute(FORGET_ROWS.format(table=table, prefixes=in_namespaces), prefixes)
                rows[table] = cur.rowcount
            cur.execute(FORGET_LOG.format(prefixes=in_namespaces), prefixes)
            rows[TABLE] = cur.rowcount
            cur.execute(f"DELETE FROM {PRUNED} WHERE prefix = %s", (history_prefix(user_id),))
            rows[PRUNED] = cur.rowcount
        return rows

    def erase_deleted(self, tables: Sequence[str]) -> Erasure:
        """Rewrite each of `tables` (this store's and its checkpointer's, in this database) without its dead rows
        (`VACUUM FULL`: new files, the old ones truncated; it locks the table while it runs). Plain VACUUM would only
        mark their space reusable, with their bytes still in it. A table this database user does not own is skipped by
        PostgreSQL, and said in `kept`; so is the write-ahead log (`WAL_KEPT`), which no client can erase."""
        rewritten, skipped = [], []
        with self.sql_cursor() as cur:
            for table in tables:
                cur.execute(_FILE, (table,))
                before = cur.fetchone()["node"]
                if before is None:
                    continue
                cur.execute(sql.SQL("VACUUM FULL {}").format(sql.Identifier(table)), prepare=False)
                cur.execute(_FILE, (table,))
                (rewritten if cur.fetchone()["node"] != before else skipped).append(table)
        done = [f"Rewritten without the deleted rows (VACUUM FULL): {', '.join(rewritten)}."] if rewritten else []
        kept = [not_rewritten(skipped)] if skipped else []
        return Erasure(tuple(done), (*kept, WAL_KEPT))

    def _history_rows(self, statement: str, parameters: dict[str, Any]) -> list[tuple]:
        with self.sql_cursor() as cur:
            cur.row_factory = tuple_row
            cur.execute(statement, parameters)
            return cur.fetchall()

    def _prune_history(self, keep: int, cutoff: str) -> None:
        with self.sql_cursor(pipeline=True) as cur:  # one transaction (the store has no pipeline mode)
            cur.execute(history_postgres.PRUNE, {"keep": keep, "cutoff": cutoff})

    def _changed_rows(
        self,
        user_id: str,
        collections: Sequence[MemoryKind],
        documents: Sequence[MemoryKind],
        positions: Mapping[str, Any],
        stored: Sequence[tuple[tuple[str, ...], str]],
    ) -> tuple[list[tuple], dict[str, Any]]:
        dialect = self.memory_dialect(bool((self.ttl_config or {}).get("omit_expired")))
        names = (tuple(kind.name for kind in collections), tuple(kind.name for kind in documents))
        parameters: dict[str, Any] = statement_parameters(user_id, collections, documents, stored)
        for n, kind in enumerate(collections):
            seen, expired_after = positions.get(kind.name) or ("0", "infinity")
            parameters.update({f"seen{n}": seen, f"expired_after{n}": expired_after})
        with self.sql_cursor() as cur:
            cur.row_factory = tuple_row
            cur.execute(memory_statement(dialect, *names, len(stored)), parameters)
            rows = cur.fetchall()
        mark = next(row for row in rows if row[KIND] == "mark")
        return rows, {kind.name: (mark[VERSION], mark[CREATED_AT]) for kind in collections}
