"""How a turn reads a collection on this project's SQL stores: by its changes once the process holds the list, and
a long list the process does not hold by its head.

A process keeps each list it read whole prepared (`graph.memory.selection.ListCache`) and then reads only the
documents changed since (`updated_list`). Reading a list whole prepares every document; for a list of
`HEAD_FROM` documents or more that the process does not hold, a turn reads instead, in one statement, the
list's counts and only the documents its selection can pick, found through the list index
(`ChangeLogStore.read_list_head`, `graph.backends.list_index`), and ranks those: the same candidates as the
whole list's. Once the run ends (its `GraphRuntime`, a callback of the compiled graph), the whole list is read
in a background thread and kept for the next turns, which read only its changes; a turn before that is done
reads the head again. The read waits for the run's end so that it takes no time from the reply. Each built graph
has its own `ListReader` (`graph.runtime.GraphRuntime`), whose thread starts with its first read, not at import. A list whose
index is not complete, or a term SQL cannot narrow (`graph.memory.selection.superset_pattern`), has the turn
read the list whole itself.
"""

import logging
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from langgraph.store.base import BaseStore

from graph.memory.change_log import ChangeLogStore, CollectionChange
from graph.memory.kinds import MemoryKind
from graph.memory.selection import (
    LISTS_KEPT,
    Candidates,
    Entry,
    ListCache,
    PreparedHead,
    PreparedList,
    Quotas,
    rank_entries,
    stored_entry,
)

logger = logging.getLogger(__name__)

HEAD_FROM = 1000


class ListReader:
    """Reads in the background, one at a time, the whole lists that turns read by their heads, and keeps them in
    `lists` for the next turns. Its thread starts with the first read; `close` stops it."""

    def __init__(self, lists: ListCache) -> None:
        self.lists = lists
        self._executor: ThreadPoolExecutor | None = None
        self._wanted: dict[tuple, tuple[BaseStore, ChangeLogStore, MemoryKind, str]] = {}
        self._pending: dict[tuple, Future] = {}
        self._lock = threading.Lock()

    def read_later(self, store: BaseStore, logged: ChangeLogStore, kind: MemoryKind, user_id: str) -> None:
        """Have the user's whole list of `kind` read in the background once the run ends (`start`)."""
        with self._lock:
            if len(self._wanted) < LISTS_KEPT:
                self._wanted[(id(store), kind.name, user_id)] = (store, logged, kind, user_id)

    def start(self) -> None:
        """Start reading the lists wanted whole: one list at a time, each once, and no more waiting than the cache
        keeps."""
        with self._lock:
            for list_key, wanted in list(self._wanted.items()):
                if list_key not in self._pending and len(self._pending) < LISTS_KEPT:
                    if self._executor is None:
                        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="maistro-list-read")
                    self._pending[list_key] = self._executor.submit(self._read_whole, *wanted, list_key)
                del self._wanted[list_key]

    def _read_whole(self, store: BaseStore, logged: ChangeLogStore, kind: MemoryKind, user_id: str, list_key: tuple) -> None:
        try:
            rows = logged.read_memory_rows(user_id, [kind], {})
            versions, prepared = updated_list(kind, None, rows.changes[kind.name])
            self.lists.keep(store, (kind.name, user_id), (rows.marks[kind.name], versions), prepared)
        except Exception:  # the store was closed meanwhile: a later turn reads the head again
            logger.debug("Reading the %s list in the background failed.", kind.name, exc_info=True)
        finally:
            with self._lock:
                self._pending.pop(list_key, None)

    def settle(self, store: BaseStore | None = None) -> None:
        """Drop the lists of `store` (None: of every store) still wanted whole and wait for those being read: before
        the store closes."""
        with self._lock:
            for list_key in [key for key in self._wanted if store is None or key[0] == id(store)]:
                del self._wanted[list_key]
            running = [future for key, future in self._pending.items() if store is None or key[0] == id(store)]
        wait(running)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the lists being read in the background are kept; whether they all were within `timeout`. What
        ran no graph (a test, a script ranking lists) starts the wanted reads first."""
        self.start()
        with self._lock:
            running = list(self._pending.values())
        return not wait(running, timeout=timeout).not_done

    def close(self) -> None:
        """Drop what is still wanted, wait for the reads under way, and stop the thread."""
        self.settle()
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)


def updated_list(
    kind: MemoryKind, kept: tuple[dict[str, Any], PreparedList] | None, changes: Sequence[CollectionChange]
) -> tuple[dict[str, Any], PreparedList]:
    """A list's document versions and prepared form after a read's `changes`, from what was `kept` of it (its
    versions and prepared form as of the last read; None: the changes are the whole list)."""
    versions, prepared = kept or ({}, None)
    changed: list[Entry] = []
    removed: list[str] = []
    for change in changes:
        if change.document is None:
            if versions.pop(change.key, None) is not None:
                removed.append(change.key)
        elif versions.get(change.key) != change.version:
            versions[change.key] = change.version
            changed.append(stored_entry(change.document, kind))
    if prepared is None:
        prepared = PreparedList(kind, changed)
    else:
        prepared.changed(changed, removed)
    return versions, prepared


def head_candidates(
    store: BaseStore,
    logged: ChangeLogStore,
    user_id: str,
    kind: MemoryKind,
    wanted: Sequence[str],
    quotas: Quotas,
    reader: ListReader | None,
) -> Candidates | None:
    """The user's list of `kind` ranked from its head: the candidates of `wanted` within `quotas`, the same as the
    whole list's, with the whole list then read in the background by `reader` (None: not read); None when the list
    is shorter than `HEAD_FROM`, its index is not complete, or a term cannot be narrowed (read it whole)."""
    head = logged.read_list_head(user_id, kind, wanted, quotas.recent, quotas.limit, least=HEAD_FROM)
    if head is None:
        return None
    entries = [stored_entry(document, kind) for document in head.documents]
    if reader is not None:
        reader.read_later(store, logged, kind, user_id)
    return rank_entries(PreparedHead(kind, entries, head.total, head.open_total), wanted, quotas)
