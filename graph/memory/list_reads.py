"""How a turn reads a collection on this project's SQL stores: by its changes once the process holds the list, and
a long list the process does not hold by its head.

A process keeps each list it read whole prepared (`graph.memory.selection.ListCache`) and then reads only the
documents changed since (`updated_list`). Reading a list whole prepares every document; for a list of
`HEAD_FROM` documents or more that the process does not hold, a turn reads instead, in one statement, the
list's counts and only the documents its selection can pick, found through the list index
(`ChangeLogStore.read_list_head`, `graph.backends.list_index`), and ranks those: the same candidates as the
whole list's. Once the run ends (`ReadListsAfterRun`, a callback of the compiled graph), the whole list is read
in a background thread and kept for the next turns, which read only its changes; a turn before that is done
reads the head again. The read waits for the run's end so that it takes no time from the reply. A list whose
index is not complete, or a term SQL cannot narrow (`graph.memory.selection.superset_pattern`), has the turn
read the list whole itself.
"""

import logging
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langgraph.store.base import BaseStore

from graph.memory.change_log import ChangeLogStore, CollectionChange
from graph.memory.kinds import MemoryKind
from graph.memory.selection import (
    LISTS,
    LISTS_KEPT,
    Candidates,
    Entry,
    PreparedHead,
    PreparedList,
    Quotas,
    rank_entries,
    stored_entry,
)

logger = logging.getLogger(__name__)

HEAD_FROM = 1000
_whole_reads = ThreadPoolExecutor(max_workers=1, thread_name_prefix="maistro-list-read")
_wanted: dict[tuple, tuple[BaseStore, ChangeLogStore, MemoryKind, str]] = {}
_pending: dict[tuple, Future] = {}
_pending_lock = threading.Lock()


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
    store: BaseStore, logged: ChangeLogStore, user_id: str, kind: MemoryKind, wanted: Sequence[str], quotas: Quotas
) -> Candidates | None:
    """The user's list of `kind` ranked from its head: the candidates of `wanted` within `quotas`, the same as the
    whole list's, with the whole list then read in the background; None when the list is shorter than
    `HEAD_FROM`, its index is not complete, or a term cannot be narrowed (read it whole)."""
    head = logged.read_list_head(user_id, kind, wanted, quotas.recent, quotas.limit, least=HEAD_FROM)
    if head is None:
        return None
    entries = [stored_entry(document, kind) for document in head.documents]
    read_whole_later(store, logged, kind, user_id)
    return rank_entries(PreparedHead(kind, entries, head.total, head.open_total), wanted, quotas)


def read_whole_later(store: BaseStore, logged: ChangeLogStore, kind: MemoryKind, user_id: str) -> None:
    """Have the user's whole list of `kind` read in the background once the run ends (`read_wanted_lists`)."""
    with _pending_lock:
        if len(_wanted) < LISTS_KEPT:
            _wanted[(id(store), kind.name, user_id)] = (store, logged, kind, user_id)


def read_wanted_lists() -> None:
    """Start reading the lists wanted whole in the background and keep them for the next turns: one list at a
    time, each once, and no more waiting than the cache keeps."""
    with _pending_lock:
        for list_key, wanted in list(_wanted.items()):
            if list_key not in _pending and len(_pending) < LISTS_KEPT:
                _pending[list_key] = _whole_reads.submit(_read_whole, *wanted, list_key)
            del _wanted[list_key]


class ReadListsAfterRun(BaseCallbackHandler):
    """Starts the background reads of the lists a run read by their heads when the run (one without a parent)
    ends, or fails."""

    run_inline = True

    def on_chain_end(self, outputs: Any, *, run_id: Any, parent_run_id: Any = None, **kwargs: Any) -> None:
        """After a run, read the lists it wanted whole."""
        if parent_run_id is None:
            read_wanted_lists()

    def on_chain_error(self, error: BaseException, *, run_id: Any, parent_run_id: Any = None, **kwargs: Any) -> None:
        """After a failed run, too."""
        if parent_run_id is None:
            read_wanted_lists()


def _read_whole(store: BaseStore, logged: ChangeLogStore, kind: MemoryKind, user_id: str, list_key: tuple) -> None:
    try:
        rows = logged.read_memory_rows(user_id, [kind], {})
        versions, prepared = updated_list(kind, None, rows.changes[kind.name])
        LISTS.keep(store, (kind.name, user_id), (rows.marks[kind.name], versions), prepared)
    except Exception:  # the store was closed meanwhile: a later turn reads the head again
        logger.debug("Reading the %s list in the background failed.", kind.name, exc_info=True)
    finally:
        with _pending_lock:
            _pending.pop(list_key, None)


def settle_reads_of(store: BaseStore) -> None:
    """Drop the store's lists still wanted whole and wait for those being read: before the store closes."""
    with _pending_lock:
        for list_key in [list_key for list_key in _wanted if list_key[0] == id(store)]:
            del _wanted[list_key]
        running = [future for list_key, future in _pending.items() if list_key[0] == id(store)]
    wait(running)


def wait_for_whole_reads(timeout: float | None = None) -> bool:
    """Wait until the lists being read in the background are kept; whether they all were within `timeout`. A
    process that ran no graph (a test, a script ranking lists) starts the wanted reads first."""
    read_wanted_lists()
    with _pending_lock:
        running = list(_pending.values())
    return not wait(running, timeout=timeout).not_done
