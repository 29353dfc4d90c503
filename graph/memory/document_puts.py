"""How a memory document is written to the store: with its kind's index fields, and with a TTL if its status
expires it.

Every write of a document builds its store operation here (`document_put`): a change and its undo
(`graph.memory.changes`), and the index's second write of a document saved while the index was down
(`graph.memory.index_outage`), so that the index fields and the expiry always come from the kind, never from
anything stored. A document whose status is one of its kind's `expiring_statuses` (the ToDos'
"archived"; done ones move to the done log instead, `graph.memory.done_log`) expires after MAISTRO_DONE_TODO_TTL_DAYS; any other never does.
"""

from typing import Any

from langgraph.store.base import PutOp

from graph.memory.kinds import MemoryKind
from graph.settings import current_settings

MINUTES_PER_DAY = 24 * 60


def ttl_for(kind: MemoryKind, value: dict | None, days: float | None = None) -> float | None:
    """The TTL in minutes to store a memory document with: one whose status is among its kind's
    `expiring_statuses` expires (0 days keeps it), any other never does.

    `days` is MAISTRO_DONE_TODO_TTL_DAYS, read from the settings unless given (a caller writing many reads it once).
    """
    if not (kind.expiring_statuses and value and value.get(kind.status_field) in kind.expiring_statuses):
        return None
    days = current_settings().done_todo_ttl_days if days is None else days
    return days * MINUTES_PER_DAY if days > 0 else None


def document_put(kind: MemoryKind, namespace: tuple[str, ...], key: str, value: dict[str, Any] | None) -> PutOp:
    """The store operation writing `value` (None: deleting it) as the `kind` document at `namespace` / `key`."""
    return PutOp(namespace, key, value, index=list(kind.indexed_fields) or False, ttl=ttl_for(kind, value))
