"""Which documents of a collection (the ToDo list, or any collection kind) a turn sees: all of a short list, or
past a limit the ones relevant to the turn.

Relevance, in order: items the user names (word and CJK-bigram overlap with the kind's text fields, rarer
words weigh more), items found by the store's semantic index when one is configured, the most recently
changed items ("it's done"), the soonest deadlines (of a kind with a `deadline_field`), then the most recent
open items (every item of a kind without a `status_field` is open). Everything else is only counted, open
and closed apart, so a turn's prompt stays the same size however long the list grows.

Each item is parsed once, and kept with the recency and deadline orders while it is unchanged
(`PreparedList`, kept per list by `ListCache`). A turn updates them for the items that changed (on SQLite and
PostgreSQL it reads only those, see `graph.memory.context`) and ranks by taking a bounded number of items
from the orders and from an index from term to items, so its cost does not grow with the list. The index is
built term by term, for the terms turns look for: a term not looked up before is found with one regular
expression over the list's texts joined (`PreparedList.keys_with`), so the first read of a long list splits
no item into terms, and a term's items stay indexed while the list changes.
"""

import bisect
import functools
import heapq
import itertools
import math
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.store.base import BaseStore, Item

from graph.memory.change_log import StoredDocument
from graph.memory.due import deadline_at
from graph.memory.index_outage import search_by_meaning
from graph.memory.kinds import MemoryKind
from graph.memory.store import namespace

RECENT_SHARE = 6
# Terms of the user's recent messages that a turn looks for (the latest message's first).
MAX_TERMS = 24
_WORD = re.compile(r"[^\W\d_]{3,}|\d+", re.UNICODE)
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_CJK_RUN = re.compile(f"[{_CJK}]+")
# What may not touch an occurrence of a term for it to be one of `text_terms`: a letter outside the CJK runs
# (those are cut out before words are taken), a digit, a CJK character; the texts of a list are joined by NUL.
_LETTER = f"[^\\W\\d_{_CJK}]"
_BOUNDARY = {"letters": _LETTER, "digits": r"\d", "cjk": f"[{_CJK}]"}
_SEPARATOR = "\x00"
_NUMBER = re.compile(r"\d+")
LISTS_KEPT = 32
# A term shared by more items than this is common: only its most recently changed items become candidates.
COMMON = 256


@dataclass(frozen=True)
class Selection:
    """The items of a collection a prompt shows (oldest first), how many open and closed items it leaves out, and
    the shown items' keys, the most relevant first (`relevance`)."""

    items: list[Item]
    hidden_open: int = 0
    hidden_closed: int = 0
    relevance: tuple[str, ...] = ()


@dataclass(frozen=True)
class Quotas:
    """How many items of each kind of relevance a selection of `limit` items takes, before the fill."""

    limit: int

    @property
    def named(self) -> int:
        """Items the user names."""
        return self.limit // 2

    @property
    def semantic(self) -> int:
        """Semantic-index hits."""
        return self.limit // 4

    @property
    def recent(self) -> int:
        """Most recently changed items."""
        return self.limit // RECENT_SHARE

    @property
    def deadline(self) -> int:
        """Open items with the soonest deadlines."""
        return self.limit // RECENT_SHARE


@dataclass(frozen=True)
class Ranked:
    """An item with its 1-based rank in each ordering that may pick it (None where it is not ranked)."""

    item: Item
    named: int | None
    recent: int | None
    deadline: int | None
    open: int | None


@dataclass(frozen=True)
class Candidates:
    """The items of a `kind` that a selection of up to `Quotas.limit` items can pick, and the counts of the whole
    list."""

    kind: MemoryKind
    ranked: list[Ranked]
    total: int
    open_total: int


def text_terms(text: str) -> frozenset[str]:
    """Search terms of a text: lower-cased words of 3+ letters, numbers, and CJK character bigrams."""
    lowered = text.lower()
    words = {word for word in _WORD.findall(_CJK_RUN.sub(" ", lowered))}
    bigrams = {run[i : i + 2] for run in _CJK_RUN.findall(lowered) for i in range(max(len(run) - 1, 1))}
    return frozenset(words | bigrams)


@functools.lru_cache(maxsize=1024)
def terms(text: str) -> frozenset[str]:
    """`text_terms`, cached: a turn's query is split by each of its nodes."""
    return text_terms(text)


def recent_user_text(messages: Sequence[AnyMessage], turns: int = 3) -> str:
    """The user's last few messages, the query for choosing relevant items."""
    users = [m.text for m in messages if isinstance(m, HumanMessage)]
    return "\n".join(users[-turns:])


def query_terms(query: str) -> list[str]:
    """The terms a turn looks for, at most `MAX_TERMS`: the latest line's first, each once, in a stable order."""
    chosen: dict[str, None] = {}
    for line in reversed(query.splitlines()):
        for term in sorted(terms(line)):
            chosen.setdefault(term)
    return list(chosen)[:MAX_TERMS]


def _strings(value: Any) -> list[str]:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return [value] if isinstance(value, str) else []


def searchable_text(kind: MemoryKind, value: dict) -> str:
    """The words of a document that name it: the strings of the kind's text fields (a ToDo's task and solutions)."""
    texts = []
    for field in kind.text_fields:
        text = value.get(field)
        if isinstance(text, str):
            texts.append(text)
        elif text:
            texts.extend(_strings(text))
    return " ".join(texts)


class Entry:
    """A document prepared for ranking: its key, its searchable text (lower-cased), whether it is open, its
    deadline and its recency (sorts the most recently changed first, ties by key). Its item (`item`) and its search
    terms (`terms`) are built when first asked for: a first read prepares every document of a list, and a turn
    shows a few."""

    __slots__ = ("key", "text", "is_open", "deadline", "recency", "_item", "_document", "_value", "_terms")

    def __init__(self, kind: MemoryKind, key: str, value: dict, recency: tuple) -> None:
        self.key, self.recency, self._value = key, recency, value
        self.text = searchable_text(kind, value).lower()
        self.is_open = kind.is_open(value)
        self.deadline = deadline_of(value, kind.deadline_field) if kind.deadline_field else None
        self._item: Item | None = None
        self._document: StoredDocument | None = None
        self._terms: frozenset[str] | None = None

    @property
    def item(self) -> Item:
        """The store's item (built on first use when the entry was prepared from a stored document)."""
        if self._item is None:
            self._item = self._document.item(self._value)
        return self._item

    @property
    def terms(self) -> frozenset[str]:
        """The text's search terms (`text_terms`)."""
        if self._terms is None:
            self._terms = text_terms(self.text)
        return self._terms


def entry(item: Item, kind: MemoryKind) -> Entry:
    """Prepare one item of `kind` for ranking (its text is split into terms only when a term index needs it)."""
    prepared = Entry(kind, item.key, item.value, (-item.updated_at.timestamp(), -item.created_at.timestamp(), item.key))
    prepared._item = item
    return prepared


def stored_entry(document: StoredDocument, kind: MemoryKind) -> Entry:
    """Prepare one stored document of `kind` for ranking, ordered by the times the database gave as numbers: its
    item (and the parse of its times) is built only if a turn shows it or an update reaches it."""
    prepared = Entry(kind, document.key, document.value(), (-document.updated_epoch, -document.created_epoch, document.key))
    prepared._document = document
    return prepared


@functools.lru_cache(maxsize=1024)
def term_pattern(term: str) -> re.Pattern:
    """The occurrences of `term` in a text that make it one of the text's `text_terms` (a word not inside a longer
    word, a number not inside a longer number, a CJK bigram anywhere, a lone CJK character alone)."""
    if _CJK_RUN.fullmatch(term):
        if len(term) > 1:
            return re.compile(re.escape(term))
        boundary = _BOUNDARY["cjk"]
    else:
        boundary = _BOUNDARY["digits" if _NUMBER.fullmatch(term) else "letters"]
    literal = re.escape(term)
    # The literal first, then the look back past it, so that the search runs at the speed of a substring search.
    return re.compile(f"{literal}(?!{boundary})(?<!{boundary}{literal})")


# Characters that lower-casing no other character produces, which a LIKE pattern may therefore hold as themselves
# to match a text of any case (SQLite's LIKE folds ASCII case; on PostgreSQL the words are lower-cased): ASCII
# digits and letters but "i" and "k" (the lower case of "İ" and of the Kelvin sign), and the CJK runs' characters,
# which have no case.
_LITERAL = re.compile(f"[0-9a-hjl-z{_CJK}]")


@functools.lru_cache(maxsize=1024)
def superset_pattern(term: str) -> str | None:
    """A `LIKE` pattern that the text of every document holding `term` matches, whatever its case (a character of
    the term that another character lower-cases to matches anything), or None when it would match everything."""
    pattern = re.sub("%+", "%", "".join(c if _LITERAL.fullmatch(c) else "%" for c in f"%{term}%"))
    return None if pattern == "%" else pattern


def deadline_of(document: dict, field: str) -> datetime | None:
    """A document's deadline (its `field`: a kind's `deadline_field`) as an aware datetime (one without a zone is taken
    as UTC); None when it has none (`graph.memory.due.deadline_at`)."""
    return deadline_at(document.get(field))


def _recency(e: Entry) -> tuple:
    return e.recency


def _soonest(e: Entry) -> tuple:
    return (e.deadline, e.key)


class PreparedList:
    """A list's entries (documents of `kind`) with what ranking needs: the recency and deadline orders, and an
    index from term to keys for the terms looked up so far (`keys_with`).

    `changed` updates it in place for the rows that changed (cost proportional to the change, not the list). An
    index entry lists its keys in the order they changed, the most recent last.
    """

    def __init__(self, kind: MemoryKind, entries: Sequence[Entry] = ()) -> None:
        self.kind = kind
        self.entries: dict[str, Entry] = {}
        self.index: dict[str, dict[str, None]] = {}
        self._texts: tuple[str, list[int], list[str]] | None = None
        self.by_recency: list[Entry] = []
        self.open_by_recency: list[Entry] = []
        self.deadlines: list[Entry] = []
        self.open_total = 0
        self.changed(entries, ())

    @property
    def total(self) -> int:
        """How many documents the list holds."""
        return len(self.entries)

    def _orders(self, e: Entry) -> list[tuple[list[Entry], Callable[[Entry], tuple]]]:
        orders = [(self.by_recency, _recency)]
        if e.is_open:
            orders.append((self.open_by_recency, _recency))
            if e.deadline:
                orders.append((self.deadlines, _soonest))
        return orders

    def keys_with(self, term: str) -> dict[str, None]:
        """The keys of the entries whose terms hold `term`, in the order they changed (the most recent last);
        found once over the joined texts, then kept up to date by `changed`."""
        keys = self.index.get(term)
        if keys is None:
            if self._texts is None:
                oldest_first = self.by_recency[::-1]
                texts = [e.text for e in oldest_first]
                starts = list(itertools.accumulate((len(text) + 1 for text in texts[:-1]), initial=0))
                self._texts = (_SEPARATOR.join(texts), starts, [e.key for e in oldest_first])
            joined, starts, ordered = self._texts
            matches = term_pattern(term).finditer(joined) if term in joined else ()
            found = (ordered[bisect.bisect_right(starts, match.start()) - 1] for match in matches)
            keys = self.index[term] = dict.fromkeys(found)
        return keys

    def changed(self, entries: Sequence[Entry], removed: Sequence[str]) -> None:
        """Take in new or changed entries and drop the removed keys."""
        if entries or removed:
            self._texts = None
        for key in dict.fromkeys([*removed, *(e.key for e in entries)]):
            old = self.entries.pop(key, None)
            if old is None:
                continue
            self.open_total -= old.is_open
            for term in old.terms & self.index.keys() if self.index else ():
                del self.index[term][key]
            for order, sort_key in self._orders(old):
                del order[bisect.bisect_left(order, sort_key(old), key=sort_key)]
        many = len(entries) > 64
        for e in sorted(entries, key=_recency, reverse=True):  # the oldest first, so an index entry ends with the newest
            self.entries[e.key] = e
            self.open_total += e.is_open
            for term in e.terms & self.index.keys() if self.index else ():
                self.index[term][e.key] = None
            if not many:
                for order, sort_key in self._orders(e):
                    bisect.insort(order, e, key=sort_key)
        if many:
            self.by_recency[:] = sorted(self.entries.values(), key=_recency)
            self.open_by_recency[:] = [e for e in self.by_recency if e.is_open]
            self.deadlines[:] = sorted((e for e in self.open_by_recency if e.deadline), key=_soonest)


class PreparedHead(PreparedList):
    """The documents of a long list that a turn's selection can pick (`graph.memory.list_reads`), with the whole
    list's counts: ranked for that turn's terms, it gives what the whole list would."""

    def __init__(self, kind: MemoryKind, entries: Sequence[Entry], total: int, open_total: int) -> None:
        super().__init__(kind, entries)
        self._total, self.open_total = total, open_total

    @property
    def total(self) -> int:
        """How many documents the whole list holds."""
        return self._total


class ListCache:
    """The prepared lists read lately, so a turn prepares only the items that changed since the last read.

    A list (a store and a namespace) is kept with its state as of its latest read (the item versions, or where
    the store's change log was read up to) and its prepared form. `take` hands a list to one reader at a time:
    a reader that finds it taken reads the list whole. `LISTS_KEPT` lists are kept, the least recently read
    dropped first. A list is kept for its store object only (not for a later store that reuses its id).
    """

    def __init__(self) -> None:
        self._lists: OrderedDict[tuple, tuple[weakref.ref, Any, PreparedList]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, store: BaseStore, list_id: tuple) -> tuple[Any, PreparedList] | None:
        """The kept state and prepared list of the store's list, no longer kept until `keep`; None if not kept."""
        with self._lock:
            kept = self._lists.pop((id(store), *list_id), None)
        if kept is None or kept[0]() is not store:
            return None
        return kept[1], kept[2]

    def clear(self) -> None:
        """Forget every list."""
        with self._lock:
            self._lists.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._lists)

    def keep(self, store: BaseStore, list_id: tuple, state: Any, prepared: PreparedList) -> None:
        """Keep the store's list as of a read: its state then, and its prepared form."""
        with self._lock:
            self._lists[(id(store), *list_id)] = (weakref.ref(store), state, prepared)
            self._lists.move_to_end((id(store), *list_id))
            while len(self._lists) > LISTS_KEPT:
                self._lists.popitem(last=False)

    def prepare(
        self,
        store: BaseStore,
        kind: MemoryKind,
        list_id: tuple,
        versions: dict[str, Any],
        prepare_items: Callable[[list[str]], list[Entry]],
    ) -> PreparedList:
        """The prepared list of `kind` whose items have `versions`; `prepare_items(keys)` prepares new or changed
        items."""
        old_versions, prepared = self.take(store, list_id) or ({}, None)
        if prepared is None or prepared.kind is not kind:
            prepared = PreparedList(kind, prepare_items(list(versions)))
        elif versions != old_versions:
            changed = [key for key, version in versions.items() if old_versions.get(key) != version]
            prepared.changed(prepare_items(changed), [key for key in old_versions if key not in versions])
        self.keep(store, list_id, versions, prepared)
        return prepared


def list_entries(store: BaseStore, kind: MemoryKind, items: Sequence[Item], lists: ListCache) -> PreparedList:
    """The prepared list of a kind's items a store returned whole (any store): the unchanged items kept in `lists` are
    not split again."""
    if not items:
        return PreparedList(kind)
    by_key = {item.key: item for item in items}
    versions = {i.key: (i.created_at, i.updated_at, i.value) for i in items}
    list_id = tuple(items[0].namespace)
    return lists.prepare(store, kind, list_id, versions, lambda keys: [entry(by_key[k], kind) for k in keys])


def named_keys(prepared: PreparedList, wanted: Sequence[str], count: int) -> list[str]:
    """The `count` keys that the wanted terms match best (rarer terms weigh more; ties: the most recently changed).

    A term that more than `COMMON` items share brings forward only its `count` most recently changed items,
    so the cost stays bounded however long the list: an item with a rarer term is scored on all its terms.
    """
    total = prepared.total
    weights: dict[str, float] = {}
    candidates: dict[str, None] = {}
    for term in dict.fromkeys(wanted):
        keys = prepared.keys_with(term)
        if keys:
            weights[term] = math.log(1 + total / len(keys))
            candidates.update(dict.fromkeys(keys if len(keys) <= COMMON else itertools.islice(reversed(keys), count)))
    index = prepared.index
    score = {key: sum(weight for term, weight in weights.items() if key in index[term]) for key in candidates}
    entries = prepared.entries
    return heapq.nsmallest(count, score, key=lambda key: (-score[key], entries[key].recency))


def rank_entries(prepared: PreparedList, wanted: Sequence[str], quotas: Quotas) -> Candidates:
    """Rank a list by its index and orders: the candidates within `quotas`, at a cost that does not grow with it."""
    entries = prepared.entries
    total = prepared.total
    orderings = [
        ("named", [entries[key] for key in named_keys(prepared, wanted, quotas.named)]),
        ("recent", prepared.by_recency[: quotas.recent]),
        ("deadline", prepared.deadlines[: quotas.deadline]),
        ("open", prepared.open_by_recency[: quotas.limit]),
    ]
    if total <= quotas.limit:
        orderings.append(("all", list(entries.values())))
    rank = {ordering: {e.key: n for n, e in enumerate(chosen, 1)} for ordering, chosen in orderings}
    picked = {e.key: e for _, chosen in orderings for e in chosen}
    ranked = [
        Ranked(e.item, *(rank[ordering].get(key) for ordering in ("named", "recent", "deadline", "open")))
        for key, e in picked.items()
    ]
    return Candidates(prepared.kind, ranked, total, prepared.open_total)


def choose(candidates: Candidates, limit: int, semantic_hits: Sequence[Item] = ()) -> Selection:
    """Pick up to `limit` items by relevance from the candidates; count the rest."""
    ranked = candidates.ranked
    if candidates.total <= limit:
        recent_first = sorted((r.item for r in ranked), key=lambda item: (item.updated_at, item.created_at), reverse=True)
        return Selection(_oldest_first(recent_first), relevance=tuple(item.key for item in recent_first))
    quotas = Quotas(limit)

    def by(ordering: str, quota: float) -> list[Item]:
        picked = [r for r in ranked if getattr(r, ordering) is not None and getattr(r, ordering) <= quota]
        return [r.item for r in sorted(picked, key=lambda r: getattr(r, ordering))]

    order = [
        *by("named", quotas.named),
        *semantic_hits[: quotas.semantic],
        *by("recent", quotas.recent),
        *by("deadline", quotas.deadline),
        *by("open", math.inf),
    ]
    chosen: dict[str, Item] = {}
    for item in order:
        if len(chosen) == limit:
            break
        chosen.setdefault(item.key, item)
    shown = _oldest_first(chosen.values())
    hidden_open = candidates.open_total - sum(1 for item in shown if candidates.kind.is_open(item.value))
    return Selection(shown, hidden_open, candidates.total - len(shown) - hidden_open, tuple(chosen))


def _oldest_first(items) -> list[Item]:
    return sorted(items, key=lambda item: (item.created_at, item.key))


def semantic_hits(store: BaseStore, user_id: str, query: str, limit: int, kind: MemoryKind) -> list[Item]:
    """Items of `kind` the store's semantic index finds for the query (none without an index,
    for a kind with no indexed fields, or while the index fails)."""
    if not (query and limit and kind.indexed_fields and getattr(store, "index_config", None)):
        return []
    return search_by_meaning(store, namespace(kind, user_id), query, limit)

