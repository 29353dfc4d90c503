"""The PostgreSQL store whose batches are transactions (see `graph.backends.atomic`); needs the postgres extra."""

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from langgraph.store.postgres import PostgresStore
from psycopg import Cursor

from graph.backends.atomic import ChunkedPuts, ConditionalBatches, Unchanged, prefix_of

# One transaction-level advisory lock per item, named by its prefix and key (two items whose names hash alike
# only take turns), taken in one order by every writer so that two never wait for each other in a ring. A
# statement of its own: the next one's snapshot must be taken once the locks are held, to see what their
# previous holder committed.
_LOCK = """SELECT count(pg_advisory_xact_lock(hashtextextended(name, 0)))
FROM (SELECT DISTINCT name FROM unnest(%s::text[]) AS name ORDER BY name) AS names"""
_STORED = """SELECT prefix, key, value::text AS value FROM store
WHERE (prefix, key) IN (SELECT * FROM unnest(%s::text[], %s::text[])) ORDER BY prefix, key FOR UPDATE"""


class AtomicPostgresStore(ConditionalBatches, ChunkedPuts, PostgresStore):
    """A `PostgresStore` whose batches commit when they succeed and roll back when anything in them fails."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Without pipeline mode, `PostgresStore` runs each batch inside `conn.transaction()` on one connection.
        self.supports_pipeline = False

    @contextmanager
    def _checking_cursor(self, conditions: Sequence[Unchanged]) -> Iterator[Cursor]:
        with self._cursor(pipeline=True) as cur:
            cur.execute(_LOCK, ([f"{prefix_of(c.namespace)}.{c.key}" for c in conditions],))
            yield cur

    def _stored_values(self, conditions: Sequence[Unchanged], cur: Cursor) -> dict[tuple[str, str], Any]:
        cur.execute(_STORED, ([prefix_of(c.namespace) for c in conditions], [c.key for c in conditions]))
        return {(row["prefix"], row["key"]): json.loads(row["value"]) for row in cur.fetchall()}
