"""The PostgreSQL store whose batches are transactions (see `graph.backends.atomic`); needs the postgres extra."""

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from langgraph.store.postgres import PostgresStore
from psycopg import Cursor

from graph.backends.atomic import ChunkedPuts, ConditionalBatches, Unchanged, keys_by_prefix, prefix_of

# One advisory lock per item, named by its prefix and key (two items whose names hash alike only take turns).
_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"
_STORED = "SELECT key, value::text FROM store WHERE prefix = %s AND key = ANY(%s) ORDER BY key FOR UPDATE"


class AtomicPostgresStore(ConditionalBatches, ChunkedPuts, PostgresStore):
    """A `PostgresStore` whose batches commit when they succeed and roll back when anything in them fails."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Without pipeline mode, `PostgresStore` runs each batch inside `conn.transaction()` on one connection.
        self.supports_pipeline = False

    @contextmanager
    def _checking_cursor(self, conditions: Sequence[Unchanged]) -> Iterator[Cursor]:
        with self._cursor(pipeline=True) as cur:
            # In one order for every writer, so two writers naming the same items never wait for each other in a ring.
            for name in sorted({f"{prefix_of(c.namespace)}.{c.key}" for c in conditions}):
                cur.execute(_LOCK, (name,))
            yield cur

    def _stored_values(self, conditions: Sequence[Unchanged], cur: Cursor) -> dict[tuple[str, str], Any]:
        stored = {}
        for prefix, keys in keys_by_prefix(conditions).items():
            cur.execute(_STORED, (prefix, keys))
            stored.update({(prefix, row["key"]): json.loads(row["value"]) for row in cur.fetchall()})
        return stored
