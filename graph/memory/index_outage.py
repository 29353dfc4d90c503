"""An outage of the semantic index is an outage of search, never of memory.

A store with a semantic index embeds an item's indexed fields inside the write, so an embeddings provider that
is unreachable, answers errors or cannot load its tokenizer fails the whole batch (LangGraph's stores call it
before they write anything, and this project's stores roll a failed batch back). `write_saving_unindexed`
then writes the same batch again without the index, plus a marker for every item it left unindexed (namespace
`("unindexed", <user label>)`): the memory, its history entry and the marker commit together, on any store
(SQLite, PostgreSQL, `langgraph dev`'s, Aegra's). Meanwhile `search_by_meaning` finds nothing and the callers
rank by their other signals. The log says once that the index is down, and once that it is back.

Marked items are indexed again (written once more, unchanged, with their index) after the next write of the
same user and memory kind that the index accepts (which looks for the user's markers: one read more per write, on
stores with an index), and by `reindex` (`maistro reindex`) for every user and every declared kind.

A marker is the agent's own bookkeeping, but it sits in a store that users also write to (a server's store API,
an import, an undo of a forged history entry), so nothing it holds is trusted: the item it stands for is read
from where it is filed alone (the user its namespace names, the kind and key its key names, `marked_item`), and
the index fields and TTL of the second write come from the kind (`graph.memory.document_puts`). A marker can thus
only ever name its own user's documents, and a malformed one is dropped with a log line. The markers' namespace is
refused by every user-facing path besides (`graph.memory.store.INTERNAL_NAMESPACES`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from langgraph.store.base import PutOp

from graph.memory.conditions import ConflictError, Unchanged, write_unless_changed
from graph.memory.document_puts import document_put
from graph.memory.kinds import DEFAULT_MEMORY_KINDS, RESERVED_NAMES, MemoryKind
from graph.memory.store import UNINDEXED, search_all

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore, Item

MAX_REASON_CHARS = 200
# How much of a malformed marker's key the log line quotes.
MAX_LOGGED_KEY_CHARS = 80
_UNKNOWN = object()

logger = logging.getLogger(__name__)


class _IndexHealth:
    """Whether the last embedding failed, so that an outage is logged once when it starts and once when it ends."""

    def __init__(self) -> None:
        self.down = False
        self.lock = threading.Lock()

    def failed(self, error: BaseException) -> None:
        with self.lock:
            was_down, self.down = self.down, True
        if not was_down:
            logger.warning(
                "The semantic index is unavailable (%s): memories are saved unindexed and searches rank without it "
                "until it answers again.",
                _reason(error),
            )

    def answered(self) -> None:
        with self.lock:
            was_down, self.down = self.down, False
        if was_down:
            logger.warning("The semantic index answers again: memories saved meanwhile are being indexed.")


health = _IndexHealth()


def _reason(error: BaseException) -> str:
    text = " ".join(str(error).split()) or "no message"
    return f"{type(error).__name__}: {text}"[:MAX_REASON_CHARS]


def _indexed(put: PutOp) -> bool:
    return put.value is not None and put.index is not False


def _may_index(store: BaseStore) -> bool:
    # LangGraph's stores say None when they have no index; a server's wrapper of its store (langgraph dev's) says nothing.
    return getattr(store, "index_config", _UNKNOWN) is not None


def _marker_namespace(item_namespace: tuple[str, ...]) -> tuple[str, ...]:
    return (UNINDEXED, *item_namespace[1:])


def _marker(put: PutOp) -> PutOp:
    """The note, filed under the item's user and named by its kind and key, that `put`'s item was written without
    its index. Its value says nothing the reader uses (`marked_item`)."""
    return PutOp(_marker_namespace(put.namespace), f"{put.namespace[0]}:{put.key}", {}, index=False)


class MarkedItem(NamedTuple):
    """The memory document a marker stands for: its kind's name, its namespace (`(kind, user label)`) and key."""

    kind: str
    namespace: tuple[str, str]
    key: str


def marked_item(note: Item) -> MarkedItem | None:
    """The document the marker `note` stands for, read from where the marker is filed and never from its value: the
    same user's (`("unindexed", label)` → `(kind, label)`), of the kind and key its key names (`kind:key`). None
    when the marker is malformed: filed elsewhere, or keyed by no memory kind's name."""
    if len(note.namespace) != 2 or note.namespace[0] != UNINDEXED:
        return None
    kind, colon, key = note.key.partition(":")
    if not (colon and key and kind.isidentifier() and kind not in RESERVED_NAMES):
        return None
    return MarkedItem(kind, (kind, note.namespace[1]), key)


def write_saving_unindexed(
    store: BaseStore, conditions: Sequence[Unchanged], puts: Sequence[PutOp], kind: MemoryKind
) -> None:
    """`write_unless_changed`, and if the semantic index fails the batch, the same batch without it (see the module).

    `puts` write documents of `kind` (and entries of the history); once the index accepts them, the user's other
    documents of `kind` left unindexed are indexed too. A batch that fails again without the index raises that
    second error: the store itself failed, not its index.
    """
    indexed = [put for put in puts if _indexed(put)] if _may_index(store) else []
    if not indexed:
        write_unless_changed(store, conditions, puts)
        return
    try:
        write_unless_changed(store, conditions, puts)
    except ConflictError:
        raise
    except Exception as error:  # the provider's errors are its own: httpx, openai, ollama, tiktoken, ...
        unindexed = [put._replace(index=False) if _indexed(put) else put for put in puts]
        write_unless_changed(store, conditions, [*unindexed, *(_marker(put) for put in indexed)])
        health.failed(error)
        return
    health.answered()
    for owner in {_marker_namespace(put.namespace) for put in indexed}:
        notes = [note for note in search_all(store, owner) if _kind_of(note) in (kind.name, None)]
        _index_again(store, notes, {kind.name: kind})


def _kind_of(note: Item) -> str | None:
    marked = marked_item(note)
    return marked.kind if marked else None


def reindex(
    store: BaseStore, markers: tuple[str, ...] = (UNINDEXED,), kinds: Sequence[MemoryKind] = DEFAULT_MEMORY_KINDS
) -> int:
    """Index the items saved unindexed under `markers` (default: every user's); returns how many were indexed.

    Each item is written again with its index, unchanged, in one batch that drops its marker; an item changed
    meanwhile is left to the write that changed it, one deleted loses its marker, and so does one of a kind that
    `kinds` (the graph's; default: the default kinds) does not index, and a malformed marker (with a
    log line). Stops at the first failure of the index (the markers stay for next time).
    """
    indexed_kinds = {kind.name: kind for kind in kinds if kind.indexed_fields}
    return _index_again(store, search_all(store, markers), indexed_kinds)


def _index_again(store: BaseStore, notes: Iterable[Item], kinds: Mapping[str, MemoryKind]) -> int:
    """Index the documents the markers `notes` stand for, with their kind among `kinds` (see `reindex`)."""
    indexed = 0
    for note in notes:
        drop = PutOp(note.namespace, note.key, None)
        marked = marked_item(note)
        if marked is None:
            logger.warning(
                "Dropped a malformed index-outage marker %r in %r: it names no memory of that user.",
                note.key[:MAX_LOGGED_KEY_CHARS], ".".join(note.namespace)[:MAX_LOGGED_KEY_CHARS],
            )
        item = store.get(marked.namespace, marked.key) if marked and marked.kind in kinds else None
        if item is None:
            store.batch([drop])
            continue
        again = document_put(kinds[marked.kind], item.namespace, item.key, item.value)
        try:
            write_unless_changed(
                store,
                [Unchanged(item.namespace, item.key, item.value), Unchanged(note.namespace, note.key, note.value)],
                [again, drop],
            )
        except ConflictError:
            continue
        except Exception as error:
            health.failed(error)
            break
        indexed += 1
    return indexed


def waiting(store: BaseStore) -> int:
    """How many items, of every user, wait to be indexed again."""
    return len(search_all(store, (UNINDEXED,)))


def search_by_meaning(store: BaseStore, namespace: tuple[str, ...], query: str, limit: int) -> list[Item]:
    """`store.search(namespace, query=query, limit=limit)`, or no items while the semantic index fails.

    Raises the store's own error when the store cannot even list the namespace.
    """
    try:
        items = list(store.search(namespace, query=query, limit=limit))
    except Exception as error:
        store.search(namespace, limit=1)
        health.failed(error)
        return []
    health.answered()
    return items
