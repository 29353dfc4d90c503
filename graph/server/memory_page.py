"""What the memory page shows and changes: one user's memories of every declared kind, read and edited on any
LangGraph store.

Every kind is handled the same way, from its `MemoryKind` and JSON schema: a collection's documents can be
added, edited and deleted; a single document or a text kind is edited whole. Every edit goes the way the
agent's own do (`graph.memory.changes.commit_changes`): checked against the memory's stored schema first
(a document that does not fit is refused with HTTP 400 and one sentence), secrets redacted, written in one
batch with its history entry, and so undoable like any other change. An edit may name the document it
started from (`base`); if the agent or another tab changed the document since, the edit is refused with 409
rather than overwriting that change. A stored document that does not fit its schema (written before writes
were checked, or by hand) is shown with what is wrong with it (`problem`), so that the page can show it as
such and offer to delete or replace it.
"""

import hashlib
import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import BaseStore, Item

from graph.backends.atomic import ConflictError
from graph.memory.changes import (
    ChangeContext,
    IrreversibleChangeError,
    MemoryChange,
    UnknownChangeError,
    commit_changes,
    document_problem,
    undo_change,
)
from graph.memory.done_log import logged_kinds, read_counts
from graph.memory.history import history_page, latest_change
from graph.memory.index_outage import search_by_meaning
from graph.memory.kinds import MemoryKind, UnknownKindError, kind_named
from graph.memory.pending import list_pending
from graph.memory.provenance import all_sources
from graph.memory.selection import deadline_of
from graph.memory.store import namespace, read_kind
from graph.memory.text_diff import document_diff
from graph.server.limits import MAX_STORE_VALUE_BYTES, json_size
from graph.settings import current_settings

# Where page edits say they came from, in the history.
SOURCE = "on the memory page"
# How many history entries (newest first) the page gets unless it asks for more.
HISTORY_SHOWN = 50
# The `base` of an edit that names none: the edit applies to whatever is stored.
NO_BASE = object()


@dataclass
class PageError(Exception):
    """A request the page cannot carry out: the HTTP status, one sentence saying why, and any response headers."""

    status: int
    detail: str
    headers: dict[str, str] = field(default_factory=dict)


def page_kind(kinds: Sequence[MemoryKind], name: str) -> MemoryKind:
    """The declared kind called `name`; a 404 when there is none."""
    try:
        return kind_named(kinds, name)
    except UnknownKindError:
        raise PageError(404, f"There is no memory kind called {name!r} on this server.") from None


def document_entry(kind: MemoryKind, item: Item) -> dict[str, Any]:
    """A document as the page gets it: store key, document, timestamps, and why it does not fit its schema (or None)."""
    return {
        "key": item.key,
        "value": item.value,
        "created_at": item.created_at.isoformat(),
        "updated_at": item.updated_at.isoformat(),
        "problem": document_problem(kind, item.key, item.value),
    }


def kind_entry(kind: MemoryKind) -> dict[str, Any]:
    """What the page knows of a memory kind: its names, its shape and its documents' JSON schema."""
    return {
        "name": kind.name,
        "label": kind.label,
        "title": kind.title,
        "description": kind.description,
        "collection": kind.collection,
        "text": kind.text,
        "key": kind.key,
        "summary_field": kind.summary_field,
        "status_field": kind.status_field,
        "open_statuses": list(kind.open_statuses),
        "deadline_field": kind.deadline_field,
        "searchable": bool(kind.indexed_fields),
        "max_chars": kind.max_chars,
        "schema": kind.schema.model_json_schema(),
    }


def _deadline(kind: MemoryKind, item: Item) -> float:
    deadline = deadline_of(item.value, kind.deadline_field) if kind.deadline_field else None
    return deadline.timestamp() if deadline else float("inf")


def open_first(kind: MemoryKind, items: list[Item]) -> list[Item]:
    """A kind's documents in the order the page lists them: open ones first (by the kind's `status_field`), then by
    its `deadline_field` (none last), then oldest first; a kind without those fields keeps the order given."""
    return sorted(items, key=lambda item: (not kind.is_open(item.value), _deadline(kind, item)))


def read_memories(
    store: BaseStore, user_id: str, kinds: Sequence[MemoryKind], history_shown: int = HISTORY_SHOWN
) -> dict[str, Any]:
    """Everything the page shows for one user: the memory `kinds`, the documents of each by kind name (open first),
    each with why it does not fit its schema (None when it does), and the history: its newest `history_shown`
    entries (newest first; a free-text kind's with its `diff`, `entry_with_diff`) and how many items it holds; and
    the updates that failed, kept as pending changes (`graph.memory.pending`), oldest first; and the source of each
    memory's current value, by source key (`graph.memory.provenance`), which outlives the history."""
    history = history_page(store, user_id, history_shown)
    text_kinds = {kind.name for kind in kinds if kind.text}
    return {
        "user_id": user_id,
        "kinds": [kind_entry(kind) for kind in kinds],
        "documents": {
            kind.name: [document_entry(kind, item) for item in open_first(kind, read_kind(store, kind, user_id))]
            for kind in kinds
        },
        "history": [entry_with_diff(entry, text_kinds) for entry in history.entries],
        "history_total": history.total,
        "pending": [pending.model_dump() for pending in list_pending(store, user_id)],
        "sources": all_sources(store, user_id),
    }


def entry_with_diff(entry: dict[str, Any], text_kinds: set[str]) -> dict[str, Any]:
    """A history entry as the page gets it: a change to a free-text kind (the instructions) with the sentences it
    removed ("- …") and added ("+ …") in full, as `diff` (`graph.memory.text_diff`)."""
    if entry["kind"] not in text_kinds:
        return entry
    return {**entry, "diff": document_diff(entry["before"], entry["after"])}


def memories_version(store: BaseStore, user_id: str, kinds: Sequence[MemoryKind], history_shown: int) -> str:
    """An ETag that changes whenever what `read_memories` returns may have changed, read at a cost that does not
    grow with the history: its newest entry (every change of a memory writes one, newer than the rest) and the TTL
    sweep's period, so that what no change records shows within MAISTRO_TTL_SWEEP_MINUTES: done ToDos that
    expired, and history entries imported without a change of a document (the page's count); the pending changes
    (a few, written without a history entry); and the done logs' counts, which grow when finished documents leave
    their list (`graph.memory.done_log`, no history entry)."""
    newest = latest_change(store, user_id) or {}
    period = int(time.time() // (current_settings().ttl_sweep_minutes * 60))
    pending = [entry.id for entry in list_pending(store, user_id)]
    logged = [sum(read_counts(store, user_id, kind)[0].values()) for kind in logged_kinds(kinds)]
    parts = [user_id, [kind.name for kind in kinds], history_shown, newest.get("id"), period, pending, logged]
    return f'"{hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]}"'


def _texts(value: Any) -> list[str]:
    """Every string (and number) in a document, nested ones included."""
    if isinstance(value, dict):
        return [text for item in value.values() for text in _texts(item)]
    if isinstance(value, list):
        return [text for item in value for text in _texts(item)]
    return [] if value is None else [str(value)]


def _mentions(value: Any, words: str) -> bool:
    return words.casefold() in " ".join(_texts(value)).casefold()


def _found(kind: MemoryKind, item: Item) -> dict[str, Any]:
    return {"kind": kind.name, **document_entry(kind, item)}


def search_memories(
    store: BaseStore, user_id: str, kinds: Sequence[MemoryKind], query: str, limit: int
) -> dict[str, Any]:
    """The user's documents of every searchable kind (one with `indexed_fields`) that best match `query`, each
    with its kind's name: by meaning when the store has a semantic index, else by text.

    `semantic` says which: with an index the store scores every document and the best `limit` of all kinds come
    back, best first; without one (or while it fails, `graph.memory.index_outage`), the documents that contain
    the words anywhere come back, open first.
    """
    searched = [kind for kind in kinds if kind.indexed_fields]
    ranked = [
        (kind, item) for kind in searched for item in search_by_meaning(store, namespace(kind, user_id), query, limit)
    ]
    scored = [(kind, item) for kind, item in ranked if item.score is not None]
    if scored:
        best = sorted(scored, key=lambda found: found[1].score, reverse=True)[:limit]
        return {"semantic": True, "results": [_found(kind, item) for kind, item in best]}
    found = [
        (kind, item)
        for kind in searched
        for item in open_first(kind, read_kind(store, kind, user_id))
        if _mentions(item.value, query)
    ]
    return {"semantic": False, "results": [_found(kind, item) for kind, item in found[:limit]]}


def _changed_since_shown(kind: MemoryKind) -> PageError:
    return PageError(
        409, f"Your {kind.label} changed since the page showed it (the agent or another tab edited it); "
        "look at the new version and make your change again."
    )


def _check_base(base: Any, current: dict[str, Any] | None, kind: MemoryKind) -> None:
    if base is not NO_BASE and base != current:
        raise _changed_since_shown(kind)


def _message(change: MemoryChange) -> str:
    """What the history says of a page edit: what was added, which fields changed, or what was deleted."""
    if change.action == "created":
        return f"Added {SOURCE}"
    if change.action == "deleted":
        return f"Deleted {SOURCE}"
    changed = sorted(name.replace("_", " ") for name in change.changed_fields())
    return f"Changed {', '.join(changed) or 'nothing'} {SOURCE}"


def _commit(store: BaseStore, user_id: str, kind: MemoryKind, change: MemoryChange) -> dict[str, Any]:
    """Check the new document against its schema, then commit the change like the agent does; what was saved."""
    if (size := json_size(change.after)) > MAX_STORE_VALUE_BYTES:
        raise PageError(413, f"The {kind.label} is {size:,} bytes of JSON; the limit is {MAX_STORE_VALUE_BYTES:,}.")
    if change.after is not None and (problem := document_problem(kind, change.key, change.after)):
        raise PageError(400, f"The {kind.label} was not saved: {problem}.")
    context = ChangeContext(thread_id="", message=_message(change), seed=f"memory-page/{uuid.uuid4()}")
    try:
        saved, secrets = commit_changes(store, user_id, kind, [change], context)
    except ConflictError:
        raise _changed_since_shown(kind) from None
    return {
        "saved": bool(saved),
        "kind": kind.name,
        "key": change.key,
        "value": saved[0].after if saved else change.before,
        "secrets": sorted(secrets),
    }


def _document_value(value: Any, kind: MemoryKind) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PageError(400, f"Send the {kind.label} as a JSON object in `value`.")
    return value


def _stored(store: BaseStore, user_id: str, kind: MemoryKind, key: str, base: Any) -> dict[str, Any] | None:
    """The document stored under `key` (None for a single document not written yet), after the version check.

    A collection's document that is not there is a 404, or a 409 when the page showed it (another tab deleted
    it); a single document lives under its kind's key only.
    """
    if not kind.collection and key != kind.key:
        raise PageError(404, f"Your {kind.label} is kept under the key {kind.key!r} only.")
    item = store.get(namespace(kind, user_id), key)
    current = item.value if item else None
    _check_base(base, current, kind)
    if current is None and kind.collection:
        raise PageError(404, f"There is no such {kind.label} in your memories (it may have been deleted).")
    return current


def add_document(store: BaseStore, user_id: str, kind: MemoryKind, value: Any) -> dict[str, Any]:
    """Add a document to one of the user's collections, under a new key."""
    if not kind.collection:
        raise PageError(400, f"Your {kind.label} is one document: save it rather than adding another.")
    change = MemoryChange("created", str(uuid.uuid4()), None, _document_value(value, kind))
    return _commit(store, user_id, kind, change)


def save_document(
    store: BaseStore, user_id: str, kind: MemoryKind, key: str, value: Any, base: Any = NO_BASE
) -> dict[str, Any]:
    """Replace one of the user's documents with `value` (a whole document; a single document not yet written is
    created)."""
    document = _document_value(value, kind)
    current = _stored(store, user_id, kind, key, base)
    return _commit(store, user_id, kind, MemoryChange("updated" if current else "created", key, current, document))


def edit_document(
    store: BaseStore, user_id: str, kind: MemoryKind, key: str, fields: Any, base: Any = NO_BASE
) -> dict[str, Any]:
    """Change some fields of one of the user's documents (marking a ToDo done is `{"status": "done"}`)."""
    fields = _document_value(fields, kind)
    current = _stored(store, user_id, kind, key, base)
    after = {**(current or {}), **fields}
    return _commit(store, user_id, kind, MemoryChange("updated" if current else "created", key, current, after))


def delete_document(store: BaseStore, user_id: str, kind: MemoryKind, key: str, base: Any = NO_BASE) -> dict[str, Any]:
    """Delete one of the user's documents (the history keeps it, so it can be undone)."""
    current = _stored(store, user_id, kind, key, base)
    if current is None:
        raise PageError(404, f"You have no {kind.label} to delete.")
    return _commit(store, user_id, kind, MemoryChange("deleted", key, current, None))


def undo(store: BaseStore, user_id: str, change_id: str, kinds: Sequence[MemoryKind]) -> dict[str, Any]:
    """Undo one change from the user's history; returns the history entry recording the undo."""
    try:
        return undo_change(store, user_id, change_id, kinds)
    except UnknownChangeError:
        raise PageError(404, "There is no such change in your history.") from None
    except IrreversibleChangeError as error:
        detail = str(error)
        raise PageError(409, f"{detail[:1].upper()}{detail[1:]}.") from None
