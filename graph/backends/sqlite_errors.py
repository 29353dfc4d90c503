"""SQLite's errors as the library a connection comes from raises them: the standard library's `sqlite3`, or
pysqlite3 (which the semantic index needs where `sqlite3` cannot load extensions) with classes of its own."""

import importlib
import sqlite3


def operational_error(conn: sqlite3.Connection) -> type[Exception]:
    """`OperationalError` of the SQLite library `conn` comes from: a busy, full or unreadable database, as opposed to
    a damaged one."""
    return importlib.import_module(type(conn).__module__).OperationalError
