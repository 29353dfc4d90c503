"""LangGraph's private APIs, named here and nowhere else: every other module uses them through this one.

LangGraph may change or remove any of them in a minor release; tests/project/test_langgraph_private.py checks each one
(that it exists and takes what is passed to it) and names the one that changed.

- `CONFIG_KEY_DURABILITY`: the config key that gives a compiled graph a default durability (`graph.durability`).
- `_cursor` of LangGraph's SQL stores and savers (`SqliteStore`, `PostgresStore`, `PostgresSaver`): the cursor
  their own methods run on. `CursorHook` gives it a public name, `sql_cursor`, that subclasses override and call.
- `_batch_put_ops` of those stores: how `batch` writes its puts. `PutsHook` calls it `write_puts`.
- `get_connection` of `langgraph.store.postgres.base._pg_internal` and `langgraph.checkpoint.postgres._ainternal`:
  a connection out of a connection or a pool.
"""

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any

from langgraph._internal._constants import CONFIG_KEY_DURABILITY

__all__ = ["CONFIG_KEY_DURABILITY", "CursorHook", "PutsHook", "async_pg_connection", "pg_connection", "sql_cursor"]


class CursorHook:
    """Mixin placed just before a LangGraph SQL store or saver in a class's bases: `sql_cursor(**options)` is the
    cursor LangGraph's own methods run on; overriding it changes theirs too, and `super().sql_cursor(...)` reaches
    LangGraph's."""

    def sql_cursor(self, **options: Any) -> AbstractContextManager[Any]:
        """The cursor LangGraph's methods use (`transaction=` for SQLite, `pipeline=` for PostgreSQL)."""
        return super()._cursor(**options)  # type: ignore[misc]

    def _cursor(self, **options: Any) -> AbstractContextManager[Any]:
        return self.sql_cursor(**options)


class PutsHook:
    """Mixin placed just before a LangGraph SQL store in a class's bases: `write_puts(put_ops, cur)` is how its
    `batch` writes puts (`(index, PutOp)` pairs) on a cursor; overriding it changes `batch` too."""

    def write_puts(self, put_ops: Sequence[tuple[int, Any]], cur: Any) -> None:
        """Write the puts on `cur` the way LangGraph's store does."""
        super()._batch_put_ops(put_ops, cur)  # type: ignore[misc]

    def _batch_put_ops(self, put_ops: Sequence[tuple[int, Any]], cur: Any) -> None:
        self.write_puts(put_ops, cur)


def sql_cursor(owner: Any, **options: Any) -> AbstractContextManager[Any]:
    """The cursor of one of LangGraph's own SQL stores or savers (not a subclass with `CursorHook`)."""
    return owner._cursor(**options)


def pg_connection(conn: Any) -> AbstractContextManager[Any]:
    """A PostgreSQL connection from `conn` (a connection, or a pool to take one from), as LangGraph's store takes it."""
    from langgraph.store.postgres.base import _pg_internal

    return _pg_internal.get_connection(conn)


def async_pg_connection(conn: Any) -> AbstractAsyncContextManager[Any]:
    """An async PostgreSQL connection from `conn` (a connection, or a pool), as LangGraph's async stores take it."""
    from langgraph.checkpoint.postgres import _ainternal

    return _ainternal.get_connection(conn)

