"""What a turn's read and a forget need from a store that keeps a ToDo change log, and what such a read returns.

This project's SQL stores (`graph.backends.atomic`, `graph.backends.atomic_postgres`) keep one: their
database records which ToDo rows changed, so a turn reads the profile, the instructions and only the changed
ToDos in one statement (`read_memory_rows`), and forgetting a user also clears the log (`forget_user_items`).
Any other store (the `langgraph dev` server's own, `InMemoryStore`) is read and written through the
`BaseStore` API alone; `change_log` tells the two apart.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from langgraph.store.base import BaseStore, Item, PutOp


@dataclass(frozen=True)
class TodoChange:
    """A ToDo row that changed: its key, its version, and the item (None when it was deleted or has expired)."""

    key: str
    version: Any
    item: Item | None


@dataclass(frozen=True)
class MemoryRows:
    """What one read through the change log found: the ToDo changes (every ToDo when `whole`), the profile and
    instructions items (None when absent), and the mark to read the next changes from."""

    changes: list[TodoChange]
    profile: Item | None
    instructions: Item | None
    mark: Any
    whole: bool


@runtime_checkable
class ChangeLogStore(Protocol):
    """A store with a ToDo change log, read through it once `change_log_installed` is true."""

    change_log_installed: bool

    def read_memory_rows(self, user_id: str, mark: Any) -> MemoryRows:
        """The ToDos changed since `mark` (None: all of them), the profile and the instructions, in one read."""
        ...

    def forget_user_items(self, user_id: str, deletions: Sequence[PutOp]) -> None:
        """Delete the user's items (`deletions`) and their ToDos' log rows in one transaction."""
        ...


def change_log(store: BaseStore) -> ChangeLogStore | None:
    """The store, when it keeps a ToDo change log that was installed as it opened; else None (use its own API)."""
    if isinstance(store, ChangeLogStore) and store.change_log_installed:
        return store
    return None
