"""Where each memory came from, and the facts it replaced: written in the same store batch as the change.

Every accepted change has a source (`Source`): the thread, the user's message id, their words quoted (redacted, at
most `QUOTE_CHARS` characters), when they said it, the model that proposed the change, and the history entry's id.
The user's `memory_sources` namespace keeps the source of each memory's current value: one record per document of a
collection (key `kind:key`), one per field of a single-document kind (the profile's location: `profile:key:location`;
a free text's one field, `memory`). History retention prunes the history, never this namespace, so a memory keeps
its source however old it is.

When a change replaces a value (a field of a single document, a field of a collection's document) or deletes a
document, the old value is kept in the user's `past_facts` namespace as a past fact: what it was, when it became true
(`valid_from`, its source's time, None when it predates provenance), when it stopped (`valid_to`, the change's
time), its source, and the change that replaced it. An undo restores the sources the undone change replaced (its
history entry keeps them, `sources_before`) and deletes the past facts it made: the undone value was never true.

A history entry stores its source without what the entry holds already (`entry_source`): its id is the change id,
its `thread_id` the thread, its `message` the words quoted; `source_from_entry` reads the whole source back (an
entry written before this keeps all six fields, and reads the same). Its `sources_before` keeps only the sources
that existed (`stored_sources_before`); every other key the change touched had none (`sources_before_of`).

Both namespaces are the agent's own (`graph.memory.store.INTERNAL_NAMESPACES`): no store API client writes them; a
forget deletes them with the rest of the user's namespaces; an export carries the past facts (`past_section`).
"""

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import BaseStore, GetOp, Item, PutOp
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from graph.memory.due import read_date_time
from graph.memory.kinds import MemoryKind
from graph.memory.store import PAST, SOURCES, namespace, search_all

# The most characters of the user's words a source quotes.
QUOTE_CHARS = 280
# How many source keys one read asks for.
READ_CHUNK = 500
# The fields every source carries (`source_of`), each a string ("" when unknown).
SOURCE_FIELDS = ("change_id", "thread_id", "message_id", "quote", "said_at", "model")
# The fields of a source a history entry does not store: the entry's own id, thread and message hold them.
ENTRY_HELD_FIELDS = ("change_id", "thread_id", "quote")
# The fields every past fact carries.
PAST_FIELDS = ("kind", "key", "field", "value", "valid_from", "valid_to", "source", "replaced_by")


class PastFact(BaseModel):
    """A past fact as stored and exported: checked like every imported item (strict, nothing added or coerced)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    kind: str = Field(min_length=1, description="The memory kind the fact belonged to.")
    key: str = Field(min_length=1, description="The document's store key.")
    field: str | None = Field(description="The field that held the value (None: the whole document, deleted).")
    value: Any = Field(description="The value that held.")
    valid_from: str | None = Field(description="When it became true (its source's time; None: unknown), ISO 8601.")
    valid_to: str = Field(description="When it was replaced or deleted, ISO 8601.")
    source: dict[str, str] | None = Field(description="Where the value came from (None: before sources were kept).")
    replaced_by: str = Field(min_length=1, description="The id of the change that ended it.")

    @field_validator("valid_from", "valid_to")
    @classmethod
    def _dated(cls, value: str | None) -> str | None:
        if value is None:
            return value
        moment = read_date_time(value)
        if moment is None:
            raise ValueError("must be an ISO 8601 date-time")
        if moment.tzinfo is None:
            raise ValueError("must carry a UTC offset")
        return value


def past_fact_problem(key: str, value: Any, now: datetime) -> str | None:
    """Why `value` is not a past fact that may be imported under `key`, in a few words; None when it is one."""
    try:
        fact = PastFact.model_validate(value)
    except ValidationError as error:
        detail = error.errors()[0]
        where = ".".join(str(part) for part in detail["loc"])
        return f"{where}: {detail['msg']}" if where else detail["msg"]
    if key != past_key(fact.replaced_by, fact.field):
        return "its key is not the id of the change that ended it (and its field)"
    ended = datetime.fromisoformat(fact.valid_to)
    if ended > now:
        return "its valid_to is in the future"
    if fact.valid_from is not None and datetime.fromisoformat(fact.valid_from) > ended:
        return "its valid_from is after its valid_to"
    return None


def quoted(message: str) -> str:
    """The user's words as a source quotes them: whitespace collapsed, at most QUOTE_CHARS characters (cut at a word,
    with "…")."""
    text = " ".join(message.split())
    if len(text) <= QUOTE_CHARS:
        return text
    cut = text[: QUOTE_CHARS - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"


def source_of(change_id: str, thread_id: str, message_id: str, message: str, said_at: str, model: str) -> dict[str, str]:
    """A change's source record: its history entry's id, the thread, the user's message id, the quoted words
    (`quoted`; `message` is already redacted), when they were said (ISO 8601) and the model's name."""
    return {
        "change_id": change_id,
        "thread_id": thread_id,
        "message_id": message_id,
        "quote": quoted(message),
        "said_at": said_at,
        "model": model,
    }


def entry_source(source: Mapping[str, str]) -> dict[str, str]:
    """A source as its history entry stores it: without the fields the entry holds already (`ENTRY_HELD_FIELDS`)."""
    return {name: value for name, value in source.items() if name not in ENTRY_HELD_FIELDS}


def source_from_entry(entry: Mapping[str, Any]) -> dict[str, str] | None:
    """The whole source of a history entry's change (None: it has none, an undo or an entry older than sources): the
    stored fields, with the change id, thread and quote read from the entry's own fields."""
    stored = entry.get("source")
    if stored is None:
        return None
    held = {"change_id": entry["id"], "thread_id": entry.get("thread_id", ""), "quote": quoted(entry.get("message", ""))}
    return {name: stored.get(name, held.get(name, "")) for name in SOURCE_FIELDS}


def stored_sources_before(before: Mapping[str, Mapping[str, Any] | None]) -> dict[str, Mapping[str, Any]]:
    """The `sources_before` a history entry stores: only the keys that had a source (`sources_before_of`)."""
    return {key: value for key, value in before.items() if value is not None}


def sources_before_of(kind: MemoryKind, entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """The sources a history entry's change replaced, by every key it touched (None: that key had no source); None
    when the entry predates sources."""
    if entry.get("sources_before") is None:
        return None
    touched = touched_sources(kind, entry["key"], entry.get("before"), entry.get("after"))
    return {key: None for key in touched} | dict(entry["sources_before"])


def source_key(kind: str, key: str, field: str | None = None) -> str:
    """Where the source of a memory is kept in the `memory_sources` namespace: `kind:key`, or `kind:key:field` for a field of a
    single-document kind."""
    return f"{kind}:{key}:{field}" if field else f"{kind}:{key}"


def _fields(kind: MemoryKind, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[str]:
    return list(dict.fromkeys([*(before or {}), *(after or {}), *kind.schema.model_fields]))


def _filled(value: Any) -> bool:
    return value not in (None, "", [], {})


def touched_sources(kind: MemoryKind, key: str, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> dict[str, str | None]:
    """The source keys a change of `before` into `after` touches, each with the field it is for (None: the document)."""
    if kind.collection:
        return {source_key(kind.name, key): None}
    return {
        source_key(kind.name, key, name): name
        for name in _fields(kind, before, after)
        if (before or {}).get(name) != (after or {}).get(name)
    }


def read_sources(store: BaseStore, user_id: str, keys: Sequence[str]) -> dict[str, dict[str, Any] | None]:
    """The current source records under `keys` (None for a key without one), read READ_CHUNK keys a batch (SQLite
    takes only so many variables in one statement)."""
    found: dict[str, dict[str, Any] | None] = {}
    for start in range(0, len(keys), READ_CHUNK):
        chunk = keys[start : start + READ_CHUNK]
        items = store.batch([GetOp(namespace(SOURCES, user_id), key) for key in chunk])
        found.update({key: item.value if item else None for key, item in zip(chunk, items, strict=True)})
    return found


def past_key(change_id: str, field: str | None) -> str:
    """The key of the past fact that the change `change_id` ended (a field of it, or the whole document)."""
    return f"{change_id}:{field}" if field else change_id


def _past_fact(
    kind: MemoryKind, key: str, field: str | None, value: Any, source: Mapping[str, Any] | None, change_id: str, ended: str
) -> dict[str, Any]:
    return {
        "kind": kind.name,
        "key": key,
        "field": field,
        "value": value,
        "valid_from": (source or {}).get("said_at") or None,
        "valid_to": ended,
        "source": dict(source) if source else None,
        "replaced_by": change_id,
    }


def ended_facts(
    kind: MemoryKind,
    key: str,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    sources: Mapping[str, Mapping[str, Any] | None],
    change_id: str,
    ended: str,
) -> dict[str, dict[str, Any]]:
    """The past facts a change ends, by key: a deleted document whole; else each field whose filled value it replaced
    or emptied (a field that was empty held no fact). `sources` holds the current sources (`read_sources`)."""
    if before is None:
        return {}
    document_source = sources.get(source_key(kind.name, key))
    if after is None:
        return {past_key(change_id, None): _past_fact(kind, key, None, dict(before), document_source, change_id, ended)}
    facts = {}
    for name in _fields(kind, before, after):
        old = before.get(name)
        if _filled(old) and old != after.get(name):
            source = document_source if kind.collection else sources.get(source_key(kind.name, key, name))
            facts[past_key(change_id, name)] = _past_fact(kind, key, name, old, source, change_id, ended)
    return facts


def provenance_ops(
    user_id: str,
    kind: MemoryKind,
    key: str,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    source: Mapping[str, Any] | None,
    sources: Mapping[str, Mapping[str, Any] | None],
) -> list[PutOp]:
    """The writes of one change's sources and past facts (`sources`: the current ones, `read_sources`): each touched
    key gets the change's `source` (deleted when the change empties the field or deletes the document), and every
    fact the change ends is kept (`ended_facts`). A change without a source (an undo) writes neither."""
    if source is None:
        return []
    ops = []
    for skey, field in touched_sources(kind, key, before, after).items():
        present = after is not None and (field is None or _filled(after.get(field)))
        ops.append(PutOp(namespace(SOURCES, user_id), skey, dict(source) if present else None, index=False))
    facts = ended_facts(kind, key, before, after, sources, source["change_id"], source["said_at"])
    ops.extend(PutOp(namespace(PAST, user_id), pkey, fact, index=False) for pkey, fact in facts.items())
    return ops


def undo_ops(user_id: str, sources_before: Mapping[str, Any] | None, undone_id: str, undone_fields: Sequence[str | None]) -> list[PutOp]:
    """The writes an undo makes besides the document: the sources the undone change replaced, as they were
    (`sources_before` from its history entry), and the deletion of the past facts it made."""
    ops = [PutOp(namespace(SOURCES, user_id), skey, value, index=False) for skey, value in (sources_before or {}).items()]
    ops.extend(PutOp(namespace(PAST, user_id), past_key(undone_id, field), None, index=False) for field in undone_fields)
    return ops


def now_iso() -> str:
    """The current time, ISO 8601 in UTC."""
    return datetime.now(timezone.utc).isoformat()


def current_source(store: BaseStore, user_id: str, kind: MemoryKind, key: str, field: str | None = None) -> dict[str, Any] | None:
    """The source of the current value of a memory (a collection's document, or a field of a single document)."""
    item = store.get(namespace(SOURCES, user_id), source_key(kind.name, key, None if kind.collection else field))
    return item.value if item else None


def all_sources(store: BaseStore, user_id: str) -> dict[str, dict[str, Any]]:
    """Every source record of the user, by source key."""
    return {item.key: item.value for item in search_all(store, namespace(SOURCES, user_id)) if isinstance(item.value, dict)}


def past_facts(store: BaseStore, user_id: str, kind: MemoryKind | None = None) -> list[Item]:
    """The user's past facts (of one kind, when given), the most recently ended first."""
    items = [
        item for item in search_all(store, namespace(PAST, user_id))
        if isinstance(item.value, dict) and (kind is None or item.value.get("kind") == kind.name)
    ]
    return sorted(items, key=lambda item: (str(item.value.get("valid_to") or ""), item.key), reverse=True)
