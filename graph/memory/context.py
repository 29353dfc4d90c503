"""What a turn knows of the user's memories: read once when the turn starts, shared by the nodes of the turn.

The chat node reads every memory kind's documents, each collection (the ToDo list, any collection kind) ranked
and bounded (`graph.memory.selection`). On SQLite and PostgreSQL it reads them all in one SQL statement that
returns only the collections' documents changed since this process last read each list (the store's
`read_memory_rows`, see `graph.memory.change_log`); any other store is read through its own API. It ranks
each list, and keeps the result for the turn, keyed by the turn's user message: its second call (the answer
after an update) shows the same memories, so the prompt's prefix stays the same for the endpoint's prompt
cache, and an update node patches the documents that selection chose without reading the list again
(`documents_to_update`). The tool answers tell the model what changed in between, and an update node sees the
changes of earlier rounds of its turn (`with_turn_changes`). A graph that did not see the turn start (a
resumed run, another process) reads afresh. What a graph keeps of its reads is its `MemoryReads`.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage, ToolMessage
from langgraph.store.base import BaseStore, Item

from graph.memory.change_log import change_log
from graph.memory.done_log import counts_namespace, counts_of, log_line, move_finished, read_bookkeeping
from graph.memory.kinds import MemoryKind, UnknownKindError, kind_named
from graph.memory.list_reads import ListReader, head_candidates, updated_list
from graph.memory.rendering import render_collection, render_documents
from graph.memory.selection import (
    Candidates,
    ListCache,
    Quotas,
    Selection,
    choose,
    list_entries,
    query_terms,
    rank_entries,
    recent_user_text,
    semantic_hits,
)
from graph.memory.stale import raise_stale, stale_record_key
from graph.memory.store import read_kind
from graph.memory.user_time import profile_zone
from graph.recent import Recent
from graph.run_context import RunContext

TURNS_KEPT = 256


@dataclass(frozen=True)
class TurnRead:
    """One read of a user's memories: each collection's ranked candidates and every other kind's documents, by
    kind name; and the documents of the user's done-log bookkeeping asked for, by key (None: absent)."""

    candidates: dict[str, Candidates]
    documents: dict[str, list[dict[str, Any]]]
    bookkeeping: dict[str, Item | None] = field(default_factory=dict)


@dataclass(frozen=True)
class TurnMemories:
    """The memories a turn works with: two selections of each collection (for the chat prompt and for an update),
    and every other kind's documents, by kind name; `now` is the time of the user's message, in the user's zone,
    and `zone` the time zone the user's profile holds ("" for none); `bookkeeping`: the done-log documents read
    with them (`read_turn`)."""

    store: BaseStore
    documents: Mapping[str, list[dict[str, Any]]]
    prompt: Mapping[str, Selection]
    update: Mapping[str, Selection]
    now: datetime | None = None
    zone: str = ""
    notes: Mapping[str, str] = field(default_factory=dict)
    bookkeeping: Mapping[str, Item | None] = field(default_factory=dict)

    def shown(self, kind: MemoryKind) -> str:
        """The kind's memories as the chat prompt shows them: a collection's documents chosen for the turn, else
        its documents (`graph.memory.rendering`), what is due said against the turn's `now`; then the turn's
        notes on the kind (its done log's counts, stale documents raised once: `turn_notes`)."""
        if kind.collection:
            shown = render_collection(kind, self.prompt[kind.name], self.now)
        else:
            shown = render_documents(kind, self.documents[kind.name], self.now)
        note = self.notes.get(kind.name)
        return "\n".join(part for part in (shown, note) if part) if note else shown

    def shown_documents(self, kinds: Sequence[MemoryKind]) -> dict[str, list[tuple[str, dict[str, Any]]]]:
        """The (key, document) pairs the chat prompt shows of each kind, by kind name: a collection's chosen ones, a
        single document under its kind's key."""
        return {
            kind.name: [(item.key, item.value) for item in self.prompt[kind.name].items] if kind.collection
            else [(kind.key, document) for document in self.documents[kind.name]]
            for kind in kinds
        }

    def context_of(self, kind: MemoryKind, kinds: Sequence[MemoryKind]) -> dict[str, str]:
        """What `kind`'s extraction reads of other kinds (`MemoryKind.context_kinds`), by name: each one's memories
        as the chat prompt shows them; "" for one that `kinds`, the kinds read, do not declare."""
        context = {}
        for name in kind.context_kinds:
            try:
                context[name] = self.shown(kind_named(kinds, name))
            except UnknownKindError:
                context[name] = ""
        return context


@dataclass(eq=False)
class MemoryReads:
    """What one graph keeps of the memories its turns read: each turn's read (`turns`, by turn), the lists prepared
    (`lists`) and the reader of whole lists in the background (`reader`). Nothing is shared between graphs."""

    turns: Recent[tuple, TurnMemories] = field(default_factory=lambda: Recent(TURNS_KEPT))
    lists: ListCache = field(default_factory=ListCache)
    reader: ListReader = field(init=False)

    def __post_init__(self) -> None:
        self.reader = ListReader(self.lists)

    def clear(self) -> None:
        """Forget every read, after the background reads under way are done."""
        self.reader.settle()
        self.turns.clear()
        self.lists.clear()


def read_turn(
    store: BaseStore,
    user_id: str,
    wanted: Sequence[str],
    quotas: Quotas,
    kinds: Sequence[MemoryKind],
    reads: MemoryReads | None = None,
    bookkeeping: Sequence[str] = (),
) -> TurnRead:
    """The user's memories of `kinds`, read once: in one SQL statement on SQLite and PostgreSQL, else with the
    store's own reads; each collection ranked for the `wanted` terms within `quotas`. The documents of the user's
    done-log counts namespace under the keys `bookkeeping` (`graph.memory.done_log.read_bookkeeping`) ride along
    in the same statement.

    On SQLite and PostgreSQL the statement returns only the documents of each collection changed since this
    process last read it (`graph.memory.change_log.ChangeLogStore.read_memory_rows`), and only those are
    prepared again; a long list the process does not hold yet is read by its head, only what the turn can show,
    and whole in the background (`graph.memory.list_reads`). What is kept between reads is kept in `reads` (None:
    nothing is kept, as in a fresh process).
    """
    reads = reads or MemoryReads()
    collections = [kind for kind in kinds if kind.collection]
    logged = change_log(store)
    if logged is None:
        candidates = {
            kind.name: rank_entries(list_entries(store, kind, read_kind(store, kind, user_id), reads.lists), wanted, quotas)
            for kind in collections
        }
        documents = {
            kind.name: [item.value for item in read_kind(store, kind, user_id)] for kind in kinds if not kind.collection
        }
        return TurnRead(candidates, documents, read_bookkeeping(store, user_id, bookkeeping) if bookkeeping else {})
    kept = {}
    for kind in collections:
        state = reads.lists.take(store, (kind.name, user_id))
        kept[kind.name] = state if state and state[1].kind is kind else None  # not one of another declaration
    candidates = {}
    for kind in collections:
        if kept[kind.name] is None:
            head = head_candidates(store, logged, user_id, kind, wanted, quotas, reads.reader)
            if head is not None:
                candidates[kind.name] = head
    marks = {name: state[0][0] for name, state in kept.items() if state}
    stored = [(counts_namespace(user_id), key) for key in bookkeeping]
    rows = logged.read_memory_rows(user_id, [kind for kind in kinds if kind.name not in candidates], marks, stored)
    for kind in collections:
        if kind.name in candidates:
            continue
        state = kept[kind.name] if kind.name not in rows.whole else None
        versions, prepared = updated_list(kind, (state[0][1], state[1]) if state else None, rows.changes[kind.name])
        candidates[kind.name] = rank_entries(prepared, wanted, quotas)
        reads.lists.keep(store, (kind.name, user_id), (rows.marks[kind.name], versions), prepared)
    documents = {name: [item.value] if item else [] for name, item in rows.documents.items()}
    return TurnRead(candidates, documents, {key: rows.stored[(counts_namespace(user_id), key)] for key in bookkeeping})


def read_turn_memories(
    store: BaseStore,
    settings: RunContext,
    messages: Sequence[AnyMessage],
    kinds: Sequence[MemoryKind],
    reads: MemoryReads | None = None,
    bookkeeping: Sequence[str] = (),
) -> TurnMemories:
    """Read the memories of `kinds` for a turn: each kind's documents, and each collection's documents for the
    prompt and for an update (at most `collection_prompt_limit` and `collection_update_limit`, the ones relevant
    to the turn); `reads` keeps what the next reads reuse (None: nothing); the done-log documents under the keys
    `bookkeeping` are read with them (`read_turn`)."""
    user_id = settings.resolved_user_id
    query = recent_user_text(messages)
    prompt_limit, update_limit = settings.collection_prompt_limit, settings.collection_update_limit
    widest = Quotas(max(prompt_limit, update_limit))
    read = read_turn(store, user_id, query_terms(query), widest, kinds, reads, bookkeeping)
    prompt: dict[str, Selection] = {}
    update: dict[str, Selection] = {}
    for name, candidates in read.candidates.items():
        many = candidates.total > min(prompt_limit, update_limit)
        hits = semantic_hits(store, user_id, query, widest.semantic, candidates.kind) if many else []
        prompt[name] = choose(candidates, prompt_limit, hits)
        update[name] = choose(candidates, update_limit, hits)
    zone = profile_zone(read.documents)
    return TurnMemories(
        store=store, documents=read.documents, prompt=prompt, update=update, now=settings.now(zone), zone=zone,
        bookkeeping=read.bookkeeping,
    )



def select_collection(
    kind: MemoryKind, store: BaseStore, user_id: str, query: str, limit: int, reads: MemoryReads | None = None
) -> Selection:
    """The documents of the collection `kind` a turn whose user says `query` shows the user: all of them up to
    `limit`, else the most relevant; `reads` keeps what the next reads reuse (None: nothing)."""
    settings = RunContext(user_id=user_id, collection_prompt_limit=limit, collection_update_limit=limit)
    return read_turn_memories(store, settings, [HumanMessage(query)], (kind,), reads).prompt[kind.name]


def turn_memories(
    store: BaseStore,
    settings: RunContext,
    messages: Sequence[AnyMessage],
    thread_id: str,
    kinds: Sequence[MemoryKind],
    reads: MemoryReads,
) -> TurnMemories:
    """The turn's memories of `kinds`: kept in `reads` from the turn's first read, else read now (and kept)."""
    key = _turn_key(store, settings, messages, thread_id, kinds)
    kept = reads.turns.get(key)
    if kept is not None and kept.store is store:
        return kept
    memories = read_turn_memories(store, settings, messages, kinds, reads)
    reads.turns.put(key, memories)
    return memories


def start_turn(
    store: BaseStore,
    settings: RunContext,
    messages: Sequence[AnyMessage],
    thread_id: str,
    kinds: Sequence[MemoryKind],
    reads: MemoryReads,
) -> TurnMemories:
    """Read the memories of `kinds` afresh, with the done log's counts and stale records in the same read; move
    what was finished long ago into the done log (`graph.memory.done_log.move_finished`: no look at a list the
    read found without a closed document) and, when something moved, read them again; then add the turn's notes
    (`turn_notes`) and keep them in `reads` for the rest of the turn."""
    key = _turn_key(store, settings, messages, thread_id, kinds)
    reads.turns.pop(key)
    now = settings.now()
    user_id = settings.resolved_user_id
    collections = [kind for kind in kinds if kind.collection]
    bookkeeping = [name for kind in collections for name in (kind.name, stale_record_key(kind))]
    memories = read_turn_memories(store, settings, messages, kinds, reads, bookkeeping)
    settled = [kind.name for kind in collections if not closed_count(kind, memories.prompt[kind.name])]
    if move_finished(store, user_id, kinds, now, counts=memories.bookkeeping, settled=settled):
        memories = read_turn_memories(store, settings, messages, kinds, reads, bookkeeping)
    memories = replace(memories, notes=turn_notes(store, user_id, kinds, memories, now, memories.bookkeeping))
    reads.turns.put(key, memories)
    return memories


def closed_count(kind: MemoryKind, selection: Selection) -> int:
    """How many closed documents the list a `selection` of the collection `kind` was chosen from holds: those it
    shows and those it leaves out."""
    return selection.hidden_closed + sum(1 for item in selection.items if not kind.is_open(item.value))


def turn_notes(
    store: BaseStore,
    user_id: str,
    kinds: Sequence[MemoryKind],
    memories: TurnMemories,
    now: datetime,
    bookkeeping: Mapping[str, Item | None],
) -> dict[str, str]:
    """What the chat prompt says of each collection besides its documents, by kind name: its done log's counts by
    month (`graph.memory.done_log.log_line`), and its stale documents, raised once (`graph.memory.stale`);
    `bookkeeping`: the counts documents and stale records the turn read (`read_bookkeeping`)."""
    notes = {}
    for kind in kinds:
        if not kind.collection:
            continue
        items = memories.prompt[kind.name].items
        stored = bookkeeping[stale_record_key(kind)]
        lines = [raise_stale(store, user_id, kind, items, now, stored)] if kind.deadline_field else []
        if kind.done_status:
            lines.append(log_line(kind, counts_of(bookkeeping[kind.name])[0], now))
        if text := "\n".join(line for line in lines if line):
            notes[kind.name] = text
    return notes


def _turn_key(
    store: BaseStore, settings: RunContext, messages: Sequence[AnyMessage], thread_id: str, kinds: Sequence[MemoryKind]
) -> tuple:
    latest = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
    return (
        id(store),
        settings.resolved_user_id,
        thread_id,
        latest.id if latest else None,
        settings.collection_prompt_limit,
        settings.collection_update_limit,
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


def documents_to_update(
    store: BaseStore,
    settings: RunContext,
    messages: Sequence[AnyMessage],
    thread_id: str,
    kinds: Sequence[MemoryKind],
    kind: MemoryKind,
    reads: MemoryReads,
    *,
    fresh: bool = False,
) -> tuple[TurnMemories, dict[str, dict]]:
    """The turn's memories and the documents of the collection `kind` an update may patch or delete: those the
    turn's read chose for an update, with the changes of the turn's earlier rounds applied. `fresh` reads the
    memories again (after another writer changed them): what it read wins over those changes. `reads` is the
    graph's (`MemoryReads`)."""
    read = start_turn if fresh else turn_memories
    memories = read(store, settings, messages, thread_id, kinds, reads)
    reachable = {item.key: item.value for item in memories.update[kind.name].items}
    existing = with_turn_changes(reachable, messages, kind)
    if fresh:
        existing.update(reachable)
    return memories, existing
