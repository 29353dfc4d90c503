"""Changes to the memories: every write is redacted, recorded in the user's history, and can be undone.

A history entry (`schemas.HistoryEntry`) holds the time, thread, memory kind, store key, action, the
document before and after, and the user's message that caused it (secrets redacted). Undoing a change writes
the document's earlier state back and records that as a change of its own, so an undo can be undone too.
A document whose status its kind declares expiring (the ToDos' archived ones) is written with a TTL
(MAISTRO_DONE_TODO_TTL_DAYS, `graph.memory.document_puts`); any other never expires. A document marked done gets
its completion time (`graph.memory.completion`), and loses it when reopened.
A change and its history entry are one store batch, which this project's stores commit as one transaction
(`graph.backends.atomic`); undo writes nothing that does not fit the memory's schema.

Every change commits only if its document is still what the writer read (its `before`), and only once: the
batch also requires that its history entries (whose ids derive from the change's replay-stable seed) do
not exist yet. Both are checked in the batch's own transaction; when one fails, nothing is written and
`ConflictError` says which items moved. `committed_changes` finds what an earlier run with the same seed
already committed, so a replayed update answers from that instead of changing the memories again.
"""

import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Literal

from langgraph.store.base import BaseStore, GetOp, PutOp
from pydantic import ValidationError

from graph.memory.completion import stamped
from graph.memory.conditions import ConflictError, Unchanged
from graph.memory.document_puts import document_put
from graph.memory.done_log import logged_entry
from graph.memory.entries import UnknownChangeError, readable_entry
from graph.memory.history import find_change, latest_change, newest_history
from graph.memory.index_outage import write_saving_unindexed
from graph.memory.kinds import DEFAULT_MEMORY_KINDS, MemoryKind, UnknownKindError, kind_named, undeclared_kind
from graph.memory.provenance import (
    ended_facts,
    entry_source,
    now_iso,
    provenance_ops,
    read_sources,
    source_of,
    sources_before_of,
    stored_sources_before,
    touched_sources,
    undo_ops,
)
from graph.memory.redaction import redact
from graph.memory.store import HISTORY, namespace
from schemas import HistoryEntry

ENTRY_NAMESPACE = uuid.UUID("0b8f6f5e-6a53-4b8e-9d0c-7c1e9a3d2f41")
# How many history entries of one seed `committed_changes` asks for in one batch.
ENTRIES_PER_LOOKUP = 32
# Characters no stored string may hold, as a document's JSON (not ASCII-escaped) shows them: NUL (PostgreSQL cannot
# store it), which JSON writes as the escape \u0000 (one not itself after an escaped backslash), and lone surrogates
# (not UTF-8), which Python's JSON writes as they are. Searched in the text the schema check parses anyway (the
# escape's pattern only where the text holds one: it is slow to try at every character).
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def _filled(value: Any) -> Any:
    """A field's value, with every kind of empty value as None."""
    return None if value is None or value in ("", [], {}) else value


def _comparable(value: Any) -> Any:
    """A document's value as `same_document` compares it: text with whitespace collapsed and case folded, empty
    values left out of objects."""
    if isinstance(value, str):
        return " ".join(value.split()).casefold()
    if isinstance(value, list):
        return [_comparable(item) for item in value]
    if isinstance(value, dict):
        return {name: _comparable(item) for name, item in value.items() if _filled(item) is not None}
    return value


def same_document(first: Any, second: Any) -> bool:
    """Whether two documents carry the same content: equal once every text has its whitespace collapsed and its
    case folded, an empty value (None, "", [], {}) counting as missing.

    Anything else that differs (a deadline, a solution, a status) makes them two documents, even under the
    same summary: "Call mom" due Monday and "Call mom" due Friday are two tasks.
    """
    return _comparable(first) == _comparable(second)


@dataclass(frozen=True)
class MemoryChange:
    """One change to a memory document (a `None` before means created, a `None` after means deleted)."""

    action: Literal["created", "updated", "deleted"]
    key: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None

    def changed_fields(self) -> list[str]:
        """Names of the fields whose value differs between before and after (an empty value, None, "", [] or {},
        is the same as a missing one: a new profile with no interests has not changed its interests)."""
        before, after = self.before or {}, self.after or {}
        return [name for name in {**before, **after} if _filled(before.get(name)) != _filled(after.get(name))]


@dataclass(frozen=True)
class ChangeContext:
    """Where changes come from: the thread, the user's message (redacted), a seed that makes entry ids replay-stable;
    for the changes' sources (`graph.memory.provenance`) the message's id, when it was said (ISO 8601; "": when the
    change is written) and the model that proposed them ("" for none); `settles`, for the retry of a pending change
    (`graph.memory.pending.settle_op`), is the condition and the delete that remove it in the batch that saves."""

    thread_id: str
    message: str
    seed: str
    message_id: str = ""
    said_at: str = ""
    model: str = ""
    settles: tuple[Unchanged, PutOp] | None = None


class IrreversibleChangeError(ValueError):
    """The change cannot be undone: the document it would restore does not fit its memory's schema, or the
    document kept changing while the undo was being written (`UndoConflictError`)."""


class UndoConflictError(IrreversibleChangeError):
    """Another writer changed the document while the undo was written, twice in a row: nothing was written."""


def validation_problem(error: ValidationError) -> str:
    """The first problem pydantic found, in a few words: `field.path: message`."""
    detail = error.errors()[0]
    where = ".".join(str(part) for part in detail["loc"])
    return f"{where}: {detail['msg']}" if where else detail["msg"]


def document_problem(kind: MemoryKind, key: str, document: Any) -> str | None:
    """Why `document` may not be stored as the user's `kind` memory under `key`, in a few words; None if it may.

    It must match the kind's stored schema exactly (`MemoryKind.stored_schema`: no unknown fields, no
    coerced types), sit under the fixed key of a one-document memory, hold no NUL or lone surrogate, and a free
    text must fit the kind's `max_chars`.
    """
    if not kind.collection and key != kind.key:
        return f'the {kind.label} is kept under the key "{kind.key}" only'
    try:
        text = json.dumps(document, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError):
        return "it is not JSON"
    if _LONE_SURROGATE.search(text) or ("\\u0000" in text and _NUL_ESCAPE.search(text)):
        return "it contains a NUL character or a lone surrogate"
    try:
        kind.stored_schema.model_validate_json(text)
    except ValidationError as error:
        return validation_problem(error)
    return kind.text_problem(document["memory"]) if kind.text else None


def entry_id(seed: str, kind: MemoryKind, order: int) -> str:
    """The id of the order-th history entry of the changes made to `kind` under `seed`: the same on every replay."""
    return str(uuid.uuid5(ENTRY_NAMESPACE, f"{seed}/{kind.name}/{order}"))


def history_ops(
    user_id: str,
    kind: MemoryKind,
    changes: Sequence[MemoryChange],
    context: ChangeContext,
    undoes: str | None = None,
    provenance: Sequence[dict[str, Any]] = (),
) -> list[PutOp]:
    """Store operations recording `changes` in the user's history (`undoes`: the change they revert; `provenance`:
    each change's `source` and `sources_before`, `change_provenance`)."""
    time = datetime.now(timezone.utc).isoformat()
    ops = []
    for order, change in enumerate(changes):
        entry = HistoryEntry(
            id=entry_id(context.seed, kind, order),
            time=time,
            order=order,
            thread_id=context.thread_id,
            kind=kind.name,
            message=context.message,
            action=change.action,
            key=change.key,
            before=change.before,
            after=change.after,
            **({"undoes": undoes} if undoes else {}),
            **(provenance[order] if provenance else {}),
        )
        ops.append(PutOp(namespace(HISTORY, user_id), entry.id, entry.model_dump(exclude_unset=True), index=False))
    return ops


def change_source(context: ChangeContext, kind: MemoryKind, order: int, said_at: str = "") -> dict[str, str]:
    """The source of the order-th change to `kind` under `context` (`graph.memory.provenance.source_of`), dated
    `said_at`, else the context's time, else now."""
    return source_of(entry_id(context.seed, kind, order), context.thread_id, context.message_id, context.message,
                     said_at or context.said_at or now_iso(), context.model)


def change_provenance(
    store: BaseStore, user_id: str, kind: MemoryKind, changes: Sequence[MemoryChange], context: ChangeContext, undoes: str | None
) -> tuple[list[dict[str, Any]], list[PutOp]]:
    """Each change's `source` and `sources_before` for its history entry, and the writes of the memories' sources and
    past facts (`graph.memory.provenance`): a change gets its context's source; an undo gets none (the undo restores
    the sources the undone change replaced). Only the sources of documents that exist are read: a new one has none."""
    touched = [touched_sources(kind, change.key, change.before, change.after) for change in changes]
    replacing = [key for change, keys in zip(changes, touched, strict=True) if change.before is not None for key in keys]
    current = {key: None for keys in touched for key in keys} | read_sources(store, user_id, replacing)
    said_at = context.said_at or now_iso()
    entries, ops = [], []
    for order, (change, keys) in enumerate(zip(changes, touched, strict=True)):
        before = {key: current[key] for key in keys}
        if undoes is not None:
            entries.append({"sources_before": stored_sources_before(before)})
            continue
        source = change_source(context, kind, order, said_at)
        entries.append({"source": entry_source(source), "sources_before": stored_sources_before(before)})
        ops.extend(provenance_ops(user_id, kind, change.key, change.before, change.after, source, current))
    return entries, ops


def record_changes(
    store: BaseStore,
    user_id: str,
    kind: MemoryKind,
    changes: Sequence[MemoryChange],
    context: ChangeContext,
    undoes: str | None = None,
    also: Sequence[PutOp] = (),
) -> list[dict[str, Any]]:
    """Write the changes (expiring ones with their TTL, `graph.memory.document_puts`), their history entries, their
    sources and the past facts they end (`change_provenance`), and `also`, in one batch; returns the entries.

    This project's stores commit a batch as one transaction (`graph.backends.atomic`): a memory is never
    half-written, and never changed without its history. The batch writes only if every changed document
    still holds its `before` and none of the entries exists yet; otherwise it raises `ConflictError`,
    writing nothing.
    """
    ns = namespace(kind, user_id)
    provenance, sourcing = change_provenance(store, user_id, kind, changes, context, undoes)
    records = history_ops(user_id, kind, changes, context, undoes, provenance)
    conditions = [
        *(Unchanged(ns, change.key, change.before) for change in changes),
        *(Unchanged(record.namespace, record.key, None) for record in records),
    ]
    puts = [*(document_put(kind, ns, change.key, change.after) for change in changes), *records, *sourcing, *also]
    if context.settles:
        conditions.append(context.settles[0])
        puts.append(context.settles[1])
    write_saving_unindexed(store, conditions, puts, kind)
    return [record.value for record in records]


def committed_changes(store: BaseStore, user_id: str, kind: MemoryKind, seed: str) -> list[MemoryChange]:
    """The changes to `kind` already committed under `seed` (by an earlier run of a replayed update), in order.

    They are read back from their history entries, whose ids derive from the seed (`entry_id`); an empty
    list means nothing was committed under it.
    """
    ns = namespace(HISTORY, user_id)
    changes: list[MemoryChange] = []
    while True:
        orders = range(len(changes), len(changes) + ENTRIES_PER_LOOKUP)
        items = store.batch([GetOp(ns, entry_id(seed, kind, order)) for order in orders])
        for item in items:
            entry = readable_entry(item.value) if item else None
            if entry is None:
                return changes
            changes.append(MemoryChange(entry["action"], entry["key"], entry["before"], entry["after"]))


def redact_changes(changes: Sequence[MemoryChange]) -> tuple[list[MemoryChange], set[str]]:
    """The changes with secrets redacted from the new documents (dropping any that become no-ops), and what was found."""
    redacted: list[MemoryChange] = []
    found: set[str] = set()
    for change in changes:
        after, secrets = redact(change.after)
        found |= secrets
        if after != change.before:
            redacted.append(replace(change, after=after))
    return redacted, found


def commit_changes(
    store: BaseStore,
    user_id: str,
    kind: MemoryKind,
    changes: Sequence[MemoryChange],
    context: ChangeContext,
    *,
    trusted_completion: bool = False,
) -> tuple[list[MemoryChange], set[str]]:
    """Stamp completion times (`graph.memory.completion.stamped`; `trusted_completion`: an import's are kept), redact
    secrets, then write the changes with their history (see `record_changes`).

    Returns the changes as saved and the kinds of secret left out. Raises `ConflictError`, writing nothing,
    when a document is no longer what the change started from (another writer changed it since it was read)
    or the changes were already committed under the context's seed.
    """
    stamp_time = datetime.now(timezone.utc)
    changes = [
        replace(change, after=stamped(kind, change.before, change.after, stamp_time, trusted=trusted_completion))
        for change in changes
    ]
    saved, secrets = redact_changes(changes)
    if saved or context.settles:  # a retry that finds nothing left to change still settles its pending change
        record_changes(store, user_id, kind, saved, context)
    return saved, secrets


def list_history(store: BaseStore, user_id: str) -> list[dict[str, Any]]:
    """The user's every change, oldest first; stored values that are not history entries are left out (not deleted).

    It reads the whole history: readers that show part of it read only that (`graph.memory.history`).
    """
    return newest_history(store, user_id, None)[::-1]


def undo_change(
    store: BaseStore,
    user_id: str,
    change_id: str | None = None,
    kinds: Sequence[MemoryKind] = DEFAULT_MEMORY_KINDS,
) -> dict[str, Any]:
    """Revert a change (the latest when no id is given; an id or its first characters) and return the history entry
    recording the undo; it reads only that change and the latest one (`graph.memory.history`). The undo's entry
    id derives from both, so undoing the same change again once anything else changed is a change of its own.

    Raises `UnknownChangeError` when there is no such change (`AmbiguousChangeError` when several ids start
    with the characters given, `PrunedChangeError` when MAISTRO_HISTORY_KEEP may have pruned it), and
    `IrreversibleChangeError`, writing nothing, when the document the change started from does not fit its
    memory's schema (one of `kinds`, the graph's; default: the default kinds; a memory of a kind
    not declared is restored as it was stored). The undo commits only if the document is still what it read
    (`record_changes`); if another writer changed it in between, the undo
    reads it again and tries once more, then raises `UndoConflictError`, writing nothing.
    """
    try:
        return _undo_once(store, user_id, change_id, kinds)
    except ConflictError:
        pass  # another writer changed the document after the undo read it: read it again, once
    try:
        return _undo_once(store, user_id, change_id, kinds)
    except ConflictError as error:
        which = f"change {change_id[:8]}" if change_id else "the last change"
        raise UndoConflictError(
            f"{which} was not undone: the {error.failed[0].namespace[0]} kept changing while the undo was written; "
            "try again"
        ) from None


def _kind_of_change(entry: dict[str, Any], kinds: Sequence[MemoryKind]) -> tuple[MemoryKind, bool]:
    """The memory kind a history entry changed, and whether it is declared: a kind not declared is undone as it
    was stored (`undeclared_kind`), unless no memory can have its name."""
    try:
        return kind_named(kinds, entry["kind"]), True
    except UnknownKindError:
        pass
    try:
        return undeclared_kind(entry["kind"]), False
    except ValueError:
        raise IrreversibleChangeError(
            f"change {entry['id'][:8]} cannot be undone: no memory can be called {entry['kind']!r}"
        ) from None


def _undo_once(store: BaseStore, user_id: str, change_id: str | None, kinds: Sequence[MemoryKind]) -> dict[str, Any]:
    """Revert the change from the document as stored now; `ConflictError` if it changes before the commit."""
    latest = latest_change(store, user_id)
    target = find_change(store, user_id, change_id) if change_id else latest
    if target is None:
        raise UnknownChangeError("the history is empty")
    kind, declared = _kind_of_change(target, kinds)
    restored = target["before"]
    if declared and restored is not None and (problem := document_problem(kind, target["key"], restored)):
        raise IrreversibleChangeError(
            f"change {target['id'][:8]} cannot be undone: the {target['kind']} it would restore is invalid ({problem})"
        )
    current = store.get(namespace(kind, user_id), target["key"])
    if current is None and (logged := logged_entry(store, user_id, kind, target["key"], target["after"])) is not None:
        raise IrreversibleChangeError(
            f"change {target['id'][:8]} cannot be undone: the {kind.label} it finished has moved to the done log since "
            f"(finished {logged}; `maistro done` lists it)"
        )
    action = "deleted" if restored is None else "created" if current is None else "updated"
    revert = MemoryChange(action, target["key"], current.value if current else None, restored)
    context = ChangeContext(thread_id="", message=f"undo {target['id']}", seed=f"undo/{target['id']}/{latest['id']}")
    facts = ended_facts(kind, target["key"], target["before"], target["after"], {}, target["id"], "")
    restore = undo_ops(user_id, sources_before_of(kind, target), target["id"], [fact["field"] for fact in facts.values()])
    (entry,) = record_changes(store, user_id, kind, [revert], context, undoes=target["id"], also=restore)
    return entry
