"""The PostgreSQL store whose batches are transactions (see `graph.backends.atomic`); needs the postgres extra."""

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from langgraph.store.postgres import PostgresStore
from langgraph.store.postgres.base import _pg_internal
from psycopg import Cursor, IsolationLevel
from psycopg.errors import DeadlockDetected, SerializationFailure
from psycopg.rows import dict_row

from graph.backends.atomic import ChunkedPuts, ConditionalBatches, prefix_of
from graph.memory.conditions import ConflictError, Unchanged

_STORED = """SELECT s.prefix, s.key, s.value::text AS value
FROM unnest(%s::text[], %s::text[]) AS wanted(prefix, key) JOIN store AS s USING (prefix, key)"""


class AtomicPostgresStore(ConditionalBatches, ChunkedPuts, PostgresStore):
    """A `PostgresStore` whose batches commit when they succeed and roll back when anything in them fails.

    A batch with conditions runs at REPEATABLE READ: the conditions are read in its snapshot, and PostgreSQL
    refuses (serialization failure) to write any item of the batch that another transaction changed,
    created or deleted since that snapshot, so the check holds until the commit; the refusal becomes
    `ConflictError`, nothing written.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Without pipeline mode, `PostgresStore` runs each batch inside `conn.transaction()` on one connection.
        self.supports_pipeline = False

    @contextmanager
    def _checking_cursor(self, conditions: Sequence[Unchanged]) -> Iterator[Cursor]:
        with _pg_internal.get_connection(self.conn) as conn, self.lock:
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
