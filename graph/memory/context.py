"""What a turn knows of the user's memories: read once when the turn starts, shared by the nodes of the turn.

The chat node reads every memory kind's documents (the ToDo list ranked, see below). It reads the profile, the
instructions and the ToDo list in one go (one SQL statement on
SQLite and PostgreSQL that returns only the ToDos changed since this process last read the list, the
store's `read_memory_rows`, see `graph.memory.change_log`), ranks the list, and keeps the result for the turn, keyed by
the turn's user message: its second call (the answer after an update) shows the same memories, so the
prompt's prefix stays the same for the endpoint's prompt cache, and the update node patches the items that
selection chose without reading the list again. The tool answers tell the model what changed in between,
and an update node sees the changes of earlier rounds of its turn (`with_turn_changes`). A process that did
not see the turn start (a resumed run) reads afresh. Any other memory kind is read through the store's API.
"""

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage, ToolMessage
from langgraph.store.base import BaseStore, Item

from graph.configuration import Configuration
from graph.memory.change_log import change_log
from graph.memory.kinds import INSTRUCTIONS, PROFILE, TODO, MemoryKind
from graph.memory.selection import (
    LISTS,
    Candidates,
    Entry,
    PreparedList,
    Quotas,
    TodoSelection,
    choose,
    entry,
    list_entries,
    query_terms,
    rank_entries,
    recent_user_text,
    semantic_hits,
)
from graph.memory.store import read_kind

TURNS_KEPT = 256
_turns: OrderedDict[tuple, "TurnMemories"] = OrderedDict()
_turns_lock = threading.Lock()


@dataclass(frozen=True)
class TurnRead:
    """One read of a user's memories: the ranked ToDo candidates, and every other kind's documents by kind name."""

    candidates: Candidates
    documents: dict[str, list[dict[str, Any]]]


@dataclass(frozen=True)
class TurnMemories:
    """The memories a turn works with: its two ToDo selections, and every other kind's documents by kind name."""

    store: BaseStore
    documents: Mapping[str, list[dict[str, Any]]]
    prompt_todos: TodoSelection
    update_todos: TodoSelection

    def text(self, kind: MemoryKind) -> str:
        """The text of a free-text kind ("" when none was written)."""
        documents = self.documents.get(kind.name) or [{}]
        return documents[0].get("memory", "")


def read_turn(
    store: BaseStore, user_id: str, wanted: Sequence[str], quotas: Quotas, kinds: Sequence[MemoryKind]
) -> TurnRead:
    """The user's memories of `kinds`, read once: the defaults in one SQL statement on SQLite and PostgreSQL, else
    (and any other kind) with the store's own reads.

    On SQLite and PostgreSQL the statement returns only the ToDos changed since this process last read the list
    (`graph.memory.change_log.ChangeLogStore.read_memory_rows`), and only those are prepared again; the first read in a process reads them all.
    """
    logged = change_log(store)
    if logged is None:
        entries = list_entries(store, read_kind(store, TODO, user_id))
        return TurnRead(rank_entries(entries, wanted, quotas), _documents(store, user_id, kinds, {}))
    list_id = (TODO.name, user_id)
    kept = LISTS.take(store, list_id)
    (mark, versions), prepared = kept if kept else ((None, {}), None)
    rows = logged.read_memory_rows(user_id, mark)
    if rows.whole:
        versions, prepared = {}, None
    changed: list[Entry] = []
    removed: list[str] = []
    for change in rows.changes:
        if change.item is None:
            if versions.pop(change.key, None) is not None:
                removed.append(change.key)
        elif versions.get(change.key) != change.version:
            versions[change.key] = change.version
            changed.append(entry(change.item))
    if prepared is None:
        prepared = PreparedList(changed)
    else:
        prepared.changed(changed, removed)
    candidates = rank_entries(prepared, wanted, quotas)
    LISTS.keep(store, list_id, (rows.mark, versions), prepared)
    read = {PROFILE.name: rows.profile, INSTRUCTIONS.name: rows.instructions}
    return TurnRead(candidates, _documents(store, user_id, kinds, read))


def _documents(
    store: BaseStore, user_id: str, kinds: Sequence[MemoryKind], read: Mapping[str, Item | None]
) -> dict[str, list[dict[str, Any]]]:
    """Each kind's documents but the ToDos' (ranked apart), by name: as `read` already holds them, else read now."""
    documents: dict[str, list[dict[str, Any]]] = {}
    for kind in kinds:
        if kind.name in read:
            documents[kind.name] = [read[kind.name].value] if read[kind.name] else []
        elif kind.name != TODO.name:
            documents[kind.name] = [item.value for item in read_kind(store, kind, user_id)]
    return documents


def read_turn_memories(
    store: BaseStore, settings: Configuration, messages: Sequence[AnyMessage], kinds: Sequence[MemoryKind]
) -> TurnMemories:
    """Read the memories of `kinds` for a turn: each kind's documents, and the ToDos for the prompt and for an update."""
    user_id = settings.resolved_user_id
    query = recent_user_text(messages)
    prompt_limit, update_limit = settings.todo_prompt_limit, settings.todo_update_limit
    widest = Quotas(max(prompt_limit, update_limit))
    read = read_turn(store, user_id, query_terms(query), widest, kinds)
    hits = semantic_hits(store, user_id, query, widest.semantic) if read.candidates.total > min(prompt_limit, update_limit) else []
    return TurnMemories(
        store=store,
        documents=read.documents,
        prompt_todos=choose(read.candidates, prompt_limit, hits),
        update_todos=choose(read.candidates, update_limit, hits),
    )


def select_todos(store: BaseStore, user_id: str, query: str, limit: int) -> TodoSelection:
    """The ToDo items a turn whose user says `query` shows the user: all of them up to `limit`, else the most relevant."""
    settings = Configuration(user_id=user_id, todo_prompt_limit=limit, todo_update_limit=limit)
    return read_turn_memories(store, settings, [HumanMessage(query)], (TODO,)).prompt_todos


def turn_memories(
    store: BaseStore,
    settings: Configuration,
    messages: Sequence[AnyMessage],
    thread_id: str,
    kinds: Sequence[MemoryKind],
) -> TurnMemories:
    """The turn's memories of `kinds`: kept from the turn's first read in this process, else read now (and kept)."""
    key = _turn_key(store, settings, messages, thread_id, kinds)
    with _turns_lock:
        kept = _turns.get(key)
        if kept is not None and kept.store is store:
            _turns.move_to_end(key)
            return kept
    memories = read_turn_memories(store, settings, messages, kinds)
    with _turns_lock:
        _turns[key] = memories
        while len(_turns) > TURNS_KEPT:
            _turns.popitem(last=False)
    return memories


def start_turn(
    store: BaseStore,
    settings: Configuration,
    messages: Sequence[AnyMessage],
    thread_id: str,
    kinds: Sequence[MemoryKind],
) -> TurnMemories:
    """Read the memories of `kinds` afresh at the start of a turn and keep them for the rest of it."""
    key = _turn_key(store, settings, messages, thread_id, kinds)
    with _turns_lock:
        _turns.pop(key, None)
    return turn_memories(store, settings, messages, thread_id, kinds)


def _turn_key(
    store: BaseStore, settings: Configuration, messages: Sequence[AnyMessage], thread_id: str, kinds: Sequence[MemoryKind]
) -> tuple:
    latest = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
    return (
        id(store),
        settings.resolved_user_id,
        thread_id,
        latest.id if latest else None,
        settings.todo_prompt_limit,
        settings.todo_update_limit,
        tuple(kind.name for kind in kinds),
    )


def with_turn_changes(existing: dict[str, dict], messages: Sequence[AnyMessage], kind: MemoryKind) -> dict[str, dict]:
    """`existing` documents with the changes that this turn's earlier update rounds saved to `kind` applied."""
    latest = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
    documents = dict(existing)
    for message in messages[latest + 1 :]:
        artifact = message.artifact if isinstance(message, ToolMessage) else None
        if not isinstance(artifact, dict) or artifact.get("kind") != kind.name:
            continue
        for change in artifact.get("changes") or []:
            if change.get("after") is None:
                documents.pop(change["key"], None)
            else:
                documents[change["key"]] = change["after"]
    return documents
