"""The history's statements in PostgreSQL's dialect (`graph.backends.history_sql`), for this project's store and for
LangGraph's own PostgreSQL stores, Aegra's server store among them.

`read_langgraph_stores_through_sql` (which `graph.server.platform.server_store` calls on Aegra) lets the history
reader (`graph.memory.history`) read LangGraph's `PostgresStore` and `AsyncPostgresStore` through these
statements: the same `store` table, with the history index and the table of pruned counts (`MIGRATION`), which
Aegra's retention sweep gives the database before the server takes requests (`graph.server.retention`, which
also prunes there). An async store's statements run on its event loop, from the caller's (worker) thread.
"""

import asyncio
from typing import Any

from psycopg.rows import tuple_row

from graph.backends.history_sql import HISTORY_PREFIX, INDEX, PRUNED, HistorySql
from graph.backends.langgraph_private import async_pg_connection, sql_cursor
from graph.memory.history import register_index_finder

# A user's history rows, for the history index (a partial index: the query names its condition too). Times are
# compared byte by byte (COLLATE "C"): a locale's collation may skip the punctuation of an ISO time.
HISTORY_ROWS = f"left(prefix, {len(HISTORY_PREFIX)}) = '{HISTORY_PREFIX}'"
NEWEST_FIRST = """(value->>'time') COLLATE "C" DESC, value->'order' DESC, key DESC"""
MIGRATION = (
    f"""CREATE INDEX IF NOT EXISTS {INDEX} ON store
(prefix, (value->>'time') COLLATE "C", (value->'order'), key) WHERE {HISTORY_ROWS}""",
    f"""CREATE INDEX IF NOT EXISTS {INDEX}_ids ON store (prefix, key COLLATE "C") WHERE {HISTORY_ROWS}""",
    f"CREATE TABLE IF NOT EXISTS {PRUNED} (prefix text PRIMARY KEY, pruned bigint NOT NULL)",
)
NEWEST = f"""SELECT key, value::text FROM store WHERE {HISTORY_ROWS} AND prefix = %(prefix)s
ORDER BY {NEWEST_FIRST} LIMIT %(limit)s OFFSET %(offset)s"""
COUNT = f"""SELECT (SELECT count(*) FROM store WHERE {HISTORY_ROWS} AND prefix = %(prefix)s),
(SELECT coalesce(max(pruned), 0) FROM {PRUNED} WHERE prefix = %(prefix)s)"""
IDS = f"""SELECT key FROM store WHERE {HISTORY_ROWS} AND prefix = %(prefix)s
AND key COLLATE "C" >= %(start)s AND key COLLATE "C" < %(end)s ORDER BY key COLLATE "C" LIMIT %(limit)s"""
# Every user's history rows beyond the newest %(keep)s or dated before %(cutoff)s, deleted and counted.
PRUNE = f"""WITH ranked AS (
    SELECT prefix, key, (value->>'time') COLLATE "C" AS time,
    row_number() OVER (PARTITION BY prefix ORDER BY {NEWEST_FIRST}) AS rank
    FROM store WHERE {HISTORY_ROWS}
), doomed AS (
    DELETE FROM store USING ranked WHERE store.prefix = ranked.prefix AND store.key = ranked.key
    AND (ranked.rank > %(keep)s OR ranked.time < %(cutoff)s)
    RETURNING store.prefix
)
INSERT INTO {PRUNED} (prefix, pruned) SELECT prefix, count(*) FROM doomed GROUP BY prefix
ON CONFLICT (prefix) DO UPDATE SET pruned = {PRUNED}.pruned + EXCLUDED.pruned"""


class PostgresServerHistory(HistorySql):
    """The history statements on LangGraph's own `PostgresStore` or `AsyncPostgresStore` (see the module)."""

    change_log_installed = True
    HISTORY_NEWEST, HISTORY_COUNT, HISTORY_IDS = NEWEST, COUNT, IDS

    def __init__(self, store: Any) -> None:
        self.store = store

    def _history_rows(self, statement: str, parameters: dict[str, Any]) -> list[tuple]:
        if not hasattr(self.store, "loop"):
            with sql_cursor(self.store) as cur:
                cur.row_factory = tuple_row
                cur.execute(statement, parameters)
                return cur.fetchall()
        return asyncio.run_coroutine_threadsafe(self._rows_async(statement, parameters), self.store.loop).result()

    async def _rows_async(self, statement: str, parameters: dict[str, Any]) -> list[tuple]:
        async with async_pg_connection(self.store.conn) as conn, conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(statement, parameters)
            return await cur.fetchall()


def langgraph_postgres_history(store: Any) -> PostgresServerHistory | None:
    """The history statements for LangGraph's own PostgreSQL stores; None for any other store."""
    return PostgresServerHistory(store) if type(store).__module__.startswith("langgraph.store.postgres") else None


def read_langgraph_stores_through_sql() -> None:
    """Have the history reader (`graph.memory.history`) read LangGraph's own PostgreSQL stores with these statements."""
    register_index_finder(langgraph_postgres_history)
