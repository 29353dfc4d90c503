"""The done log: finished documents leave their collection for a log of the user's own, counted by month.

A kind that declares a done status (`MemoryKind.done_status`, the ToDos' "done") keeps only what is open or
recently finished in its collection: a document finished longer ago than MAISTRO_DONE_LOG_AFTER_DAYS (its
`completed_field`; a document finished before that field existed counts from its last change) moves, by the
user's next turn at the latest (`move_finished`, which the turn, `maistro todos`, `maistro done` and the memory
page call before they read, and the store's TTL sweep for every user, `sweep_done_logs`), into the user's done log: namespace `(DONE_LOG, <user label>, <kind>)`, one entry per
finished document, the document itself with its completion time. The same store batch deletes it from the
collection, writes the entry, and adds it to the user's count by month (`(DONE_LOG, <user label>)`, key: the
kind's name), all conditioned on what was read (`graph.memory.conditions`): a document is never in both places nor
in neither, and two writers moving at once move it once (the second's batch fails, it reads again and finds
nothing left to move). The move is no change of the user's memory and has no history entry: an undo of the
change that finished a moved document finds it gone and says so.

The log is the user's: it is exported and imported (validated as any import is, `graph.memory.admin`), read by
`maistro done`, and deleted by forget (it lives in the user's namespaces). Its entries may have been written
through a server's store API, so every read checks that each is a done document with a completion time and skips
what is not; an import checks each against the kind's stored schema.
The chat prompt carries only the counts of the last `MONTHS_SHOWN` months (`log_line`), never the entries, so a
long log costs the prompt a line.
"""

import logging
import re
import uuid
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from typing import Any

from langgraph.store.base import BaseStore, GetOp, Item, PutOp

from graph.memory.completion import completed_at, is_done
from graph.memory.conditions import ConflictError, Unchanged, write_unless_changed
from graph.memory.kinds import MemoryKind
from graph.memory.store import (
    DONE_LOG,
    PAGE_SIZE,
    WHOLE_NAMESPACE,
    InvalidUserIdError,
    namespace,
    search_all,
    user_from_label,
    user_label,
)
from graph.settings import current_settings

logger = logging.getLogger(__name__)

ENTRY_KEYS = uuid.UUID("5d7f3e8a-2b1c-4f6e-9a0d-3c8b7e1f4a26")
# How often a move is tried again after another writer moved or changed documents in between.
MOVE_ATTEMPTS = 3
# How many months of counts the chat prompt carries (`log_line`).
MONTHS_SHOWN = 12
MONTHS = "months"
NEXT_CHECK = "next_check"
MONTH = re.compile(r"\d{4}-(0[1-9]|1[0-2])")
# How far before a look its next one is due when no done document is left: a document marked done as the look ran
# (its time taken just before) is still caught by the next look.
CHECK_MARGIN = timedelta(minutes=1)


def logged_kinds(kinds: Sequence[MemoryKind]) -> list[MemoryKind]:
    """The kinds among `kinds` that keep a done log: collections that declare a done status."""
    return [kind for kind in kinds if kind.collection and kind.done_status]


def log_namespace(kind: MemoryKind, user_id: str) -> tuple[str, str, str]:
    """The namespace of the user's done log of `kind`."""
    return (DONE_LOG, user_label(user_id), kind.name)


def counts_namespace(user_id: str) -> tuple[str, str]:
    """The namespace of the user's done-log counts (one document per kind, keyed by the kind's name)."""
    return (DONE_LOG, user_label(user_id))


def entry_key(key: str, finished: datetime) -> str:
    """The log key of the document `key` finished at `finished`: the same for every writer that moves it."""
    return str(uuid.uuid5(ENTRY_KEYS, f"{key}\n{finished.astimezone(timezone.utc).isoformat()}"))


def month_of(finished: datetime) -> str:
    """The month (UTC) a finish counts in, as "YYYY-MM"."""
    return finished.astimezone(timezone.utc).strftime("%Y-%m")


def finished_at(kind: MemoryKind, item: Item) -> datetime:
    """When a finished document was finished: its completion field, else (written before it had one) its last change."""
    moment = completed_at(item.value.get(kind.completed_field))
    if moment is not None:
        return moment
    changed = item.updated_at
    return changed if changed.tzinfo else changed.replace(tzinfo=timezone.utc)


def read_counts(store: BaseStore, user_id: str, kind: MemoryKind) -> tuple[dict[str, int], dict[str, Any] | None]:
    """The user's finishes of `kind` by month ("YYYY-MM" → count), and the counts document as stored (None: none);
    a month or count that is not one is left out."""
    return counts_of(store.get(counts_namespace(user_id), kind.name))


def read_bookkeeping(store: BaseStore, user_id: str, keys: Sequence[str]) -> dict[str, Item | None]:
    """The user's documents of the done-log counts namespace under `keys` (a kind's counts, its stale record), in
    one read: a turn reads them all at once instead of one statement each."""
    items = store.batch([GetOp(counts_namespace(user_id), key, refresh_ttl=False) for key in keys])
    return dict(zip(keys, items, strict=True))


def counts_of(item: Item | None) -> tuple[dict[str, int], dict[str, Any] | None]:
    """The finishes by month of a counts document as read (`read_counts`), and its stored value (None: none)."""
    stored = item.value if item else None
    months = stored.get(MONTHS) if isinstance(stored, dict) else None
    if not isinstance(months, dict):
        return {}, stored
    valid = {}
    for month, count in months.items():
        if isinstance(count, int) and not isinstance(count, bool) and count > 0 and _is_month(month):
            valid[month] = count
    return valid, stored


def _is_month(text: Any) -> bool:
    return isinstance(text, str) and MONTH.fullmatch(text) is not None


def _counts_value(months: Mapping[str, int], next_check: datetime | None = None) -> dict[str, Any]:
    value: dict[str, Any] = {MONTHS: dict(sorted(months.items()))}
    return value if next_check is None else {**value, NEXT_CHECK: next_check.isoformat()}


def move_finished(
    store: BaseStore,
    user_id: str,
    kinds: Sequence[MemoryKind],
    now: datetime | None = None,
    *,
    force: bool = False,
    counts: Mapping[str, Item | None] | None = None,
    settled: Collection[str] = (),
) -> int:
    """Move the user's documents finished more than MAISTRO_DONE_LOG_AFTER_DAYS before `now` (default: the current
    time) into their done log, in one conditioned batch per kind (see the module's docstring); how many moved.
    A batch that another writer beat is read again, up to `MOVE_ATTEMPTS` times; what is still left then moves on
    the next call.

    The counts document also records when the list next needs a look (`NEXT_CHECK`: the earliest finish among the
    done documents left on the list, or the time of the look less `CHECK_MARGIN` when none is left; a document
    marked done later is finished later): until the cutoff passes it, a call reads that one document and nothing
    else; a user who never finished anything has none (each call looks, and finds nothing). `force` looks
    anyway (after an import, which may bring documents finished long ago). `counts`: the counts documents already
    read by kind name (`read_bookkeeping`), used for the first attempt. `settled`: the names of the kinds whose
    list the caller has just read (or counted) and found without a closed document: nothing there to move, so no
    look; a turn's read tells that for free, so a user who never finished anything costs a turn no search."""
    now = now or datetime.now(timezone.utc)
    cutoff = now - timedelta(days=current_settings().done_log_after_days)
    moved = 0
    for kind in logged_kinds(kinds):
        if kind.name in settled and not force:
            continue
        for attempt in range(MOVE_ATTEMPTS):
            known = counts_of(counts[kind.name]) if counts is not None and attempt == 0 else None
            try:
                moved += _move_once(store, user_id, kind, now, cutoff, force, known)
                break
            except ConflictError:
                continue
    return moved


def _next_check(stored: Any) -> datetime | None:
    """The stored time the list next needs a look, if the counts document holds a valid one (an aware time)."""
    return completed_at(stored.get(NEXT_CHECK)) if isinstance(stored, dict) else None


def _move_once(
    store: BaseStore,
    user_id: str,
    kind: MemoryKind,
    now: datetime,
    cutoff: datetime,
    force: bool,
    known: tuple[dict[str, int], dict[str, Any] | None] | None,
) -> int:
    months, stored_counts = known if known is not None else read_counts(store, user_id, kind)
    next_check = _next_check(stored_counts)
    if not force and next_check is not None and cutoff < next_check:
        return 0
    ns = namespace(kind, user_id)
    found = store.search(ns, filter={kind.status_field: kind.done_status}, limit=WHOLE_NAMESPACE)
    finished = [(item, finished_at(kind, item)) for item in found if item.namespace == ns and is_done(kind, item.value)]
    due = [(item, moment) for item, moment in finished if moment <= cutoff]
    if not finished and stored_counts is None:
        return 0  # nothing finished yet: no log to start, and the next look costs as little as this one
    later = min([moment for _, moment in finished if moment > cutoff] + [now - CHECK_MARGIN])
    log_ns = log_namespace(kind, user_id)
    conditions: list[Unchanged] = [Unchanged(counts_namespace(user_id), kind.name, stored_counts)]
    puts: list[PutOp] = []
    added: Counter[str] = Counter()
    for item, moment in due:
        key = entry_key(item.key, moment)
        conditions += [Unchanged(ns, item.key, item.value), Unchanged(log_ns, key, None)]
        entry = {**item.value, kind.completed_field: moment.isoformat()}
        puts += [PutOp(ns, item.key, None), PutOp(log_ns, key, entry, index=False)]
        added[month_of(moment)] += 1
    counts = Counter(months) + added
    puts.append(PutOp(counts_namespace(user_id), kind.name, _counts_value(counts, later), index=False))
    write_unless_changed(store, conditions, puts)
    return len(due)


def logged_entry(store: BaseStore, user_id: str, kind: MemoryKind, key: str, document: Any) -> str | None:
    """When the done document `document`, kept under `key` in the user's collection of `kind`, was finished, as a
    date, if it has moved into the done log since (an undo of the change that finished it finds it gone); else None."""
    moment = completed_at(document.get(kind.completed_field)) if is_done(kind, document) else None
    if moment is None or store.get(log_namespace(kind, user_id), entry_key(key, moment)) is None:
        return None
    return moment.date().isoformat()


def sweep_done_logs(store: BaseStore, kinds: Sequence[MemoryKind], now: datetime | None = None) -> int:
    """Move, for every user with a collection of `kinds` that keeps a done log, what is due to move
    (`move_finished`: for most users one read of their counts document); how many moved. A namespace that names no
    user is passed by with a log line."""
    moved = 0
    for kind in logged_kinds(kinds):
        namespaces: list[tuple[str, ...]] = []
        while True:
            page = store.list_namespaces(prefix=(kind.name,), max_depth=2, limit=PAGE_SIZE, offset=len(namespaces))
            namespaces.extend(page)
            if len(page) < PAGE_SIZE:
                break
        for ns in namespaces:
            try:
                moved += move_finished(store, user_from_label(ns[1]), [kind], now)
            except (IndexError, InvalidUserIdError):
                logger.warning("The done-log sweep passed by the namespace %r: it names no user.", ns)
    return moved


@dataclass(frozen=True)
class LoggedEntry:
    """One entry of a done log: its key, the finished document, and when it was finished."""

    key: str
    document: dict[str, Any]
    finished: datetime


def valid_entry(kind: MemoryKind, document: Any) -> datetime | None:
    """When the log entry `document` of `kind` was finished, if it is one (a JSON object, done, with an aware
    completion time: a document the list held may predate its schema's rules, and is shown as it was); else None."""
    if not isinstance(document, dict) or not is_done(kind, document):
        return None
    return completed_at(document.get(kind.completed_field))


def read_log(store: BaseStore, user_id: str, kind: MemoryKind, since: date | datetime | None = None) -> list[LoggedEntry]:
    """The user's done log of `kind`, oldest finish first; only what was finished at or after `since` (a date is
    its start in UTC) when given. Entries that are not valid ones (`valid_entry`) are left out."""
    if isinstance(since, date) and not isinstance(since, datetime):
        since = datetime(since.year, since.month, since.day, tzinfo=timezone.utc)
    entries = []
    log_ns = log_namespace(kind, user_id)
    for item in search_all(store, log_ns):
        finished = valid_entry(kind, item.value) if item.namespace == log_ns else None
        if finished is not None and (since is None or finished >= since):
            entries.append(LoggedEntry(item.key, item.value, finished))
    return sorted(entries, key=lambda entry: (entry.finished, entry.key))


def recount(store: BaseStore, user_id: str, kind: MemoryKind) -> dict[str, int]:
    """Count the user's done log of `kind` by month again from its entries and store the counts (after an import);
    returns them."""
    for _ in range(MOVE_ATTEMPTS):
        counts = Counter(month_of(entry.finished) for entry in read_log(store, user_id, kind))
        _, stored = read_counts(store, user_id, kind)
        try:
            write_unless_changed(
                store,
                [Unchanged(counts_namespace(user_id), kind.name, stored)],
                [PutOp(counts_namespace(user_id), kind.name, _counts_value(counts), index=False)],
            )
            return dict(counts)
        except ConflictError:
            continue
    raise ConflictError([Unchanged(counts_namespace(user_id), kind.name, None)])


def log_line(kind: MemoryKind, months: Mapping[str, int], now: datetime) -> str:
    """The done log as the chat prompt carries it: the count of each of the last `MONTHS_SHOWN` months (UTC) that
    has finishes, and the total; "" for an empty log."""
    if not months:
        return ""
    current = now.astimezone(timezone.utc)
    shown: list[str] = []
    year, month = current.year, current.month
    for _ in range(MONTHS_SHOWN):
        label = f"{year:04d}-{month:02d}"
        if months.get(label):
            shown.append(f"{label}: {months[label]}")
        year, month = (year, month - 1) if month > 1 else (year - 1, 12)
    total = sum(months.values())
    recent = "; ".join(shown) if shown else f"none in the last {MONTHS_SHOWN} months"
    return (
        f"Done log (finished {kind.plural} moved off the list; by month, UTC): {recent}. "
        f"{total:,} in all since {min(months)}."
    )
