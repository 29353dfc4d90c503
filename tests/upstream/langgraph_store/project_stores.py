"""The stores the project opens (`graph.backends.sqlite.open_sqlite`, `graph.backends.postgres.open_postgres`),
built the way LangGraph's store tests build theirs: `from_conn_string(...)`, then `setup()`."""

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from graph.backends.atomic import AtomicSqliteStore
from graph.backends.atomic_postgres import AtomicPostgresStore
from graph.backends.sqlite import connect, sqlite_with_extensions


class ProjectSqliteStore(AtomicSqliteStore):
    """`AtomicSqliteStore` on the project's SQLite connection, with the ToDo change log installed by `setup()`."""

    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str, **kwargs: Any) -> Iterator["ProjectSqliteStore"]:
        """A store on a connection opened as `open_sqlite` opens it (extensions loadable when indexed)."""
        driver = sqlite_with_extensions() if kwargs.get("index") else sqlite3
        conn = connect(conn_string, autocommit=True, driver=driver)
        try:
            yield cls(conn, **kwargs)
        finally:
            conn.close()

    def setup(self) -> None:
        """LangGraph's tables, then the project's change log and triggers."""
        super().setup()
        self.install_change_log()


class ProjectPostgresStore(AtomicPostgresStore):
    """`AtomicPostgresStore` with the ToDo change log installed by `setup()`."""

    def setup(self) -> None:
        """LangGraph's tables, then the project's change log and triggers."""
        super().setup()
        self.install_change_log()
