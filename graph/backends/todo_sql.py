"""A turn's memories in one SQL statement on LangGraph's SQLite and PostgreSQL stores.

The statement returns the user's whole ToDo list (the rows as stored: values are parsed only for items
that changed since the list was last read, see `graph.memory.selection.ListCache`), the profile and the
instructions: one round trip, one pool checkout, no OFFSET paging. Any other store returns None here and
is read through its own API.
"""

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from langgraph.store.base import BaseStore, Item

from graph.memory.store import INSTRUCTIONS, INSTRUCTIONS_KEY, PROFILE, TODO, namespace

# A ToDo row is (kind, key, version, value, created_at, updated_at). The version changes whenever the stored
# row does (SQLite: its rowid, new on every write; PostgreSQL: xmin, the writing transaction); on SQLite
# the value and timestamps come only for rows written after the newest version already known.
_STATEMENT = """
SELECT 'todo' AS kind, key, {version} AS version, {todo_value} AS value, {todo_created} AS created_at,
       {todo_updated} AS updated_at
FROM store WHERE prefix = {todo} {live}
UNION ALL
SELECT * FROM (
    SELECT 'profile', key, NULL, {value}, created_at, updated_at FROM store WHERE prefix = {profile} {live}
    ORDER BY updated_at DESC LIMIT 1
) AS profile
UNION ALL
SELECT 'instructions', key, NULL, {value}, created_at, updated_at FROM store
WHERE prefix = {instructions} AND key = {instructions_key} {live}
"""
SQLITE_STATEMENT = _STATEMENT.format(
    version="rowid", value="value",
    todo_value="CASE WHEN rowid > :seen THEN value END",
    todo_created="CASE WHEN rowid > :seen THEN created_at END",
    todo_updated="CASE WHEN rowid > :seen THEN updated_at END",
    todo=":todo", profile=":profile", instructions=":instructions", instructions_key=":instructions_key", live="",
)
_SQLITE_ROWS = "SELECT 'todo', key, rowid, value, created_at, updated_at FROM store WHERE prefix = ? AND key IN ({keys})"
VERSION, VALUE = 2, 3
KEYS_PER_READ = 500


def postgres_statement(hide_expired: bool) -> str:
    """The statement for PostgreSQL: values as JSON text, expired rows hidden when the store hides them."""
    return _STATEMENT.format(
        version="xmin::text", value="value::text", todo_value="value::text", todo_created="created_at",
        todo_updated="updated_at", todo="%(todo)s", profile="%(profile)s", instructions="%(instructions)s",
        instructions_key="%(instructions_key)s",
        live="AND (expires_at IS NULL OR expires_at > NOW())" if hide_expired else "",
    )


def todo_item(row: tuple, user_id: str) -> Item:
    """A ToDo row (with its value) as a store item."""
    return _item(row, TODO, user_id)


def _item(row: tuple, kind: str, user_id: str) -> Item:
    _, key, _, raw, created_at, updated_at = row
    return Item(
        value=orjson.loads(raw), key=key, namespace=namespace(kind, user_id), created_at=created_at,
        updated_at=updated_at,
    )


@dataclass(frozen=True)
class MemoryRows:
    """What the statement read: the ToDo rows by key, and the profile and instructions items (None when absent)."""

    todos: dict[str, tuple]
    profile: Item | None
    instructions: Item | None


def parameters(user_id: str, known: dict[str, Any]) -> dict[str, Any]:
    """The statement's parameters: the user's namespaces, the instructions' key, the newest version known."""
    return {
        "todo": ".".join(namespace(TODO, user_id)),
        "profile": ".".join(namespace(PROFILE, user_id)),
        "instructions": ".".join(namespace(INSTRUCTIONS, user_id)),
        "instructions_key": INSTRUCTIONS_KEY,
        "seen": max((v for v in known.values() if isinstance(v, int)), default=-1),
    }


def _sqlite_rows(store: Any, user_id: str, known: dict[str, Any]) -> list[tuple]:
    with store._cursor(transaction=False) as cur:
        cur.execute(SQLITE_STATEMENT, parameters(user_id, known))
        return cur.fetchall()


def _postgres_rows(store: Any, user_id: str, known: dict[str, Any]) -> list[tuple]:
    from psycopg.rows import tuple_row

    statement = postgres_statement(bool((store.ttl_config or {}).get("omit_expired")))
    with store._cursor() as cur:
        cur.row_factory = tuple_row
        cur.execute(statement, parameters(user_id, known))
        return cur.fetchall()


def complete_rows(store: BaseStore, user_id: str, rows: dict[str, tuple], keys: list[str]) -> list[tuple]:
    """The rows for `keys` with their values: SQLite sends none for a row whose rowid was reused (a rare case:
    a row written after the newest one was deleted), so those are read again, by key."""
    missing = [key for key in keys if rows[key][VALUE] is None]
    if missing:
        found: dict[str, tuple] = {}
        with store._cursor(transaction=False) as cur:
            for start in range(0, len(missing), KEYS_PER_READ):
                chunk = missing[start : start + KEYS_PER_READ]
                cur.execute(_SQLITE_ROWS.format(keys=", ".join("?" * len(chunk))), [".".join(namespace(TODO, user_id)), *chunk])
                found.update((row[1], row) for row in cur.fetchall())
        rows = {**rows, **found}
    return [rows[key] for key in keys if rows[key][VALUE] is not None]


def _reader(store: BaseStore) -> Callable[[Any, str, dict], list[tuple]] | None:
    if "langgraph.store.sqlite" in sys.modules:
        from langgraph.store.sqlite import SqliteStore

        if isinstance(store, SqliteStore):
            return _sqlite_rows
    if "langgraph.store.postgres" in sys.modules:
        from langgraph.store.postgres import PostgresStore

        if isinstance(store, PostgresStore):
            return _postgres_rows
    return None


def memory_rows(store: BaseStore, user_id: str, known: dict[str, Any]) -> MemoryRows | None:
    """The user's ToDo rows, profile and instructions in one statement; None for a store without SQL.

    `known` holds the versions of the rows already prepared: SQLite leaves out the values of those.
    """
    read = _reader(store)
    if read is None:
        return None
    rows = read(store, user_id, known)
    documents = {row[0]: _item(row, row[0], user_id) for row in rows if row[0] != TODO}
    return MemoryRows({row[1]: row for row in rows if row[0] == TODO}, documents.get(PROFILE), documents.get(INSTRUCTIONS))
