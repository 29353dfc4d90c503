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
"""

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from langgraph.store.base import Op, PutOp, Result
from langgraph.store.sqlite import SqliteStore

from graph.memory.conditions import ConflictError, Unchanged

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
            self._batch_put_ops(puts, cur)
        return [None] * len(ops)

    def _checking_cursor(self, conditions: Sequence[Unchanged]) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _stored_values(self, conditions: Sequence[Unchanged], cur: Any) -> dict[tuple[str, str], Any]:
        raise NotImplementedError


class ChunkedPuts:
    """Mixin for a LangGraph store: write a batch's puts `PUT_CHUNK` at a time, in order, on one cursor."""

    def _batch_put_ops(self, put_ops: Sequence[tuple[int, PutOp]], cur: Any) -> None:
        for start in range(0, len(put_ops), PUT_CHUNK):
            super()._batch_put_ops(put_ops[start : start + PUT_CHUNK], cur)


class AtomicSqliteStore(ConditionalBatches, ChunkedPuts, SqliteStore):
    """A `SqliteStore` whose batches commit when they succeed and roll back when anything in them fails."""

    @contextmanager
    def _cursor(self, *, transaction: bool = True, begin: str = "BEGIN") -> Iterator[sqlite3.Cursor]:
        if not transaction:
            with super()._cursor(transaction=False) as cur:
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
        return self._cursor(begin="BEGIN IMMEDIATE")

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
