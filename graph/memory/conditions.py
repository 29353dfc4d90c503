"""Writes that hold only if nothing changed: the `Unchanged` condition and the `ConflictError` a failed one raises.

The memory code puts `Unchanged` conditions in a store batch beside its puts (`graph.memory.changes`). A store
that checks them in the batch's own transaction says so with a true `checks_conditions` attribute (this
project's stores, `graph.backends.atomic`); any other store is checked by the memory code itself.
"""

from collections.abc import Sequence
from typing import Any, NamedTuple


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
