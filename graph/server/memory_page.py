"""What the memory page shows and changes: one user's memories, read and edited on any LangGraph store.

Every edit goes the way the agent's own do (`graph.memory.changes.commit_changes`): checked against the
memory's stored schema first, secrets redacted, written in one batch with its history entry, and so undoable
like any other change. An edit may name the document it started from (`base`); if the agent or another tab
changed the document since, the edit is refused rather than overwriting that change. A stored document that
does not fit its schema (written before writes were checked, or by hand) is shown with what is wrong with it
(`problem`), so that the page can show it as such and offer to delete it.
"""

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import BaseStore, Item

from graph.backends.atomic import ConflictError
from graph.memory.changes import (
    CLOSED_STATUSES,
    ChangeContext,
    IrreversibleChangeError,
    MemoryChange,
    UnknownChangeError,
    commit_changes,
    document_problem,
    list_history,
    undo_change,
)
from graph.memory.index_outage import search_by_meaning
from graph.memory.kinds import INSTRUCTIONS, PROFILE, TODO, MemoryKind
from graph.memory.selection import deadline_of
from graph.memory.store import namespace, read_kind
from graph.server.limits import MAX_STORE_VALUE_BYTES, json_size

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


# The kinds the page has panels of its own for; any other kind is shown from its JSON schema.
OWN_PANELS = (TODO.name, PROFILE.name, INSTRUCTIONS.name)


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
        "summary_field": kind.summary_field,
        "schema": kind.schema.model_json_schema(),
    }


def _document(store: BaseStore, kind: MemoryKind, user_id: str) -> Item | None:
    return store.get(namespace(kind, user_id), kind.key)


def _problem(kind: MemoryKind, item: Item | None) -> str | None:
    return document_problem(kind, item.key, item.value) if item else None


def _deadline(item: Item) -> float:
    deadline = deadline_of(item.value)
    return deadline.timestamp() if deadline else float("inf")


def open_first(items: list[Item]) -> list[Item]:
    """ToDos in the order the page lists them: open ones first, then by deadline (none last), then oldest first."""
    return sorted(items, key=lambda item: (item.value.get("status") in CLOSED_STATUSES, _deadline(item)))


def read_memories(
    store: BaseStore, user_id: str, kinds: Sequence[MemoryKind], history_shown: int = HISTORY_SHOWN
) -> dict[str, Any]:
    """Everything the page shows for one user: profile, ToDos (open first), instructions and history (newest first),
    with why a stored profile or instructions does not fit its schema (None when it does); the memory `kinds`, and
    the documents of every kind the page has no panel of its own for, by kind name."""
    profile = _document(store, PROFILE, user_id)
    instructions = _document(store, INSTRUCTIONS, user_id)
    history = list_history(store, user_id)
    return {
        "user_id": user_id,
        "profile": profile.value if profile else None,
        "profile_problem": _problem(PROFILE, profile),
        "todos": [document_entry(TODO, item) for item in open_first(read_kind(store, TODO, user_id))],
        "instructions": instructions.value if instructions else None,
        "instructions_problem": _problem(INSTRUCTIONS, instructions),
        "history": history[::-1][:history_shown],
        "history_total": len(history),
        "kinds": [kind_entry(kind) for kind in kinds],
        "documents": {
            kind.name: [document_entry(kind, item) for item in read_kind(store, kind, user_id)]
            for kind in kinds
            if kind.name not in OWN_PANELS
        },
    }


def _mentions(value: dict[str, Any], words: str) -> bool:
    text = " ".join([str(value.get("task", "")), *map(str, value.get("solutions") or []), str(value.get("status"))])
    return words.casefold() in text.casefold()


def search_todos(store: BaseStore, user_id: str, query: str, limit: int) -> dict[str, Any]:
    """The user's ToDos that best match `query`: by meaning when the store has a semantic index, else by text.

    `semantic` says which: with an index the store scores every item and the best `limit` come back; without
    one (or while it fails, `graph.memory.index_outage`), the ToDos whose task, solutions or status contain
    the words come back, open first.
    """
    ranked = search_by_meaning(store, namespace(TODO, user_id), query, limit)
    if any(item.score is not None for item in ranked):
        return {"semantic": True, "todos": [document_entry(TODO, item) for item in ranked]}
    found = [item for item in open_first(read_kind(store, TODO, user_id)) if _mentions(item.value, query)]
    return {"semantic": False, "todos": [document_entry(TODO, item) for item in found[:limit]]}


def _changed_since_shown(kind: MemoryKind) -> PageError:
    return PageError(
        409, f"Your {kind.label} changed since the page showed it (the agent or another tab edited it); "
        "look at the new version and make your change again."
    )


def _check_base(base: Any, current: dict[str, Any] | None, kind: MemoryKind) -> None:
    if base is not NO_BASE and base != current:
        raise _changed_since_shown(kind)


def _commit(store: BaseStore, user_id: str, kind: MemoryKind, change: MemoryChange, message: str) -> dict[str, Any]:
    """Check the new document against its schema, then commit the change like the agent does; what was saved."""
    if (size := json_size(change.after)) > MAX_STORE_VALUE_BYTES:
        raise PageError(413, f"The {kind.label} is {size:,} bytes of JSON; the limit is {MAX_STORE_VALUE_BYTES:,}.")
    if change.after is not None and (problem := document_problem(kind, change.key, change.after)):
        raise PageError(422, f"The {kind.label} was not saved: {problem}.")
    context = ChangeContext(thread_id="", message=message, seed=f"memory-page/{uuid.uuid4()}")
    try:
        saved, secrets = commit_changes(store, user_id, kind, [change], context)
    except ConflictError:
        raise _changed_since_shown(kind) from None
    return {"saved": bool(saved), "value": saved[0].after if saved else change.before, "secrets": sorted(secrets)}


def _fields(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PageError(400, f"Send the {what} as a JSON object in `value`.")
    return value


def _todo(store: BaseStore, user_id: str, key: str) -> Item:
    item = store.get(namespace(TODO, user_id), key)
    if item is None:
        raise PageError(404, "There is no such ToDo on your list (it may have been deleted).")
    return item


def edit_todo(store: BaseStore, user_id: str, key: str, fields: Any, base: Any = NO_BASE) -> dict[str, Any]:
    """Change some fields of one of the user's ToDos (marking it done is `{"status": "done"}`)."""
    fields = _fields(fields, "ToDo's fields")
    current = _todo(store, user_id, key).value
    _check_base(base, current, TODO)
    message = f"Changed {', '.join(sorted(name.replace('_', ' ') for name in fields)) or 'nothing'} {SOURCE}"
    return _commit(store, user_id, TODO, MemoryChange("updated", key, current, {**current, **fields}), message)


def delete_todo(store: BaseStore, user_id: str, key: str, base: Any = NO_BASE) -> dict[str, Any]:
    """Delete one of the user's ToDos (the history keeps it, so it can be undone)."""
    current = _todo(store, user_id, key).value
    _check_base(base, current, TODO)
    return _commit(store, user_id, TODO, MemoryChange("deleted", key, current, None), f"Deleted {SOURCE}")


def _replace(store: BaseStore, user_id: str, kind: MemoryKind, key: str, before: Any, after: Any, base: Any) -> dict:
    _check_base(base, before, kind)
    change = MemoryChange("updated" if before is not None else "created", key, before, after)
    return _commit(store, user_id, kind, change, f"Edited {SOURCE}")


def save_profile(store: BaseStore, user_id: str, value: Any, base: Any = NO_BASE) -> dict[str, Any]:
    """Replace the user's profile with `value` (a whole `Profile` document)."""
    current = _document(store, PROFILE, user_id)
    profile = _fields(value, "profile")
    return _replace(store, user_id, PROFILE, PROFILE.key, current.value if current else None, profile, base)


def save_instructions(store: BaseStore, user_id: str, value: Any, base: Any = NO_BASE) -> dict[str, Any]:
    """Replace the user's instructions with `value` (`{"memory": text}`)."""
    current = _document(store, INSTRUCTIONS, user_id)
    document = _fields(value, "instructions")
    return _replace(store, user_id, INSTRUCTIONS, INSTRUCTIONS.key, current.value if current else None, document, base)


def undo(store: BaseStore, user_id: str, change_id: str) -> dict[str, Any]:
    """Undo one change from the user's history; returns the history entry recording the undo."""
    try:
        return undo_change(store, user_id, change_id)
    except UnknownChangeError:
        raise PageError(404, "There is no such change in your history.") from None
    except IrreversibleChangeError as error:
        detail = str(error)
        raise PageError(409, f"{detail[:1].upper()}{detail[1:]}.") from None
