"""Store batches that write all of their items or none, however many there are.

Every memory change is one `store.batch([...])` holding the change and its history entry, so a batch must be
a transaction. LangGraph's `SqliteStore.batch` commits in a `finally` (a failure half-way keeps the writes made
so far) and `PostgresStore.batch` pipelines on an autocommit connection (what was sent is committed). The
stores here roll the whole batch back on any error instead. They also send a batch's writes in chunks of
`PUT_CHUNK` items, so one batch can write any number of them: SQLite and PostgreSQL cap the variables of
one statement (an import of 60,000 items is one batch). The public store API is LangGraph's, unchanged.
"""

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from langgraph.store.base import PutOp
from langgraph.store.sqlite import SqliteStore

# Items per statement: 5 variables each stay under 999, the smallest cap SQLite builds use (PostgreSQL: 65,535).
PUT_CHUNK = 150


class ChunkedPuts:
    """Mixin for a LangGraph store: write a batch's puts `PUT_CHUNK` at a time, in order, on one cursor."""

    def _batch_put_ops(self, put_ops: Sequence[tuple[int, PutOp]], cur: Any) -> None:
        for start in range(0, len(put_ops), PUT_CHUNK):
            super()._batch_put_ops(put_ops[start : start + PUT_CHUNK], cur)


class AtomicSqliteStore(ChunkedPuts, SqliteStore):
    """A `SqliteStore` whose batches commit when they succeed and roll back when anything in them fails."""

    @contextmanager
    def _cursor(self, *, transaction: bool = True) -> Iterator[sqlite3.Cursor]:
        if not transaction:
            with super()._cursor(transaction=False) as cur:
                yield cur
            return
        if not self.is_setup:
            self.setup()
        with self.lock:
            self.conn.execute("BEGIN")
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
