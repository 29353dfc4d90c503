"""The history reads of `graph.backends.history_sql` on LangGraph's own PostgreSQL stores (Aegra's server store)."""

import asyncio
from typing import Any

from psycopg.rows import tuple_row

from graph.backends.atomic_postgres import AtomicPostgresStore
from graph.backends.history_sql import HistorySql


class PostgresServerHistory(HistorySql):
    """The PostgreSQL history statements of `AtomicPostgresStore`, run on LangGraph's own `PostgresStore` or
    `AsyncPostgresStore` (Aegra's server store): the same `store` table, and the history index once a `maistro`
    command has opened that database (without it, PostgreSQL still sorts the user's rows itself and sends only
    the page). An async store's statements run on its event loop, from the caller's (worker) thread.
    Retention runs in this project's stores only: a server's store has no pruned counts."""

    change_log_installed = True
    HISTORY_NEWEST = AtomicPostgresStore.HISTORY_NEWEST
    HISTORY_COUNT = AtomicPostgresStore.HISTORY_STORED_COUNT
    HISTORY_IDS = AtomicPostgresStore.HISTORY_IDS

    def __init__(self, store: Any) -> None:
        self.store = store

    def _history_rows(self, statement: str, parameters: dict[str, Any]) -> list[tuple]:
        if not hasattr(self.store, "loop"):
            with self.store._cursor() as cur:
                cur.row_factory = tuple_row
                cur.execute(statement, parameters)
                return cur.fetchall()
        return asyncio.run_coroutine_threadsafe(self._rows_async(statement, parameters), self.store.loop).result()

    async def _rows_async(self, statement: str, parameters: dict[str, Any]) -> list[tuple]:
        from langgraph.checkpoint.postgres import _ainternal

        async with _ainternal.get_connection(self.store.conn) as conn, conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(statement, parameters)
            return await cur.fetchall()
