"""A turn's memories in one SQL statement on this project's SQLite and PostgreSQL stores.

The statement returns the ToDo rows that changed since the reader's mark, found through the change log
(`graph.backends.todo_changes`; a first read, without a mark, gets every row), the profile and the
instructions: one round trip, one pool checkout, and a cost that follows the changes, not the list. A
deleted row comes back without a value, and so does, on PostgreSQL when the store hides expired items, a row
that has expired since the last read. Each store class fills the statement in with its dialect
(`graph.backends.atomic`, `graph.backends.atomic_postgres`); a store without the change log is read through
its own API instead.

Marks: the number of users forgotten so far (a change means the log lost rows: the reader reads the whole list
again, see `graph.backends.todo_changes`), the identity of the store table and its log (a change
means the table was reset: the reader installs the log again and reads the whole list, and so it does when the
log is missing), and on SQLite the highest log number read (writers take turns, so no lower number can commit later); on
PostgreSQL the oldest transaction still running when the statement ran (every older one has finished and is
visible to it), and the server's time, for expiries. So a PostgreSQL read may return again rows it already
returned, committed by transactions that were running at the last read; the reader skips those by version.
"""

from typing import Any

import orjson
from langgraph.store.base import Item

from graph.memory.change_log import MemoryRows, TodoChange
from graph.memory.kinds import INSTRUCTIONS, PROFILE, TODO, MemoryKind
from graph.memory.store import namespace

# Every row is (kind, key, version, value, created_at, updated_at): kind "todo" (a changed ToDo; version: its
# log number or transaction; no value when it is gone), "profile", "instructions", and on PostgreSQL "expired"
# (a ToDo that has expired since the last read) and "mark" (version: the oldest running transaction;
# created_at: the server's time); "log" (version: how many users were forgotten; value: the log's identity).
STATEMENT = """
SELECT 'todo' AS kind, c.key, {version} AS version, {value} AS value, s.created_at, s.updated_at
FROM {log} AS c LEFT JOIN store AS s ON s.prefix = c.prefix AND s.key = c.key {live_s}
WHERE c.prefix = {todo} AND {since}
UNION ALL
SELECT * FROM (
    SELECT 'profile', key, NULL, {plain_value}, created_at, updated_at FROM store WHERE prefix = {profile} {live}
    ORDER BY updated_at DESC LIMIT 1
) AS profile
UNION ALL
SELECT 'instructions', key, NULL, {plain_value}, created_at, updated_at FROM store
WHERE prefix = {instructions} AND key = {instructions_key} {live}
UNION ALL
SELECT 'log', NULL, {forgets}, {identity}, NULL, NULL FROM {forgets_table}
"""
KIND, KEY, VERSION, VALUE, CREATED_AT = range(5)


def statement_parameters(user_id: str) -> dict[str, str]:
    """The statement's named parameters for one user: the prefixes of their memories and the instructions' key."""
    return {
        "todo": ".".join(namespace(TODO, user_id)),
        "profile": ".".join(namespace(PROFILE, user_id)),
        "instructions": ".".join(namespace(INSTRUCTIONS, user_id)),
        "instructions_key": INSTRUCTIONS.key,
    }


def log_state(rows: list[tuple]) -> tuple[Any, Any]:
    """The statement's "log" row: how many users were forgotten, and the identity of the store table and its log."""
    return next((row[VERSION], row[VALUE]) for row in rows if row[KIND] == "log")


def _item(row: tuple, kind: MemoryKind, user_id: str) -> Item:
    return Item(
        value=orjson.loads(row[VALUE]), key=row[KEY], namespace=namespace(kind, user_id), created_at=row[CREATED_AT],
        updated_at=row[CREATED_AT + 1],
    )


def memory_rows(rows: list[tuple], user_id: str, mark: Any, whole: bool) -> MemoryRows:
    """What the statement's rows say: the ToDo changes, the profile and the instructions, with the next `mark`."""
    changes = [
        TodoChange(row[KEY], row[VERSION], _item(row, TODO, user_id) if row[KIND] == TODO.name and row[VALUE] is not None else None)
        for row in rows
        if row[KIND] in (TODO.name, "expired")
    ]
    documents = {kind.name: _item(row, kind, user_id) for row in rows for kind in (PROFILE, INSTRUCTIONS) if row[KIND] == kind.name}
    return MemoryRows(changes, documents.get(PROFILE.name), documents.get(INSTRUCTIONS.name), mark, whole)
