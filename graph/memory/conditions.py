"""Writes that hold only if nothing changed: the `Unchanged` condition and the `ConflictError` a failed one raises.

The memory code puts `Unchanged` conditions in a store batch beside its puts (`graph.memory.changes`). A store
that checks them in the batch's own transaction says so with a true `checks_conditions` attribute (this
project's stores, `graph.backends.atomic`); any other store is checked by `write_unless_changed` itself.
"""

import threading
from collections.abc import Sequence
from typing import Any, NamedTuple

from langgraph.store.base import BaseStore, GetOp, PutOp

# Serialises the compare-and-write of stores that cannot check conditions themselves, within this process.
_unconditional_writes = threading.Lock()


class Unchanged(NamedTuple):
    """A batch condition: the item at `namespace` / `key` still holds `value` (None: there is no such item)."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any] | None


class ConflictError(RuntimeError):
    """Another writer changed items since they were read: the batch holding these conditions wrote nothing."""

    def __init__(self, failed: Sequence[Unchanged]) -> None:
        self.failed = list(failed)
        keys = ", ".join(condition.key for condition in self.failed)
        super().__init__(f"{len(self.failed)} item(s) changed since they were read ({keys}); nothing was written")


def checks_conditions(store: Any) -> bool:
    """Whether the store checks a batch's `Unchanged` conditions in the batch's own transaction."""
    return getattr(store, "checks_conditions", False) is True


def write_unless_changed(store: BaseStore, conditions: Sequence[Unchanged], puts: Sequence[PutOp]) -> None:
    """Write `puts` in one batch if every condition holds, else raise `ConflictError` and write nothing.

    This project's stores check the conditions in the batch's transaction. Any other store (the
    `langgraph dev` server's own) is read and written under a lock of this process instead, which covers
    every writer of that store going through here within the server's one process.
    """
    if checks_conditions(store):
        store.batch([*conditions, *puts])
        return
    with _unconditional_writes:
        stored = store.batch([GetOp(condition.namespace, condition.key) for condition in conditions])
        failed = [c for c, item in zip(conditions, stored, strict=True) if (item.value if item else None) != c.value]
        if failed:
            raise ConflictError(failed)
        store.batch(puts)
