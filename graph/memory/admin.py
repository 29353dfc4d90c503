"""One user's data as a whole: export and import their memories, find their threads, forget them."""

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol, runtime_checkable

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore, Item, PutOp
from pydantic import ValidationError

from graph.memory.change_log import change_log
from graph.memory.changes import ChangeContext, MemoryChange, commit_changes, document_problem, validation_problem
from graph.memory.done_log import log_namespace, logged_kinds, move_finished, recount, valid_entry
from graph.memory.export_file import InvalidExportError, shape_problem, shown
from graph.memory.kinds import DEFAULT_MEMORY_KINDS, MemoryKind, UnknownKindError, kind_named, undeclared_kind
from graph.memory.provenance import past_fact_problem, past_facts
from graph.memory.redaction import redact, redact_text
from graph.memory.store import (
    DONE_LOG,
    HISTORY,
    INTERNAL_NAMESPACES,
    PAGE_SIZE,
    PAST,
    UNSTORABLE_CHARACTERS,
    namespace,
    search_all,
    user_label,
)
from schemas import HistoryEntry

EXPORT_FORMAT = "task-maistro memories v1"
MAX_KEY_LENGTH = 256
# What the history says an imported document came from.
IMPORT_MESSAGE = "Imported from an export"
# How far past the importing machine's clock a history entry may be dated (clocks differ a little).
CLOCK_ALLOWANCE = timedelta(minutes=10)


def sections(kinds: Sequence[MemoryKind]) -> tuple[str, ...]:
    """An export's sections: one per memory kind, by name, then the history."""
    return (*(kind.name for kind in kinds), HISTORY)


def export_memories(store: BaseStore, user_id: str, kinds: Sequence[MemoryKind] = DEFAULT_MEMORY_KINDS) -> dict[str, Any]:
    """Every stored document of the user and their change history: for each section, store key → value, keys
    sorted. A section for each of `kinds` (the graph's; default: the default kinds), then one for
    each memory namespace `(name, user)` of a kind not declared, as it is stored (`undeclared_sections` names
    them), then the history, then (when the user has one) the done logs, `"done_log": {kind: {key: entry}}`
    (`graph.memory.done_log`; their counts are not exported: an import counts again), then (when there are any) the
    past facts (`graph.memory.provenance`). The agent's own bookkeeping (`INTERNAL_NAMESPACES`) is not the user's
    memory, and is left out."""
    stored: dict[str, dict[str, Any]] = {}
    logs: dict[str, dict[str, Any]] = {}
    for item in user_items(store, user_id):
        if len(item.namespace) == 2 and item.namespace[0] not in (*INTERNAL_NAMESPACES, DONE_LOG):
            stored.setdefault(item.namespace[0], {})[item.key] = item.value
        elif len(item.namespace) == 3 and item.namespace[0] == DONE_LOG:
            logs.setdefault(item.namespace[2], {})[item.key] = item.value
    names = [*(kind.name for kind in kinds), *sorted(set(stored) - {*sections(kinds)}), HISTORY]
    exported: dict[str, Any] = {"format": EXPORT_FORMAT}
    for name in names:
        exported[name] = dict(sorted(stored.get(name, {}).items()))
    if logs:
        exported[DONE_LOG] = {name: dict(sorted(entries.items())) for name, entries in sorted(logs.items())}
    if past := {item.key: item.value for item in past_facts(store, user_id)}:
        exported[PAST] = dict(sorted(past.items()))
    return exported


def undeclared_sections(data: Mapping[str, Any], kinds: Sequence[MemoryKind]) -> list[str]:
    """The sections of an export that hold memories of kinds not among `kinds` (they travel as stored)."""
    return [name for name in data if name not in {"format", DONE_LOG, PAST, *sections(kinds)}]


def _key_problem(key: Any) -> str | None:
    if not isinstance(key, str) or not key:
        return "its key must be a non-empty string"
    if len(key) > MAX_KEY_LENGTH:
        return f"its key is longer than {MAX_KEY_LENGTH} characters"
    if UNSTORABLE_CHARACTERS.search(key):
        return "its key contains a control character"
    return None


def _history_problem(key: str, value: Any, now: datetime, kinds: Sequence[MemoryKind]) -> str | None:
    """Why `value` is not a history entry that may be imported under `key`; None when it is one."""
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return "it is not JSON"
    try:
        entry = HistoryEntry.model_validate_json(text)
    except ValidationError as error:
        return validation_problem(error)
    if entry.id != key:
        return "its id differs from its key"
    if datetime.fromisoformat(entry.time) > now + CLOCK_ALLOWANCE:
        return "its time is in the future"
    if (entry.after is None) != (entry.action == "deleted"):
        return f'a change "{entry.action}" must have an "after" document exactly when it did not delete one'
    try:
        kind = kind_named(kinds, entry.kind)
    except UnknownKindError:
        return _placement_problem(entry.kind)  # a kind not declared: its documents are kept as they are
    for field, document in (("before", entry.before), ("after", entry.after)):
        if document is not None and (problem := document_problem(kind, entry.key, document)):
            return f'its "{field}" is not a valid {entry.kind} ({problem})'
    return None


def _past_kind_problem(fact: dict[str, Any], kinds: Sequence[MemoryKind]) -> str | None:
    """Why a past fact's kind cannot be kept for a user (one that no memory can be called); None when it can."""
    try:
        kind_named(kinds, fact["kind"])
    except UnknownKindError:
        return _placement_problem(fact["kind"])
    return None


def _placement_problem(name: str) -> str | None:
    """Why documents of the undeclared kind `name` cannot be stored for a user; None when they can."""
    if name in INTERNAL_NAMESPACES:
        return f"{name!r} holds the agent's own bookkeeping, which no import writes"
    try:
        undeclared_kind(name)
    except ValueError:
        return f"no memory can be called {name!r} (a memory's name is a Python identifier other than {HISTORY})"
    return None


def _item_problem(section: str, key: Any, value: Any, now: datetime, kinds: Sequence[MemoryKind]) -> str | None:
    if problem := _key_problem(key):
        return problem
    if section == HISTORY:
        return _history_problem(key, value, now, kinds)
    if section == PAST:
        return past_fact_problem(key, value, now + CLOCK_ALLOWANCE) or _past_kind_problem(value, kinds)
    try:
        kind = kind_named(kinds, section)
    except UnknownKindError:  # a kind not declared: any JSON object, as it was stored
        return None if isinstance(value, dict) else "a stored memory document is a JSON object"
    return document_problem(kind, key, value)


def _checked_export(data: Any, kinds: Sequence[MemoryKind]) -> dict[str, dict[str, Any]]:
    """The export's sections, keys and values redacted, once every item is checked; else `InvalidExportError`."""
    if not isinstance(data, Mapping) or data.get("format") != EXPORT_FORMAT:
        raise InvalidExportError(f'not a task-maistro memory export (expected "format": "{EXPORT_FORMAT}")')
    if problem := shape_problem(data):
        raise InvalidExportError(problem)
    undeclared = undeclared_sections(data, kinds)
    for name in undeclared:
        if problem := _placement_problem(str(name)):
            raise InvalidExportError(f'the section "{shown(name)}" cannot be imported: {problem}')
    now = datetime.now(timezone.utc)
    checked: dict[str, dict[str, Any]] = {}
    for name in (*sections(kinds)[:-1], *undeclared, HISTORY, PAST):
        section = data.get(name) or {}
        if not isinstance(section, Mapping):
            raise InvalidExportError(f'"{name}" must map keys to values')
        redacted: dict[str, Any] = {}
        for key, value in section.items():
            if problem := _item_problem(name, key, value, now, kinds):
                raise InvalidExportError(f'"{name}" item "{shown(key)}" is invalid: {problem}')
            safe_key = redact_text(key)[0]
            if safe_key in redacted:
                raise InvalidExportError(
                    f'"{name}" item "{shown(key)}" has the same key as another once secrets are redacted'
                )
            redacted[safe_key] = redact(value)[0]
        checked[name] = redacted
    return checked


def _checked_done_log(data: Mapping[str, Any], kinds: Sequence[MemoryKind]) -> dict[str, dict[str, Any]]:
    """An export's done logs (kind name → log key → entry), keys and values redacted, once every entry is checked: a
    done document of a declared kind that keeps a done log, with an aware completion time not in the future; else
    `InvalidExportError`."""
    logs = data.get(DONE_LOG, {})
    if not isinstance(logs, Mapping):
        raise InvalidExportError(f'"{DONE_LOG}" must map memory kinds to their logs')
    now = datetime.now(timezone.utc)
    checked: dict[str, dict[str, Any]] = {}
    for name, entries in logs.items():
        kind = next((kind for kind in logged_kinds(kinds) if kind.name == name), None)
        if kind is None:
            raise InvalidExportError(f'the done log of "{shown(name)}" cannot be imported: no declared memory kind of that name keeps one')
        if not isinstance(entries, Mapping):
            raise InvalidExportError(f'"{DONE_LOG}" "{shown(name)}" must map keys to entries')
        redacted: dict[str, Any] = {}
        for key, value in entries.items():
            problem = _key_problem(key) or document_problem(kind, key, value)
            finished = valid_entry(kind, value) if problem is None else None
            if problem is None and finished is None:
                problem = f"a done-log entry is a {kind.label} with status {kind.done_status!r} and its {kind.completed_field}"
            elif finished is not None and finished > now + CLOCK_ALLOWANCE:
                problem = f"its {kind.completed_field} is in the future"
            if problem:
                raise InvalidExportError(f'"{DONE_LOG}" "{shown(name)}" item "{shown(key)}" is invalid: {problem}')
            redacted[redact_text(key)[0]] = redact(value)[0]
        checked[name] = redacted
    return checked


def import_memories(
    store: BaseStore, user_id: str, data: Any, kinds: Sequence[MemoryKind] = DEFAULT_MEMORY_KINDS
) -> dict[str, int]:
    """Write an export's memories and history to the user (same keys; other items stay); returns counts by section.

    The export may hold a section for each of `kinds` (default: MAISTRO_MEMORY_KINDS, else the default kinds),
    and sections of kinds not declared (an export made with another setting): those are written as they are,
    each document a JSON object, under the section's name (refused only when no memory can have that name).
    The export must be within an import's bounds (`graph.memory.export_file.shape_problem`: items, text length,
    depth, plain JSON), and the agent's own bookkeeping (`INTERNAL_NAMESPACES`) is neither a section nor a kind a
    history entry may name. Every item is
    checked first: memories against their stored schemas (`MemoryKind.stored_schema`), history
    entries against `HistoryEntry` and their documents against their memory's schema, not dated in the future;
    keys are non-empty, at most `MAX_KEY_LENGTH` characters, without control characters; past facts
    (`graph.memory.provenance.PastFact`, the `past_facts` section) keyed by the change that ended them, their times
    ISO 8601 with an offset, not in the future, `valid_from` not after `valid_to`. The first problem
    raises `InvalidExportError` with one sentence, and nothing is written. Secrets are redacted from keys and
    values. The export's history is written as it is; then each memory's documents go the way every change
    does (`graph.memory.changes.commit_changes`): a document the import creates or replaces gets a history
    entry, so it can be undone, and archived ToDos get their expiry (counted from the import); a done ToDo keeps the
    `completed_at` the export gives it (one without stays without, and counts from the import). The done logs
    (`"done_log"`) are checked entry by entry too (a done document of a declared kind that keeps a log, with its
    completion time, not in the future), written as they are, and counted again. Documents already
    stored as they are in the export are left alone. Each write is one transaction in this project's stores,
    whatever its size; an import cut short can be run again.
    """
    checked = _checked_export(data, kinds)
    logs = _checked_done_log(data, kinds)
    if checked[HISTORY]:
        store.batch([PutOp(namespace(HISTORY, user_id), key, entry, index=False) for key, entry in checked[HISTORY].items()])
    if checked[PAST]:
        store.batch([PutOp(namespace(PAST, user_id), key, fact, index=False) for key, fact in checked[PAST].items()])
    context = ChangeContext(thread_id="", message=IMPORT_MESSAGE, seed=f"import/{uuid.uuid4()}")
    for kind in [*kinds, *map(undeclared_kind, undeclared_sections(checked, kinds))]:
        ns = namespace(kind, user_id)
        stored = {item.key: item.value for item in search_all(store, ns) if item.namespace == ns}
        changes = [
            MemoryChange("created" if stored.get(key) is None else "updated", key, stored.get(key), value)
            for key, value in checked[kind.name].items()
            if stored.get(key) != value
        ]
        if changes:
            commit_changes(store, user_id, kind, changes, context, trusted_completion=True)
    for name, entries in logs.items():
        kind = kind_named(kinds, name)
        store.batch([PutOp(log_namespace(kind, user_id), key, entry, index=False) for key, entry in entries.items()])
        recount(store, user_id, kind)
    move_finished(store, user_id, kinds, force=True)  # done documents finished long ago move now
    counts = {name: len(section) for name, section in checked.items() if name != PAST or section}
    if logs:
        counts[DONE_LOG] = sum(len(entries) for entries in logs.values())
    return counts


def user_items(store: BaseStore, user_id: str) -> list[Item]:
    """Every store item in any namespace of the user (`(kind, user, ...)`), whatever the kind."""
    namespaces: list[tuple[str, ...]] = []
    while True:
        page = store.list_namespaces(prefix=("*", user_label(user_id)), limit=PAGE_SIZE, offset=len(namespaces))
        namespaces.extend(page)
        if len(page) < PAGE_SIZE:
            break
    return [item for ns in namespaces for item in search_all(store, ns) if item.namespace == ns]


def user_threads(checkpointer: BaseCheckpointSaver, user_id: str) -> list[str]:
    """Ids of the threads run for the user (from the `user_id` LangGraph copies into checkpoint metadata), newest first."""
    threads: dict[str, None] = {}
    for checkpoint in checkpointer.list(None, filter={"user_id": user_id}):
        threads.setdefault(checkpoint.config["configurable"]["thread_id"], None)
    return list(threads)


def last_thread(checkpointer: BaseCheckpointSaver, user_id: str) -> str | None:
    """The id of the user's most recently written thread, or None when the user has none."""
    latest = next(iter(checkpointer.list(None, filter={"user_id": user_id}, limit=1)), None)
    return latest.config["configurable"]["thread_id"] if latest else None


@runtime_checkable
class ThreadForgetter(Protocol):
    """A checkpointer that deletes many threads at once and counts what it deleted (this project's savers)."""

    def forget_threads(self, thread_ids: Sequence[str]) -> dict[str, int]:
        """Delete every row of the threads in one transaction; the rows deleted, by table."""
        ...


@dataclass(frozen=True)
class ForgetReceipt:
    """What `forget_user` did: how many memories (store items, history entries included) and threads it deleted,
    the rows deleted by table (`rows`), what it did to the space they held (`erased`), and what may still hold
    copies of them and why (`kept`), one sentence each."""

    memories: int
    threads: int
    rows: dict[str, int]
    erased: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()


def forget_user(store: BaseStore, checkpointer: BaseCheckpointSaver, user_id: str) -> ForgetReceipt:
    """Delete every memory and every thread of the user, and overwrite what they held on disk; returns the receipt.

    On this project's stores everything stored in the user's namespaces goes in one transaction — memories,
    history, index-outage markers, their embeddings, list-index rows and change-log rows
    (`graph.memory.change_log.ChangeLogStore.forget_user_items`); then the threads' checkpoints (the messages that
    quote the memories), and the space all of it held is overwritten (`erase_deleted`: SQLite rebuilds the file and
    empties its write-ahead log, PostgreSQL rewrites the tables). A memory another process writes, in a namespace
    of the user that did not exist yet, while this runs stays. Any other store or checkpointer deletes through its
    own API, without erasure.
    """
    items = user_items(store, user_id)
    threads = user_threads(checkpointer, user_id)
    logged = change_log(store)
    if logged is not None:
        rows = logged.forget_user_items(user_id, sorted({item.namespace for item in items}))
    else:
        if items:
            store.batch([PutOp(item.namespace, item.key, None) for item in items])
        rows = {"store items": len(items)}
    if isinstance(checkpointer, ThreadForgetter):
        rows.update(checkpointer.forget_threads(threads))
    else:
        for thread_id in threads:
            checkpointer.delete_thread(thread_id)
        rows["threads"] = len(threads)
    erasure = logged.erase_deleted([table for table, count in rows.items() if count]) if logged is not None else None
    return ForgetReceipt(
        memories=rows.get("store", len(items)),
        threads=len(threads),
        rows=rows,
        erased=erasure.done if erasure else (),
        kept=erasure.kept if erasure else (),
    )
