"""The PostgreSQL store whose batches are transactions (see `graph.backends.atomic`); needs the postgres extra."""

from typing import Any

from langgraph.store.postgres import PostgresStore

from graph.backends.atomic import ChunkedPuts


class AtomicPostgresStore(ChunkedPuts, PostgresStore):
    """A `PostgresStore` whose batches commit when they succeed and roll back when anything in them fails."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Without pipeline mode, `PostgresStore` runs each batch inside `conn.transaction()` on one connection.
        self.supports_pipeline = False
