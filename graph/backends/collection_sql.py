"""A turn's memories in one SQL statement on this project's SQLite and PostgreSQL stores.

The statement returns, for each collection kind of the turn (the ToDos, any added collection), the rows that
changed since the reader's mark for that list, found through the change log (`graph.backends.collection_changes`; a
first read, without a mark, gets every row), and each single document (the profile, the instructions, any
added one): one round trip, one pool checkout, and a cost that follows the changes, not the lists. A deleted
row comes back without a value, and so does, on PostgreSQL when the store hides expired items, a row that has
expired since the last read. Each store class gives its dialect (`Dialect`: `graph.backends.atomic`,
`graph.backends.atomic_postgres`); a store without the change log is read through its own API instead.

Marks, one per list: the number of users forgotten so far (a change means the log lost rows: the reader reads
every list whole again, see `graph.backends.collection_changes`), the identity of the store table and its log (a
change means the table was reset: the reader installs the log again and reads every list whole, and so it does
when the log is missing), and on SQLite the highest log number read of that list (writers take turns, so no
lower number can commit later); on PostgreSQL the oldest transaction still running when the statement ran
(every older one has finished and is visible to it), and the server's time, for expiries. So a PostgreSQL read
may return again rows it already returned, committed by transactions that were running at the last read; the
reader skips those by version.
"""

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from langgraph.store.base import Item

from graph.memory.change_log import CollectionChange, MemoryRows, StoredDocument
from graph.memory.kinds import MemoryKind
from graph.memory.store import namespace

# Every row is (kind, memory, key, version, value, created_at, updated_at, created_epoch, updated_epoch): kind
# "changed" (a changed document of the collection `memory`; version: its log number or transaction; no value when
# it is gone), "document" (the single document of `memory`), "stored" (a document asked for by its namespace and
# key, `memory` its prefix: the done log's bookkeeping, read with the turn's memories), on PostgreSQL "expired" (a document that has expired
# since the last read) and "mark" (version: the oldest running transaction; created_at: the server's time), and
# "log" (version: how many users were forgotten; value: the log's identity). Times come as ISO 8601 text, and a
# changed document's also as seconds since the epoch, so a first read parses no time and no value of a document
# the turn does not show (`StoredDocument`). A kind's name is an identifier (`MemoryKind`), so the statement names
# it as a literal; everything of a user is a parameter.
CHANGED_ROWS = """SELECT 'changed' AS kind, '{name}' AS memory, c.key, {version} AS version, {value} AS value,
    {created} AS created_at, {updated} AS updated_at, {created_epoch} AS created_epoch, {updated_epoch} AS updated_epoch
FROM {log} AS c LEFT JOIN store AS s ON s.prefix = c.prefix AND s.key = c.key {live_s}
WHERE c.prefix = {prefix} AND {since} AND (s.key IS NOT NULL OR NOT ({first}))"""
DOCUMENT_ROW = """SELECT 'document', '{name}', key, NULL, {plain_value}, {created}, {updated}, NULL, NULL FROM store
WHERE prefix = {prefix} AND key = {key} {live}"""
STORED_ROW = """SELECT 'stored', prefix, key, NULL, {plain_value}, {created}, {updated}, NULL, NULL FROM store
WHERE prefix = {prefix} AND key = {key} {live}"""
LOG_ROW = "SELECT 'log', NULL, NULL, {forgets}, {identity}, NULL, NULL, NULL, NULL FROM {forgets_table}"
KIND, MEMORY, KEY, VERSION, VALUE, CREATED_AT, UPDATED_AT, CREATED_EPOCH, UPDATED_EPOCH = range(9)


@dataclass(frozen=True)
class Dialect:
    """How one database writes the statement: its parameter style (`parameter`, with `{}` for the name), the log's
    version and value columns, a time column as ISO 8601 text and as seconds since the epoch (`time_text`,
    `epoch`, with `{column}`), the filter of live rows (`live`, with `{column}` for the table's prefix), the test
    of a log row newer than `{seen}` (`since`), the test that `{seen}` is a first read's (`first`: its log rows
    of documents gone are left out, since the reader holds nothing they could remove: a list that lost thousands of
    documents, as one whose done ones moved to the done log, is read at the cost of what it holds), and rows it adds for each collection (`per_collection`, with
    `{name}`, `{prefix}` and `{n}`) and at the end (`tail`)."""

    parameter: str
    log: str
    version: str
    value: str
    plain_value: str
    time_text: str
    epoch: str
    live: str
    since: str
    forgets: str
    forgets_table: str
    identity: str
    first: str = "FALSE"
    per_collection: str = ""
    tail: str = ""

    def name(self, parameter: str) -> str:
        """A named parameter as the database's driver writes it."""
        return self.parameter.format(parameter)


@functools.lru_cache(maxsize=64)
def memory_statement(dialect: Dialect, collections: tuple[str, ...], documents: tuple[str, ...], stored: int = 0) -> str:
    """The one-statement read of the collections (changed rows, by kind name) and single documents named, and of
    `stored` documents more by their namespace and key (`statement_parameters`)."""
    param = dialect.name
    parts = []
    for n, name in enumerate(collections):
        parts.append(CHANGED_ROWS.format(
            name=name, version=dialect.version, value=dialect.value, log=dialect.log,
            created=dialect.time_text.format(column="s.created_at"), updated=dialect.time_text.format(column="s.updated_at"),
            created_epoch=dialect.epoch.format(column="s.created_at"), updated_epoch=dialect.epoch.format(column="s.updated_at"),
            live_s=dialect.live.format(column="s."), prefix=param(f"c{n}"), since=dialect.since.format(seen=param(f"seen{n}")),
            first=dialect.first.format(seen=param(f"seen{n}")),
        ))
        if dialect.per_collection:
            parts.append(dialect.per_collection.format(name=name, prefix=param(f"c{n}"), n=n))
    for n, name in enumerate(documents):
        parts.append(DOCUMENT_ROW.format(
            name=name, plain_value=dialect.plain_value, prefix=param(f"d{n}"), key=param(f"k{n}"),
            created=dialect.time_text.format(column="created_at"), updated=dialect.time_text.format(column="updated_at"),
            live=dialect.live.format(column=""),
        ))
    for n in range(stored):
        parts.append(STORED_ROW.format(
            plain_value=dialect.plain_value, prefix=param(f"s{n}"), key=param(f"sk{n}"),
            created=dialect.time_text.format(column="created_at"), updated=dialect.time_text.format(column="updated_at"),
            live=dialect.live.format(column=""),
        ))
    parts.append(LOG_ROW.format(forgets=dialect.forgets, identity=dialect.identity, forgets_table=dialect.forgets_table))
    return "\nUNION ALL\n".join([*parts, *([dialect.tail] if dialect.tail else [])])


def statement_parameters(
    user_id: str,
    collections: Sequence[MemoryKind],
    documents: Sequence[MemoryKind],
    stored: Sequence[tuple[tuple[str, ...], str]] = (),
) -> dict[str, str]:
    """The statement's named parameters for one user: the prefixes of the lists and documents, and the keys; and
    the prefix and key of each (namespace, key) in `stored`."""
    parameters = {f"c{n}": ".".join(namespace(kind, user_id)) for n, kind in enumerate(collections)}
    for n, kind in enumerate(documents):
        parameters.update({f"d{n}": ".".join(namespace(kind, user_id)), f"k{n}": kind.key})
    for n, (item_namespace, key) in enumerate(stored):
        parameters.update({f"s{n}": ".".join(item_namespace), f"sk{n}": key})
    return parameters


def log_state(rows: list[tuple]) -> tuple[Any, Any]:
    """The statement's "log" row: how many users were forgotten, and the identity of the store table and its log."""
    return next((row[VERSION], row[VALUE]) for row in rows if row[KIND] == "log")


def _item(row: tuple, item_namespace: tuple[str, ...]) -> Item:
    return Item(
        value=orjson.loads(row[VALUE]), key=row[KEY], namespace=item_namespace,
        created_at=datetime.fromisoformat(row[CREATED_AT]), updated_at=datetime.fromisoformat(row[UPDATED_AT]),
    )


def memory_rows(
    rows: list[tuple],
    user_id: str,
    kinds: Sequence[MemoryKind],
    marks: Mapping[str, Any],
    whole: frozenset[str],
    stored: Sequence[tuple[tuple[str, ...], str]] = (),
) -> MemoryRows:
    """What the statement's rows say: each collection's changes (their documents not yet parsed), each single
    document and each document of `stored` (by namespace and key), with the next `marks`."""
    namespaces = {kind.name: namespace(kind, user_id) for kind in kinds}  # the same tuple for every row of a kind
    changes: dict[str, list[CollectionChange]] = {kind.name: [] for kind in kinds if kind.collection}
    documents: dict[str, Item | None] = {kind.name: None for kind in kinds if not kind.collection}
    asked = {(".".join(item_namespace), key): item_namespace for item_namespace, key in stored}
    found: dict[tuple[tuple[str, ...], str], Item | None] = {(item_namespace, key): None for item_namespace, key in stored}
    for row in rows:
        if row[KIND] == "changed":
            document = None if row[VALUE] is None else StoredDocument(
                namespaces[row[MEMORY]], row[KEY], row[VALUE], *row[CREATED_AT:]
            )
            changes[row[MEMORY]].append(CollectionChange(row[KEY], row[VERSION], document))
        elif row[KIND] == "expired":
            changes[row[MEMORY]].append(CollectionChange(row[KEY], row[VERSION], None))
        elif row[KIND] == "document":
            documents[row[MEMORY]] = _item(row, namespaces[row[MEMORY]])
        elif row[KIND] == "stored":
            item_namespace = asked[(row[MEMORY], row[KEY])]
            found[(item_namespace, row[KEY])] = _item(row, item_namespace)
    return MemoryRows(changes, documents, dict(marks), whole, found)
