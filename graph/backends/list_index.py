"""The list index: what ranking needs of every collection document, kept by the database, so that the first read of
a long list returns only what a turn can show.

A turn shows at most a few dozen documents of a collection (`graph.memory.selection`): the most recently
changed, the most recent open ones, the soonest deadlines, the ones the user names. Finding those in the
documents' JSON means parsing every one of them; the list index holds, per document, its times in seconds,
whether it is open, whether it has a deadline, and its text fields' words (`maistro_list_index`), written by
triggers on LangGraph's `store` table in the statement that writes the document, so every writer keeps it
(the update nodes, imports, the TTL sweeper, other processes, LangGraph's own store classes). What a kind's
fields are is data (`maistro_list_kinds`: its status field and open values, its deadline field, its text
fields, and a `version` naming them): `describe_lists` records the kinds a graph keeps and indexes the rows of
a kind again when its description changed.

`read_list_head` then reads, in one statement, the list's counts and only the rows any ordering of the
selection can pick: the first `recent` by recency, the first `open` open ones by recency, every open one with a
deadline (the selection orders parsed deadlines), and every row whose words may hold one of the turn's terms
(a word's `LIKE` pattern, `graph.memory.selection.superset_pattern`, or a number between non-digits, matches
whenever the text holds the term; a `\\u` escape always matches). Recency orders as the change-log read does
(update time, creation time, in the same seconds, then key by code point). The statement also counts the
list's stored rows: unless every one is indexed under the kind's current version (a reset table, a kind
described otherwise since, on PostgreSQL an expired row not yet swept), it answers None and the reader reads
the list whole.

Each store class gives its dialect (`ListIndexDialect`): `SQLITE` and `postgres_dialect` below.
"""

import functools
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import orjson

from graph.memory.change_log import ListHead, StoredDocument
from graph.memory.kinds import MemoryKind
from graph.memory.selection import superset_pattern
from graph.memory.store import HISTORY, namespace

KINDS = "maistro_list_kinds"
# The history is no collection: its rows pass the triggers by.
_UNINDEXED = f"{HISTORY}."
INDEX = "maistro_list_index"
# A new format of the indexed columns changes every kind's version, so every row is indexed again.
FORMAT = 1

# Every row is (kind, key, value, created_at, updated_at, created_epoch, updated_epoch): kind "count" (the indexed
# rows of the current version in created_epoch, the open ones in updated_epoch), "stored" (the list's stored rows
# in created_epoch) or "row" (a document a selection can pick; none for a list shorter than `least`).
HEAD = """WITH stored AS MATERIALIZED (SELECT count(*) AS n FROM store WHERE prefix = {prefix} {live})
SELECT 'count', NULL, NULL, NULL, NULL, count(*), sum(CASE WHEN is_open THEN 1 ELSE 0 END) FROM {index}
WHERE prefix = {prefix} AND version = {version}
UNION ALL SELECT 'stored', NULL, NULL, NULL, NULL, n, NULL FROM stored
UNION ALL SELECT 'row', s.key, {value}, {created}, {updated}, i.ce, i.ue FROM {index} AS i
JOIN store AS s ON s.prefix = i.prefix AND s.key = i.key
WHERE i.prefix = {prefix} AND (SELECT n FROM stored) >= {least} AND i.key IN (
    SELECT key FROM (SELECT key FROM {index} WHERE prefix = {prefix}
        ORDER BY ue DESC, ce DESC, key{collate} LIMIT {recent}) AS most_recent
    UNION SELECT key FROM (SELECT key FROM {index} WHERE prefix = {prefix} AND is_open
        ORDER BY ue DESC, ce DESC, key{collate} LIMIT {open}) AS most_recent_open
    UNION SELECT key FROM {index} WHERE prefix = {prefix} AND is_open AND has_deadline
    UNION SELECT key FROM {index} WHERE prefix = {prefix} AND ({matches}))"""
KIND, KEY, VALUE, CREATED_AT, UPDATED_AT, CREATED_EPOCH, UPDATED_EPOCH = range(7)


@dataclass(frozen=True)
class ListIndexDialect:
    """How one database writes the list index: its parameter style (`parameter`, `{}` for the name), the stored
    JSON and times as returned (`value`, `time_text` with `{column}`), a field's path (`path`, `{}` for its
    name), the tests that `words` match a word's pattern (`like`, with `{pattern}`) or a number (`number`, with
    `{digits}` and `{pattern}`, the pattern written as `number_pattern` with `{digits}`) or hold a JSON escape
    (`escaped`), the filter of live rows, the collation of keys by code point, and the statements that describe
    a kind (`describe`), index a kind's rows again (`reindex`, the kind as parameter `kind`) and index every
    described kind again (`reindex_all`). The tables and triggers are a migration of the change log
    (`SQLITE_MIGRATION`, `POSTGRES_MIGRATION`)."""

    parameter: str
    value: str
    time_text: str
    path: str
    like: str
    number: str
    number_pattern: str
    escaped: str
    live: str
    collate: str
    describe: str
    reindex: Sequence[str]
    reindex_all: Sequence[str]

    def name(self, parameter: str) -> str:
        """A named parameter as the database's driver writes it."""
        return self.parameter.format(parameter)


@functools.lru_cache(maxsize=64)
def kind_description(kind: MemoryKind, dialect: ListIndexDialect) -> Mapping[str, Any]:
    """The row of `maistro_list_kinds` that describes a collection kind's fields, with its `version` (computed once
    per kind, for every head read)."""
    fields = {
        "status_path": dialect.path.format(kind.status_field) if kind.status_field else None,
        "open_statuses": orjson.dumps(list(kind.open_statuses)).decode(),
        "deadline_path": dialect.path.format(kind.deadline_field) if kind.deadline_field else None,
        "text_paths": orjson.dumps([dialect.path.format(field) for field in kind.text_fields]).decode(),
    }
    version = hashlib.sha256(orjson.dumps([FORMAT, fields], option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
    return MappingProxyType({"kind": kind.name, "version": version, **fields})


def indexable(kind: MemoryKind) -> bool:
    """Whether the list index can hold a kind: a collection whose indexed fields all have names a JSON path holds as
    written (a field named by an alias may not: its lists are read whole)."""
    fields = (kind.status_field, kind.deadline_field, *kind.text_fields)
    return kind.collection and all(field.isidentifier() for field in fields if field)


@functools.lru_cache(maxsize=64)
def head_statement(dialect: ListIndexDialect, numbers: tuple[bool, ...]) -> str:
    """The first read of a long list, with a pattern per term (`numbers`: whether each is a number's); its named
    parameters: `prefix`, `version`, `least`, `recent`, `open`, `term0`… and for a number `digits0`…."""
    param = dialect.name
    tests = [
        (dialect.number if number else dialect.like).format(pattern=param(f"term{n}"), digits=param(f"digits{n}"))
        for n, number in enumerate(numbers)
    ]
    return HEAD.format(
        index=INDEX, prefix=param("prefix"), version=param("version"), live=dialect.live, value=dialect.value,
        created=dialect.time_text.format(column="s.created_at"), updated=dialect.time_text.format(column="s.updated_at"),
        collate=dialect.collate, recent=param("recent"), open=param("open"), least=param("least"),
        matches=" OR ".join([*tests, dialect.escaped]),
    )


class ListIndexed:
    """Mixin for this project's SQL stores: the list index (`describe_lists`, `read_list_head`, and
    `reindex_lists`, which a store calls when its change log finds the store table reset). A store class
    supplies `list_index_dialect()`, `_list_index_cursor()` (a transaction's cursor) and `_head_rows`."""

    def list_index_dialect(self) -> ListIndexDialect:
        """How this store's database writes the list index."""
        raise NotImplementedError

    def _list_index_cursor(self) -> Any:
        raise NotImplementedError

    def _head_rows(self, statement: str, parameters: Mapping[str, Any]) -> list[tuple]:
        raise NotImplementedError

    def describe_lists(self, kinds: Sequence[MemoryKind]) -> None:
        """Record the fields of the kinds the index can hold (`indexable`); index again the rows of each kind whose
        description changed."""
        dialect = self.list_index_dialect()
        with self._list_index_cursor() as cur:
            for kind in kinds:
                if not indexable(kind):
                    continue
                description = kind_description(kind, dialect)
                cur.execute(dialect.describe, dict(description))  # the drivers take a dict
                if cur.fetchall():  # the description was new or changed
                    for statement in dialect.reindex:
                        cur.execute(statement, {"kind": kind.name})

    def reindex_lists(self) -> None:
        """Index every described kind's rows again (after the store table was reset)."""
        with self._list_index_cursor() as cur:
            for statement in self.list_index_dialect().reindex_all:
                cur.execute(statement)

    def read_list_head(
        self, user_id: str, kind: MemoryKind, terms: Sequence[str], recent: int, open_limit: int, *, least: int
    ) -> ListHead | None:
        """The counts of the user's list of `kind` and the documents a selection for `terms` can pick (see the
        module's docstring); None, without a statement when it can tell beforehand, when the index cannot hold the
        kind, a term cannot be narrowed, the list holds fewer than `least` documents or its index is not complete."""
        if not indexable(kind):
            return None
        dialect = self.list_index_dialect()
        numbers = tuple(term.isascii() and term.isdigit() for term in terms)
        patterns = [
            dialect.number_pattern.format(digits=term) if number else superset_pattern(term)
            for term, number in zip(terms, numbers)
        ]
        if None in patterns:
            return None
        item_namespace = namespace(kind, user_id)
        parameters: dict[str, Any] = {
            "prefix": ".".join(item_namespace), "version": kind_description(kind, dialect)["version"],
            "least": least, "recent": recent, "open": open_limit,
        }
        parameters.update({f"term{n}": pattern for n, pattern in enumerate(patterns)})
        parameters.update({f"digits{n}": term for n, (term, number) in enumerate(zip(terms, numbers)) if number})
        rows = self._head_rows(head_statement(dialect, numbers), parameters)
        counted = next(row for row in rows if row[KIND] == "count")
        stored = next(row for row in rows if row[KIND] == "stored")
        if counted[CREATED_EPOCH] != stored[CREATED_EPOCH] or stored[CREATED_EPOCH] < least:
            return None
        documents = {
            row[KEY]: StoredDocument(item_namespace, *row[KEY:]) for row in rows if row[KIND] == "row"
        }
        return ListHead(int(counted[CREATED_EPOCH]), int(counted[UPDATED_EPOCH] or 0), list(documents.values()))


def _describe(parameter: str, json_value: str) -> str:
    """The upsert of a kind's description (`kind_description`) that returns the kind when its version changed, with
    the dialect's parameter style and its JSON values written as `json_value` (`{}` for the parameter)."""
    value = {name: parameter.format(name) for name in ("kind", "version", "status_path", "deadline_path")}
    value.update({name: json_value.format(parameter.format(name)) for name in ("open_statuses", "text_paths")})
    return f"""INSERT INTO {KINDS} (kind, version, status_path, open_statuses, deadline_path, text_paths)
VALUES ({value["kind"]}, {value["version"]}, {value["status_path"]}, {value["open_statuses"]}, {value["deadline_path"]},
    {value["text_paths"]})
ON CONFLICT (kind) DO UPDATE SET version = excluded.version, status_path = excluded.status_path,
    open_statuses = excluded.open_statuses, deadline_path = excluded.deadline_path, text_paths = excluded.text_paths
WHERE {KINDS}.version <> excluded.version
RETURNING kind"""


def _sqlite_indexed(row: str) -> str:
    """The list index's columns of a `store` row (`{row}`: NEW in a trigger, the table's alias in a reindex), with
    the kind's description `k` joined."""
    return f"""{row}.prefix, {row}.key, k.version, CAST(strftime('%s', {row}.created_at) AS INTEGER),
    CAST(strftime('%s', {row}.updated_at) AS INTEGER),
    CASE WHEN k.status_path IS NULL THEN 1
        ELSE coalesce(json_extract({row}.value, k.status_path) IN (SELECT value FROM json_each(k.open_statuses)), 0) END,
    CASE WHEN k.deadline_path IS NULL THEN 0 ELSE coalesce(json_extract({row}.value, k.deadline_path) > '', 0) END,
    coalesce((SELECT group_concat(coalesce(CAST(json_extract({row}.value, p.value) AS TEXT), ''), char(31))
        FROM json_each(k.text_paths) AS p), '')"""


_SQLITE_KIND_OF = "substr({row}.prefix, 1, instr({row}.prefix, '.') - 1)"
_SQLITE_COLUMNS = "(prefix, key, version, ce, ue, is_open, has_deadline, words)"

SQLITE = ListIndexDialect(
    parameter=":{}", value="s.value", time_text="{column}", path='$."{}"', like="words LIKE {pattern}",
    number="(instr(words, {digits}) > 0 AND (' ' || words || ' ') GLOB {pattern})", number_pattern="*[^0-9]{digits}[^0-9]*",
    escaped="instr(words, '\\u') > 0", live="", collate="",
    describe=_describe(":{}", "{}"),
    reindex=(
        f"DELETE FROM {INDEX} WHERE substr(prefix, 1, length(:kind) + 1) = :kind || '.'",
        f"""INSERT OR REPLACE INTO {INDEX} {_SQLITE_COLUMNS} SELECT {_sqlite_indexed("s")}
FROM store AS s JOIN {KINDS} AS k ON k.kind = :kind WHERE substr(s.prefix, 1, length(:kind) + 1) = :kind || '.'""",
    ),
    reindex_all=(
        f"DELETE FROM {INDEX}",
        f"""INSERT OR REPLACE INTO {INDEX} {_SQLITE_COLUMNS} SELECT {_sqlite_indexed("s")}
FROM store AS s JOIN {KINDS} AS k ON k.kind = {_SQLITE_KIND_OF.format(row="s")}""",
    ),
)


SQLITE_MIGRATION = (
    f"""CREATE TABLE IF NOT EXISTS {KINDS} (kind TEXT PRIMARY KEY, version TEXT NOT NULL, status_path TEXT,
    open_statuses TEXT NOT NULL, deadline_path TEXT, text_paths TEXT NOT NULL)""",
    f"""CREATE TABLE IF NOT EXISTS {INDEX} (prefix TEXT NOT NULL, key TEXT NOT NULL, version TEXT NOT NULL,
    ce INTEGER, ue INTEGER, is_open INTEGER NOT NULL, has_deadline INTEGER NOT NULL, words TEXT NOT NULL,
    PRIMARY KEY (prefix, key)) WITHOUT ROWID""",
    f"CREATE INDEX IF NOT EXISTS {INDEX}_recent ON {INDEX} (prefix, ue DESC, ce DESC, key)",
    *(
        statement
        for event in ("INSERT", "UPDATE")
        for statement in (
            f"DROP TRIGGER IF EXISTS {INDEX}_{event}",
            f"""CREATE TRIGGER {INDEX}_{event} AFTER {event} ON store
WHEN substr(NEW.prefix, 1, {len(_UNINDEXED)}) <> '{_UNINDEXED}'
BEGIN
    INSERT OR REPLACE INTO {INDEX} {_SQLITE_COLUMNS} SELECT {_sqlite_indexed("NEW")}
    FROM {KINDS} AS k WHERE k.kind = {_SQLITE_KIND_OF.format(row="NEW")};
END""",
        )
    ),
    f"DROP TRIGGER IF EXISTS {INDEX}_DELETE",
    f"""CREATE TRIGGER {INDEX}_DELETE AFTER DELETE ON store
WHEN substr(OLD.prefix, 1, {len(_UNINDEXED)}) <> '{_UNINDEXED}'
BEGIN
    DELETE FROM {INDEX} WHERE prefix = OLD.prefix AND key = OLD.key;
END""",
)


def _postgres_indexed(row: str) -> str:
    """The list index's columns of a `store` row, as `_sqlite_indexed` (words lower-cased: ILIKE is slow)."""
    return f"""{row}.prefix, {row}.key, k.version, extract(epoch FROM {row}.created_at)::float8,
    extract(epoch FROM {row}.updated_at)::float8,
    k.status_path IS NULL OR coalesce(({row}.value -> k.status_path) IN (SELECT jsonb_array_elements(k.open_statuses)), false),
    k.deadline_path IS NOT NULL AND coalesce({row}.value ->> k.deadline_path, '') <> '',
    lower(coalesce((SELECT string_agg(coalesce({row}.value ->> p, ''), chr(31))
        FROM jsonb_array_elements_text(k.text_paths) AS p), ''))"""


_POSTGRES_COLUMNS = "(prefix, key, version, ce, ue, is_open, has_deadline, words)"
_POSTGRES_UPSERT = """ON CONFLICT (prefix, key) DO UPDATE SET version = EXCLUDED.version, ce = EXCLUDED.ce,
    ue = EXCLUDED.ue, is_open = EXCLUDED.is_open, has_deadline = EXCLUDED.has_deadline, words = EXCLUDED.words"""


@functools.cache
def postgres_dialect(hide_expired: bool) -> ListIndexDialect:
    """The list index in PostgreSQL's SQL; `hide_expired`: the store hides expired rows until they are swept."""
    return ListIndexDialect(
        parameter="%({})s", value="s.value::text", time_text="to_json({column}) #>> '{{}}'", path="{}",
        like="words LIKE {pattern}", number="(strpos(words, {digits}) > 0 AND words ~ {pattern})", number_pattern="(^|[^0-9]){digits}($|[^0-9])",
        escaped="strpos(words, '\\u') > 0",
        live="AND (expires_at IS NULL OR expires_at > NOW())" if hide_expired else "", collate=' COLLATE "C"',
        describe=_describe("%({})s", "{}::jsonb"),
        reindex=(
            f"DELETE FROM {INDEX} WHERE left(prefix, length(%(kind)s) + 1) = %(kind)s || '.'",
            f"""INSERT INTO {INDEX} {_POSTGRES_COLUMNS} SELECT {_postgres_indexed("s")}
FROM store AS s JOIN {KINDS} AS k ON k.kind = %(kind)s WHERE left(s.prefix, length(%(kind)s) + 1) = %(kind)s || '.'
{_POSTGRES_UPSERT}""",
        ),
        reindex_all=(
            f"DELETE FROM {INDEX}",
            f"""INSERT INTO {INDEX} {_POSTGRES_COLUMNS} SELECT {_postgres_indexed("s")}
FROM store AS s JOIN {KINDS} AS k ON k.kind = split_part(s.prefix, '.', 1) {_POSTGRES_UPSERT}""",
        ),
    )


POSTGRES_MIGRATION = (
    f"""CREATE TABLE IF NOT EXISTS {KINDS} (kind text PRIMARY KEY, version text NOT NULL, status_path text,
    open_statuses jsonb NOT NULL, deadline_path text, text_paths jsonb NOT NULL)""",
    f"""CREATE TABLE IF NOT EXISTS {INDEX} (prefix text NOT NULL, key text NOT NULL, version text NOT NULL,
    ce float8, ue float8, is_open boolean NOT NULL, has_deadline boolean NOT NULL, words text NOT NULL,
    PRIMARY KEY (prefix, key))""",
    f"""CREATE INDEX IF NOT EXISTS {INDEX}_recent ON {INDEX} (prefix, ue DESC, ce DESC, key COLLATE "C")""",
    f"""CREATE OR REPLACE FUNCTION {INDEX}_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM {INDEX} WHERE prefix = OLD.prefix AND key = OLD.key;
        RETURN NULL;
    END IF;
    INSERT INTO {INDEX} {_POSTGRES_COLUMNS} SELECT {_postgres_indexed("NEW")}
    FROM {KINDS} AS k WHERE k.kind = split_part(NEW.prefix, '.', 1)
    {_POSTGRES_UPSERT};
    RETURN NULL;
END
$$""",
    f"DROP TRIGGER IF EXISTS {INDEX}_written ON store",
    f"""CREATE TRIGGER {INDEX}_written AFTER INSERT OR UPDATE ON store FOR EACH ROW
WHEN (left(NEW.prefix, {len(_UNINDEXED)}) <> '{_UNINDEXED}') EXECUTE FUNCTION {INDEX}_row()""",
    f"DROP TRIGGER IF EXISTS {INDEX}_deleted ON store",
    f"""CREATE TRIGGER {INDEX}_deleted AFTER DELETE ON store FOR EACH ROW
WHEN (left(OLD.prefix, {len(_UNINDEXED)}) <> '{_UNINDEXED}') EXECUTE FUNCTION {INDEX}_row()""",
)
