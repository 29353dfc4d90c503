"""Reading a user's change history at the cost of what is shown: the newest entries, one change, the count.

Every reader of the history goes through here: the memory page, undo, `maistro history`, the chat session
and export. On this project's SQL stores an index orders the entries by time, newest first
(`graph.backends.history_sql`): a page of N entries reads N rows and validates N entries, whatever the
history's length, an id or id prefix is found through the keys, and the count is one statement. LangGraph's own
PostgreSQL stores (Aegra's) get the same statements once the backends register a finder for them
(`register_index_finder`, `graph.backends.history_postgres`). Any other store (the `langgraph dev` server's
own, a plain `InMemoryStore`) has no such order, so the reader reads its history namespace through the
`BaseStore` API, orders the stored values by their time and still validates only the entries it returns.

Entries come newest first, by time, then by their `order` among changes written together.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Protocol, runtime_checkable

from langgraph.store.base import BaseStore, GetOp, Item

from graph.memory.entries import UnknownChangeError, readable_entry
from graph.memory.store import HISTORY, WHOLE_NAMESPACE, namespace
from graph.settings import current_settings

# How many entries `iter_history` asks the store for first, and at most at a time as it reads on (4x each page).
FIRST_PAGE = 32
PAGE = 512
# Where a stored value without a readable time sorts: after every entry.
UNDATED = datetime.min.replace(tzinfo=timezone.utc)
# The fewest first characters of a change id that name it: "2" would pick whichever change happens to start so.
MIN_CHANGE_PREFIX = 4


class AmbiguousChangeError(UnknownChangeError):
    """More than one change id of the user's history starts with the characters given."""


class ShortChangeIdError(UnknownChangeError):
    """The characters given are too few to name a change with confidence (fewer than MIN_CHANGE_PREFIX)."""


class PrunedChangeError(UnknownChangeError):
    """The change is not in the history, which MAISTRO_HISTORY_KEEP has pruned: it may have been one of those."""


@runtime_checkable
class HistoryIndex(Protocol):
    """A store that orders the history by time itself (`graph.backends.history_sql.HistorySql`)."""

    change_log_installed: bool

    def newest_history_rows(self, prefix: str, limit: int, offset: int = 0) -> list[tuple[str, Any]]:
        """(key, value) of the history entries under `prefix`, newest first."""
        ...

    def history_size(self, prefix: str) -> tuple[int, int]:
        """How many items the history under `prefix` holds, and how many entries retention pruned from it."""
        ...

    def history_ids_starting(self, prefix: str, start: str, limit: int) -> list[str]:
        """Up to `limit` keys of the history under `prefix` that begin with `start`."""
        ...


@dataclass(frozen=True)
class HistoryPage:
    """The newest entries of a user's history (newest first), how many items it holds, and how many were pruned."""

    entries: list[dict[str, Any]]
    total: int
    pruned: int = 0


# Finders of a history index for stores that keep none themselves (LangGraph's own PostgreSQL stores, Aegra's
# among them): each returns one for the stores it knows, else None (`graph.backends.history_postgres`).
_index_finders: list[Callable[[BaseStore], HistoryIndex | None]] = []


def register_index_finder(finder: Callable[[BaseStore], HistoryIndex | None]) -> None:
    """Read the history of the stores `finder` knows through the index it returns for them."""
    if finder not in _index_finders:
        _index_finders.append(finder)


def _index(store: BaseStore) -> HistoryIndex | None:
    if isinstance(store, HistoryIndex) and store.change_log_installed:
        return store
    return next((index for finder in _index_finders if (index := finder(store)) is not None), None)


def _prefix(user_id: str) -> str:
    return ".".join(namespace(HISTORY, user_id))


def _newest_first_key(entry: dict[str, Any]) -> tuple[datetime, int]:
    return datetime.fromisoformat(entry["time"]), entry["order"]


def _raw_order(item: Item) -> tuple[datetime, int, str]:
    """Where a stored value sorts before it is validated: by its time and order when it has them, else last."""
    value = item.value if isinstance(item.value, dict) else {}
    try:
        moment = datetime.fromisoformat(value["time"])
    except (KeyError, TypeError, ValueError):
        moment = UNDATED
    if moment.tzinfo is None:
        moment = UNDATED
    order = value.get("order")
    return moment, order if isinstance(order, int) else 0, item.key


def _store_items_newest_first(store: BaseStore, user_id: str) -> list[Item]:
    """A store without the index: its every history item, newest first by the time each value says."""
    return sorted(store.search(namespace(HISTORY, user_id), limit=WHOLE_NAMESPACE), key=_raw_order, reverse=True)


def iter_history(store: BaseStore, user_id: str) -> Iterator[dict[str, Any]]:
    """The user's history entries, newest first, read page by page (a reader that stops early reads little);
    stored values that are not entries are left out (not deleted)."""
    index = _index(store)
    if index is None:
        for item in _store_items_newest_first(store, user_id):
            if entry := readable_entry(item.value):
                yield entry
        return
    prefix, offset, size, seen = _prefix(user_id), 0, FIRST_PAGE, set()
    while True:
        rows = index.newest_history_rows(prefix, size, offset)
        page = [entry for _, value in rows if (entry := readable_entry(value)) and entry["id"] not in seen]
        yield from sorted(page, key=_newest_first_key, reverse=True)
        seen.update(entry["id"] for entry in page)  # an entry written meanwhile moves the rest down a place
        if len(rows) < size:
            return
        offset, size = offset + len(rows), min(size * 4, PAGE)


def newest_history(store: BaseStore, user_id: str, limit: int | None) -> list[dict[str, Any]]:
    """The user's newest `limit` history entries (None: all of them), newest first."""
    index = _index(store)
    if index is not None and limit is not None:
        rows = index.newest_history_rows(_prefix(user_id), limit)
        entries = [entry for _, value in rows if (entry := readable_entry(value))]
        if len(entries) == limit or len(rows) < limit:
            return sorted(entries, key=_newest_first_key, reverse=True)
    entries = []
    for entry in iter_history(store, user_id):
        if len(entries) == limit:
            break
        entries.append(entry)
    return entries


def history_page(store: BaseStore, user_id: str, limit: int | None) -> HistoryPage:
    """The newest `limit` entries (None: all), with how many items the history holds and how many were pruned."""
    index = _index(store)
    if index is None:
        items = _store_items_newest_first(store, user_id)
        entries = []
        for item in items:
            if len(entries) == limit:
                break
            if entry := readable_entry(item.value):
                entries.append(entry)
        return HistoryPage(entries, len(items))
    total, pruned = index.history_size(_prefix(user_id))
    return HistoryPage(newest_history(store, user_id, limit), total, pruned)


def latest_change(store: BaseStore, user_id: str) -> dict[str, Any] | None:
    """The user's newest history entry, or None when the history is empty."""
    return next(iter(newest_history(store, user_id, 1)), None)


def _not_kept(change_id: str, pruned: int) -> UnknownChangeError:
    if pruned:
        kept = current_settings().history_keep.describe()
        return PrunedChangeError(f"change {change_id} is older than {kept} kept (MAISTRO_HISTORY_KEEP)")
    return UnknownChangeError(f"no change {change_id!r} in the history")


def find_change(store: BaseStore, user_id: str, change_id: str) -> dict[str, Any]:
    """The history entry whose id is `change_id`, or else the only one whose id starts with it.

    Raises `ShortChangeIdError` when no id is `change_id` and it has fewer than MIN_CHANGE_PREFIX characters,
    `AmbiguousChangeError` when several ids start with it, `PrunedChangeError` when none does and
    MAISTRO_HISTORY_KEEP has pruned the user's history, and `UnknownChangeError` otherwise.
    """
    (item,) = store.batch([GetOp(namespace(HISTORY, user_id), change_id)]) if change_id else (None,)
    if item is not None and (entry := readable_entry(item.value)):
        return entry
    if len(change_id) < MIN_CHANGE_PREFIX:
        raise ShortChangeIdError(f"a change id prefix needs at least {MIN_CHANGE_PREFIX} characters")
    index = _index(store)
    if index is None:
        matches = [
            entry for item in _store_items_newest_first(store, user_id)
            if item.key.startswith(change_id) and (entry := readable_entry(item.value))
        ]
        pruned = 0
    else:
        keys = index.history_ids_starting(_prefix(user_id), change_id, 2) if change_id else []
        found = store.batch([GetOp(namespace(HISTORY, user_id), key) for key in keys]) if keys else []
        matches = [entry for item in found if item and (entry := readable_entry(item.value))]
        pruned = index.history_size(_prefix(user_id))[1] if not matches else 0
    if len(matches) > 1:
        raise AmbiguousChangeError(f"more than one change starts with {change_id!r}")
    if not matches:
        raise _not_kept(change_id, pruned)
    return matches[0]
