"""A turn's memories in one SQL statement on this project's SQLite and PostgreSQL stores.

The statement returns the ToDo rows that changed since the reader's mark, found through the change log
(`graph.backends.todo_changes`; a first read, without a mark, gets every row), the profile and the
instructions: one round trip, one pool checkout, and a cost that follows the changes, not the list. A
deleted row comes back without a value, and so does, on PostgreSQL when the store hides expired items, a row
that has expired since the last read. A store without the change log is read through its own API instead.

Marks: the number of users forgotten so far (a change means the log lost rows: the reader reads the whole list
again, see `graph.backends.todo_changes.forget_items`), the identity of the store table and its log (a change
means the table was reset: the reader installs the log again and reads the whole list, and so it does when the
log is missing), and on SQLite the highest log number read (writers take turns, so no lower number can commit later); on
PostgreSQL the oldest transaction still running when the statement ran (every older one has finished and is
visible to it), and the server's time, for expiries. So a PostgreSQL read may return again rows it already
returned, committed by transactions that were running at the last read; the reader skips those by version.
"""

from dataclasses import dataclass
from typing import Any

import orjson
from langgraph.store.base import BaseStore, Item

from graph.backends.todo_changes import FORGETS, IDENTITY, TABLE, change_log, installed, reinstall
from graph.memory.store import INSTRUCTIONS, INSTRUCTIONS_KEY, PROFILE, TODO, namespace

# Every row is (kind, key, version, value, created_at, updated_at): kind "todo" (a changed ToDo; version: its
# log number or transaction; no value when it is gone), "profile", "instructions", and on PostgreSQL "expired"
# (a ToDo that has expired since the last read) and "mark" (version: the oldest running transaction;
# created_at: the server's time); "log" (version: how many users were forgotten; value: the log's identity).
_STATEMENT = """
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
SQLITE_STATEMENT = _STATEMENT.format(
    log=TABLE, version="c.seq", value="s.value", plain_value="value", live_s="", live="", since="c.seq > :seen",
    forgets="coalesce(max(id), 0)", forgets_table=FORGETS, identity=IDENTITY["sqlite"],
    todo=":todo", profile=":profile", instructions=":instructions", instructions_key=":instructions_key",
)
_POSTGRES_MARK = """
UNION ALL
SELECT 'mark', NULL, pg_snapshot_xmin(pg_current_snapshot())::text, NULL, NOW(), NULL
"""
_POSTGRES_EXPIRED = """
UNION ALL
SELECT 'expired', key, NULL, NULL, NULL, NULL FROM store
WHERE prefix = %(todo)s AND expires_at > %(expired_after)s::timestamptz AND expires_at <= NOW()
"""
KIND, KEY, VERSION, VALUE, CREATED_AT = range(5)


def postgres_statement(hide_expired: bool) -> str:
    """The statement for PostgreSQL: values as JSON text; expired rows hidden (and reported) when the store hides them."""
    live = "AND ({column}expires_at IS NULL OR {column}expires_at > NOW())" if hide_expired else ""
    return _STATEMENT.format(
        log=TABLE, version="c.xid::text", value="s.value::text", plain_value="value::text",
        live_s=live.format(column="s."), live=live.format(column=""), since="c.xid >= %(seen)s::xid8",
        forgets="coalesce(max(id), 0)::text", forgets_table=FORGETS, identity=IDENTITY["postgres"],
        todo="%(todo)s", profile="%(profile)s", instructions="%(instructions)s", instructions_key="%(instructions_key)s",
    ) + (_POSTGRES_EXPIRED if hide_expired else "") + _POSTGRES_MARK


@dataclass(frozen=True)
class TodoChange:
    """A ToDo row that changed: its key, its version, and the item (None when it was deleted or has expired)."""

    key: str
    version: Any
    item: Item | None


@dataclass(frozen=True)
class MemoryRows:
    """What the statement read: the ToDo changes (every ToDo when `whole`), the profile and instructions items
    (None when absent), and the mark to read the next changes from."""

    changes: list[TodoChange]
    profile: Item | None
    instructions: Item | None
    mark: Any
    whole: bool


def _item(row: tuple, kind: str, user_id: str) -> Item:
    return Item(
        value=orjson.loads(row[VALUE]), key=row[KEY], namespace=namespace(kind, user_id), created_at=row[CREATED_AT],
        updated_at=row[CREATED_AT + 1],
    )


def _namespaces(user_id: str) -> dict[str, str]:
    return {
        "todo": ".".join(namespace(TODO, user_id)),
        "profile": ".".join(namespace(PROFILE, user_id)),
        "instructions": ".".join(namespace(INSTRUCTIONS, user_id)),
        "instructions_key": INSTRUCTIONS_KEY,
    }


def _sqlite_rows(store: Any, user_id: str, mark: Any) -> tuple[list[tuple], Any]:
    seen = -1 if mark is None else mark
    with store._cursor(transaction=False) as cur:
        cur.execute(SQLITE_STATEMENT, {**_namespaces(user_id), "seen": seen})
        rows = cur.fetchall()
    return rows, max((row[VERSION] for row in rows if row[KIND] == TODO), default=seen)


def _postgres_rows(store: Any, user_id: str, mark: Any) -> tuple[list[tuple], Any]:
    from psycopg.rows import tuple_row

    seen, expired_after = mark if mark is not None else ("0", "infinity")
    statement = postgres_statement(bool((store.ttl_config or {}).get("omit_expired")))
    with store._cursor() as cur:
        cur.row_factory = tuple_row
        cur.execute(statement, {**_namespaces(user_id), "seen": seen, "expired_after": expired_after})
        rows = cur.fetchall()
    mark_row = next(row for row in rows if row[KIND] == "mark")
    return rows, (mark_row[VERSION], mark_row[CREATED_AT])


def _log_present(store: BaseStore, error: Exception) -> bool:
    """Whether the change log is in place after a read failed with `error`: then it failed for another reason.
    When even that cannot be found out (the database is gone), the read's own error is the one to see."""
    try:
        return installed(store)
    except Exception:
        raise error from None


def memory_rows(store: BaseStore, user_id: str, mark: Any) -> MemoryRows:
    """The ToDo rows changed since `mark` (None: all of them), the profile and the instructions, in one statement,
    from a store with the change log (`graph.backends.todo_changes.change_log`). When a user was forgotten since
    `mark`, it reads again, all of them (`whole`); when the store table was reset or the log is missing, it
    installs the log again first."""
    read = _sqlite_rows if change_log(store) == "sqlite" else _postgres_rows
    log_then, position = mark if mark is not None else (None, None)
    try:
        rows, position = read(store, user_id, position)
    except Exception as error:
        if _log_present(store, error):
            raise
        reinstall(store)
        return memory_rows(store, user_id, None)
    log = next((row[VERSION], row[VALUE]) for row in rows if row[KIND] == "log")
    if log_then is not None and log != log_then:
        if log[1] != log_then[1]:
            reinstall(store)
        return memory_rows(store, user_id, None)
    changes = [
        TodoChange(row[KEY], row[VERSION], _item(row, TODO, user_id) if row[KIND] == TODO and row[VALUE] is not None else None)
        for row in rows
        if row[KIND] in (TODO, "expired")
    ]
    documents = {row[KIND]: _item(row, row[KIND], user_id) for row in rows if row[KIND] in (PROFILE, INSTRUCTIONS)}
    return MemoryRows(changes, documents.get(PROFILE), documents.get(INSTRUCTIONS), (log, position), mark is None)
