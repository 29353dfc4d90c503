"""An outage of the semantic index is an outage of search, never of memory.

A store with a semantic index embeds an item's indexed fields inside the write, so an embeddings provider that
is unreachable, answers errors or cannot load its tokenizer fails the whole batch (LangGraph's stores call it
before they write anything, and this project's stores roll a failed batch back). `write_saving_unindexed`
then writes the same batch again without the index, plus a marker for every item it left unindexed (namespace
`("unindexed", <user label>)`): the memory, its history entry and the marker commit together, on any store
(SQLite, PostgreSQL, `langgraph dev`'s, Aegra's). Meanwhile `search_by_meaning` finds nothing and the callers
rank by their other signals. The log says once that the index is down, and once that it is back.

Marked items are indexed again (written once more, unchanged, with their index) after the next write of the
same user that the index accepts (which looks for the user's markers: one read more per write, on stores with an
index), and by `reindex` (`maistro reindex`) for every user.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langgraph.store.base import PutOp

from graph.memory.conditions import ConflictError, Unchanged, write_unless_changed
from graph.memory.store import search_all

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore, Item

UNINDEXED = "unindexed"
MAX_REASON_CHARS = 200
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
    """The note, filed under the item's user, that `put`'s item was written without its index."""
    return PutOp(
        _marker_namespace(put.namespace),
        f"{put.namespace[0]}:{put.key}",
        {"namespace": list(put.namespace), "key": put.key, "index": put.index, "ttl": put.ttl},
        index=False,
    )


def write_saving_unindexed(store: BaseStore, conditions: Sequence[Unchanged], puts: Sequence[PutOp]) -> None:
    """`write_unless_changed`, and if the semantic index fails the batch, the same batch without it (see the module).

    A batch that fails again without the index raises that second error: the store itself failed, not its index.
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
        reindex(store, owner)


def reindex(store: BaseStore, markers: tuple[str, ...] = (UNINDEXED,)) -> int:
    """Index the items saved unindexed under `markers` (default: every user's); returns how many were indexed.

    Each item is written again with its index, unchanged, in one batch that drops its marker; an item changed
    meanwhile is left to the write that changed it, one deleted loses its marker. Stops at the first failure of
    the index (the markers stay for next time).
    """
    indexed = 0
    for note in search_all(store, markers):
        target: dict[str, Any] = note.value
        item_namespace = tuple(target["namespace"])
        item = store.get(item_namespace, target["key"])
        drop = PutOp(note.namespace, note.key, None)
        if item is None:
            store.batch([drop])
            continue
        again = PutOp(item_namespace, item.key, item.value, index=target["index"], ttl=target["ttl"])
        try:
            write_unless_changed(
                store,
                [Unchanged(item_namespace, item.key, item.value), Unchanged(note.namespace, note.key, note.value)],
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
