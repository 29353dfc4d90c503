"""Changes to the memories: every write is redacted, recorded in the user's history, and can be undone.

A history entry (`schemas.HistoryEntry`) holds the time, thread, memory kind, store key, action, the
document before and after, and the user's message that caused it (secrets redacted). Undoing a change writes
the document's earlier state back and records that as a change of its own, so an undo can be undone too.
Done and archived ToDos are written with a TTL (MAISTRO_DONE_TODO_TTL_DAYS); open ones never expire.
"""

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Literal

from langgraph.store.base import BaseStore, PutOp

from graph.memory.redaction import redact
from graph.memory.store import HISTORY, TODO, namespace, search_all
from graph.settings import current_settings
from schemas import HistoryEntry

ENTRY_NAMESPACE = uuid.UUID("0b8f6f5e-6a53-4b8e-9d0c-7c1e9a3d2f41")
CLOSED_STATUSES = ("done", "archived")
MINUTES_PER_DAY = 24 * 60


@dataclass(frozen=True)
class MemoryChange:
    """One change to a memory document (a `None` before means created, a `None` after means deleted)."""

    action: Literal["created", "updated", "deleted"]
    key: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None

    def changed_fields(self) -> list[str]:
        """Names of the fields whose value differs between before and after."""
        before, after = self.before or {}, self.after or {}
        return [name for name in {**before, **after} if before.get(name) != after.get(name)]


@dataclass(frozen=True)
class ChangeContext:
    """Where changes come from: the thread, the user's message, and a seed that makes entry ids replay-stable."""

    thread_id: str
    message: str
    seed: str


class UnknownChangeError(LookupError):
    """There is no change with that id (or no change at all) in the user's history."""


def ttl_for(kind: str, value: dict | None) -> float | None:
    """The TTL in minutes to store a memory document with: only closed ToDos expire (0 days keeps them)."""
    days = current_settings().done_todo_ttl_days
    if kind == TODO and value and value.get("status") in CLOSED_STATUSES and days > 0:
        return days * MINUTES_PER_DAY
    return None


def history_ops(
    user_id: str, kind: str, changes: Sequence[MemoryChange], context: ChangeContext, undoes: str | None = None
) -> list[PutOp]:
    """Store operations recording `changes` in the user's history (`undoes`: the change they revert)."""
    time = datetime.now(timezone.utc).isoformat()
    ops = []
    for order, change in enumerate(changes):
        entry = HistoryEntry(
            id=str(uuid.uuid5(ENTRY_NAMESPACE, f"{context.seed}/{kind}/{order}")),
            time=time,
            order=order,
            thread_id=context.thread_id,
            kind=kind,
            message=context.message,
            action=change.action,
            key=change.key,
            before=change.before,
            after=change.after,
            **({"undoes": undoes} if undoes else {}),
        )
        ops.append(PutOp(namespace(HISTORY, user_id), entry.id, entry.model_dump(exclude_unset=True), index=False))
    return ops


def record_changes(
    store: BaseStore,
    user_id: str,
    kind: str,
    changes: Sequence[MemoryChange],
    context: ChangeContext,
    undoes: str | None = None,
) -> list[dict[str, Any]]:
    """Write the changes (closed ToDos with their TTL) and their history entries in one batch; returns the entries.

    One batch means a memory is never half-written, and never changed without its history.
    """
    ns = namespace(kind, user_id)
    records = history_ops(user_id, kind, changes, context, undoes)
    store.batch([*(PutOp(ns, c.key, c.after, ttl=ttl_for(kind, c.after)) for c in changes), *records])
    return [record.value for record in records]


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
    store: BaseStore, user_id: str, kind: str, changes: Sequence[MemoryChange], context: ChangeContext
) -> tuple[list[MemoryChange], set[str]]:
    """Redact secrets, then write the changes with their history (see `record_changes`).

    Returns the changes as saved and the kinds of secret left out.
    """
    saved, secrets = redact_changes(changes)
    if saved:
        record_changes(store, user_id, kind, saved, context)
    return saved, secrets


def list_history(store: BaseStore, user_id: str) -> list[dict[str, Any]]:
    """The user's changes, oldest first."""
    entries = [item.value for item in search_all(store, namespace(HISTORY, user_id))]
    return sorted(entries, key=lambda entry: (entry["time"], entry["order"]))


def undo_change(store: BaseStore, user_id: str, change_id: str | None = None) -> dict[str, Any]:
    """Revert a change (the latest when no id is given) and return the history entry recording the undo."""
    history = list_history(store, user_id)
    target = next((e for e in reversed(history) if change_id in (None, e["id"])), None)
    if target is None:
        raise UnknownChangeError(f"no change {change_id!r} in the history" if change_id else "the history is empty")
    current = store.get(namespace(target["kind"], user_id), target["key"])
    restored = target["before"]
    action = "deleted" if restored is None else "created" if current is None else "updated"
    revert = MemoryChange(action, target["key"], current.value if current else None, restored)
    context = ChangeContext(thread_id="", message=f"undo {target['id']}", seed=f"undo/{target['id']}/{len(history)}")
    (entry,) = record_changes(store, user_id, target["kind"], [revert], context, undoes=target["id"])
    return entry
