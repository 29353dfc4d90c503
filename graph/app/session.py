"""One conversation with the agent: send a message, stream the reply's tokens and what memory changed."""

import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import groupby, takewhile
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph.state import CompiledStateGraph

from graph.backends.thread_locks import ThreadLocks
from graph.memory.history import iter_history
from graph.memory.kinds import MemoryKind, kind_for_update
from graph.memory.notes import change_notes
from graph.names import AGENT_NAME
from graph.nodes.update import MEMORY_UPDATE_EVENT
from graph.run_context import RunContext
from graph.runtime import runtime_of
from graph.thread.cut_replies import cut_notice
from graph.thread.text_calls import speakable_prefix
from graph.thread.tokens import truncation_notice
from graph.thread.tool_calls import last_human_message, pending_update_calls, turn_answered
from graph.thread.turn_markers import streamable_part


@dataclass(frozen=True)
class Token:
    """A piece of the assistant's reply; `message_id` tells the replies of one turn apart."""

    text: str
    message_id: str


@dataclass(frozen=True)
class Note:
    """A one-line note that a memory changed, e.g. "ToDo added: Book swim lessons"; `failed` when it says that an
    update saved less than it was asked (e.g. "ToDo list not updated: the update failed")."""

    text: str
    failed: bool = False


@dataclass(frozen=True)
class Notice:
    """A sentence the reply carries for the user besides its streamed text, e.g. that their message was cut."""

    text: str


@dataclass(frozen=True)
class Progress:
    """Memories are being updated now (the update calls are not streamed): show that something is happening."""

    text: str


@dataclass(frozen=True)
class StoppedTurn:
    """What a turn stopped half-way had saved: the user's message, the memory changes (as notes), the reply, and
    whether memory updates it asked for were still to run (a reply given first, stopped before they ran)."""

    message_saved: bool
    notes: list[str]
    reply_saved: bool = False
    updates_pending: bool = False


@dataclass
class _Shown:
    """What a turn has shown so far: each reply's text by message id, and whether the cut-message notice was."""

    notice: str
    streamed: dict[str, str] = field(default_factory=dict)
    noticed: bool = False


class ThreadOwnerError(Exception):
    """The thread asked for belongs to another user."""


def _new_in_turn(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The messages of a chat-node update after the user's message (a repaired thread repeats older ones)."""
    last_human = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
    return list(messages[last_human + 1 :])


def thread_owner(graph: CompiledStateGraph, thread_id: str) -> str | None:
    """The user a thread was run for, or None when it has no checkpoint yet.

    LangGraph copies the run's `user_id` into checkpoint metadata; an empty one means the default user.
    """
    latest = graph.checkpointer.get_tuple({"configurable": {"thread_id": thread_id}})
    if latest is None:
        return None
    return RunContext(user_id=latest.metadata.get("user_id") or "").resolved_user_id


def updating_text(calls: Sequence[Mapping[str, Any]], kinds: Sequence[MemoryKind]) -> str:
    """What `UpdateMemory` calls are about to update among `kinds`, e.g. "Updating your profile and ToDo list…"."""
    titles = dict.fromkeys(kind_for_update(kinds, call["args"]["update_type"]).title for call in calls)
    return f"Updating your {' and '.join(titles)}…"


class ChatSession:
    """A user's conversation on one thread of a graph compiled with a checkpointer and a store.

    With `locks`, the session holds its thread's lock until it switches thread (or the locks close), so that no
    other chat writes the thread meanwhile; a thread another chat holds is left for a new one (`busy_thread`).
    """

    def __init__(
        self,
        graph: CompiledStateGraph,
        user_id: str,
        thread_id: str | None = None,
        model: str | None = None,
        *,
        locks: ThreadLocks | None = None,
        kinds: Sequence[MemoryKind] | None = None,
    ) -> None:
        """Talk to `graph` as `user_id` on `thread_id` (a new thread when None), with an optional model name;
        `kinds` are the graph's memory kinds (default: those of the graph's `GraphRuntime`).

        Raises `ThreadOwnerError` when `thread_id` is another user's thread.
        """
        self.graph = graph
        self.kinds = tuple(kinds) if kinds is not None else runtime_of(graph).kinds
        self.user_id = user_id
        self.model = model
        self.locks = locks
        self.busy_thread: str | None = None
        self.thread_id = ""
        self._turn_started = datetime.now(timezone.utc)
        self._turn_message_id: str | None = None
        owner = thread_owner(graph, thread_id) if thread_id else None
        if owner is not None and owner != RunContext(user_id=user_id).resolved_user_id:
            raise ThreadOwnerError(f"thread {thread_id} belongs to another user")
        if thread_id and not self._hold(thread_id):
            self.busy_thread, thread_id = thread_id, None
        self._switch(thread_id or str(uuid.uuid4()))

    def _hold(self, thread_id: str) -> bool:
        return self.locks is None or self.locks.acquire(thread_id)

    def _switch(self, thread_id: str) -> None:
        """Make `thread_id` the session's thread, holding its lock and releasing the previous thread's."""
        if not self._hold(thread_id):
            raise RuntimeError(f"thread {thread_id} is held by another chat")
        if self.locks is not None and self.thread_id not in ("", thread_id):
            self.locks.release(self.thread_id)
        self.thread_id = thread_id

    @property
    def config(self) -> dict:
        """The run config: thread, user and (when chosen) model."""
        configurable = {"thread_id": self.thread_id, "user_id": self.user_id}
        if self.model:
            configurable["model"] = self.model
        return {"configurable": configurable}

    def new_thread(self) -> str:
        """Switch to a fresh thread (memories stay, messages don't) and return its id."""
        self._switch(str(uuid.uuid4()))
        return self.thread_id

    def send(self, text: str) -> Iterator[Token | Note | Notice | Progress]:
        """Run one turn, yielding reply tokens as the model streams them, a Note per memory change, a Progress
        while memories are being updated and a Notice for what the reply says besides its streamed text.

        When the previous turn failed part-way and `text` is the message it failed on, the turn is resumed
        from where it stopped instead of adding the message twice.
        """
        self._turn_started = datetime.now(timezone.utc)
        state = self.graph.get_state(self.config)
        messages = state.values.get("messages", [])
        finished = turn_answered(messages)
        latest_user = last_human_message(messages)
        retry = (bool(state.next) or not finished) and latest_user is not None and latest_user.text == text
        user_message = latest_user if retry else HumanMessage(content=text, id=str(uuid.uuid4()))
        self._turn_message_id = user_message.id
        received: dict[str, str] = {}
        shown_so_far = _Shown(truncation_notice(user_message))
        streamed = shown_so_far.streamed
        for mode, payload in self.graph.stream(
            None if retry else {"messages": [user_message]},
            self.config,
            stream_mode=["messages", "updates", "custom"],
        ):
            if mode == "messages":
                message, metadata = payload
                if metadata.get("langgraph_node") == AGENT_NAME and isinstance(message, AIMessage) and message.text:
                    received[message.id] = received.get(message.id, "") + message.text
                    # A reply that may still be a call written as text is held back until it is stored; what
                    # follows a chat-template turn marker is never the model's reply.
                    speakable = speakable_prefix(streamable_part(received[message.id]))
                    if len(speakable) > len(shown := streamed.get(message.id, "")):
                        streamed[message.id] = speakable
                        yield Token(speakable[len(shown) :], message.id)
            elif mode == "custom":
                outcome = (payload.get(MEMORY_UPDATE_EVENT) if isinstance(payload, dict) else None) or {}
                yield from (Note(note, failed=bool(outcome.get("failed"))) for note in outcome.get("notes", []))
            elif update := payload.get(AGENT_NAME):
                messages = update.get("messages", []) if isinstance(update, dict) else []
                yield from _chat_events(_new_in_turn(messages), shown_so_far, self.kinds)

    def stopped_turn(self) -> StoppedTurn:
        """What the latest turn, stopped half-way, saved: the user's message, the memory changes, the reply."""
        messages = self.graph.get_state(self.config).values.get("messages", [])
        message_saved = any(message.id == self._turn_message_id for message in messages)
        turn = _new_in_turn(messages) if message_saved else []
        replied = any(isinstance(message, AIMessage) and message.text.strip() for message in turn)
        started = self._turn_started.isoformat()  # history times are written the same way: UTC isoformat
        recent = takewhile(lambda entry: entry["time"] >= started, iter_history(self.graph.store, self.user_id))
        entries = [entry for entry in recent if entry.get("thread_id") == self.thread_id][::-1]
        notes = [
            note
            for kind, group in groupby(entries, key=lambda entry: entry["kind"])
            for note in change_notes({"kind": kind, "changes": [_change_fields(entry) for entry in group]}, self.kinds)
        ]
        return StoppedTurn(message_saved, notes, reply_saved=replied, updates_pending=bool(pending_update_calls(turn)))


def _change_fields(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {name: entry[name] for name in ("action", "key", "before", "after")}


def _chat_events(
    new_messages: Sequence[AnyMessage], shown: _Shown, kinds: Sequence[MemoryKind]
) -> Iterator[Token | Notice | Progress]:
    """Events for the chat node's new messages: replies not streamed, what a stored reply adds to its streamed
    text (what was held back while it might have been a call written as text), the notice that the user's
    message was cut (once a turn, whichever reply carries it), the notice that the reply was cut at the token
    limit, and progress when memory updates follow. What is shown is recorded in `shown`, so a reply the chat
    node stores again (moved after its calls' answers) is not shown twice."""
    for message in new_messages:
        if not isinstance(message, AIMessage):
            continue
        noted = bool(shown.notice) and message.text.startswith(shown.notice)
        text = message.text.removeprefix(shown.notice).lstrip() if noted else message.text
        seen = shown.streamed.get(message.id, "")
        cut = cut_notice(message) if seen != text else ""
        told = text.removesuffix(cut).rstrip() if cut else text
        streamed = seen.rstrip()
        if told.startswith(streamed) and told[len(streamed) :].strip():
            yield Token(told[len(streamed) :], message.id)  # not streamed, or what was held back and is not a call
        if text:
            shown.streamed[message.id] = text
        if noted and not shown.noticed:
            shown.noticed = True
            yield Notice(shown.notice)
        if cut:
            yield Notice(cut)
    if calls := pending_update_calls(new_messages):
        yield Progress(updating_text(calls, kinds))
