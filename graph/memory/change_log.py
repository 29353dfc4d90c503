"""What a turn's read and a forget need from a store that keeps a change log, and what such a read returns.

This project's SQL stores (`graph.backends.atomic`, `graph.backends.atomic_postgres`) keep one: their
database records which memory rows changed (every namespace but the history), so a turn reads its single
documents and only the changed documents of each collection in one statement (`read_memory_rows`), and
forgetting a user also clears the log, the embeddings and the list index (`forget_user_items`), then overwrites
what the deletes freed (`erase_deleted`). They also keep a list index, so that the first
read of a long list returns only what a turn can show (`read_list_head`, `graph.backends.list_index`). Any other
store (the `langgraph dev` server's own, `InMemoryStore`) is read and written through the `BaseStore` API alone;
`change_log` tells the two apart.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple, Protocol, runtime_checkable

import orjson
from langgraph.store.base import BaseStore, Item

from graph.memory.kinds import MemoryKind


class StoredDocument(NamedTuple):
    """A changed document as the read returned it, not yet parsed: its value as JSON text, its creation and update
    times as the database writes them (ISO 8601 text) and as seconds since the epoch (what ranking orders by). A
    first read returns every document of a list, and a turn shows a few: `value` parses the JSON, `item` builds
    the store's `Item` (parsing the times), each only for the documents that need it."""

    namespace: tuple[str, ...]
    key: str
    json: str | bytes
    created_at: str
    updated_at: str
    created_epoch: float
    updated_epoch: float

    def value(self) -> dict[str, Any]:
        """The document's value, parsed."""
        return orjson.loads(self.json)

    def item(self, value: dict[str, Any]) -> Item:
        """The store's item of this document, with its (already parsed) `value`."""
        return Item(
            value=value, key=self.key, namespace=self.namespace, created_at=datetime.fromisoformat(self.created_at),
            updated_at=datetime.fromisoformat(self.updated_at),
        )


class CollectionChange(NamedTuple):
    """A collection's row that changed (a ToDo, a contact): its key, its version, and the document (None when it
    was deleted or has expired)."""

    key: str
    version: Any
    document: StoredDocument | None


@dataclass(frozen=True)
class MemoryRows:
    """What one read through the change log found: each collection's changes (every document of the collections
    in `whole`) and the mark to read its next changes from, and each single document's item (None when absent),
    by kind name; and the items asked for by namespace and key (`stored`, None when absent)."""

    changes: dict[str, list[CollectionChange]]
    documents: dict[str, Item | None]
    marks: dict[str, Any]
    whole: frozenset[str]
    stored: dict[tuple[tuple[str, ...], str], Item | None] = field(default_factory=dict)


@dataclass(frozen=True)
class ListHead:
    """What the first read of a long list returned (`ChangeLogStore.read_list_head`): the list's size and open
    documents, and the documents a turn's selection can pick, not yet parsed."""

    total: int
    open_total: int
    documents: list[StoredDocument]


class Erasure(NamedTuple):
    """What `ChangeLogStore.erase_deleted` did to the space deleted rows held (`done`), and what may still hold copies
    of them and why (`kept`): one sentence each."""

    done: tuple[str, ...]
    kept: tuple[str, ...]


@runtime_checkable
class ChangeLogStore(Protocol):
    """A store with a memory change log, read through it once `change_log_installed` is true."""

    change_log_installed: bool

    def read_memory_rows(
        self,
        user_id: str,
        kinds: Sequence[MemoryKind],
        marks: Mapping[str, Any],
        stored: Sequence[tuple[tuple[str, ...], str]] = (),
    ) -> MemoryRows:
        """The user's documents of `kinds` in one read: of each collection those changed since its mark in `marks`
        (without one: all of them), each single document, and the documents named by (namespace, key) in
        `stored`."""
        ...

    def forget_user_items(self, user_id: str, namespaces: Sequence[tuple[str, ...]]) -> dict[str, int]:
        """Delete every row of the user's `namespaces` (store items, embeddings, list-index and log rows) in one
        transaction; returns the rows deleted, by table."""
        ...

    def erase_deleted(self, tables: Sequence[str]) -> Erasure:
        """Overwrite what deleting rows of `tables` (this store's and its checkpointer's) freed in the database's
        files, as far as this process can; say what was done and what may still hold copies."""
        ...

    def read_list_head(
        self, user_id: str, kind: MemoryKind, terms: Sequence[str], recent: int, open_limit: int, *, least: int
    ) -> ListHead | None:
        """The counts of the user's list of `kind` and the documents a selection for `terms` can pick: the
        `recent` most recently changed, the `open_limit` most recent open ones, the open ones with a deadline, and
        those whose text fields may hold a term (`graph.backends.list_index`); None when the list holds fewer than
        `least` documents, its index is not complete, or a term cannot be narrowed in SQL."""
        ...


def change_log(store: BaseStore) -> ChangeLogStore | None:
    """The store, when it keeps a change log that was installed as it opened; else None (use its own API)."""
    if isinstance(store, ChangeLogStore) and store.change_log_installed:
        return store
    return None
