"""One conversation with the agent: send a message, stream the reply's tokens and what memory changed."""

import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.graph.state import CompiledStateGraph

from graph.memory.changes import MemoryChange
from graph.memory.store import INSTRUCTIONS, PROFILE, TODO
from graph.thread.tool_calls import last_human_message

CHAT_NODE = "task_maistro"


@dataclass(frozen=True)
class Token:
    """A piece of the assistant's reply; `message_id` tells the replies of one turn apart."""

    text: str
    message_id: str


@dataclass(frozen=True)
class Note:
    """A one-line note that a memory changed, e.g. "ToDo added: Book swim lessons"."""

    text: str


def _todo_note(change: MemoryChange) -> str:
    task = (change.after or change.before or {}).get("task") or change.key
    if change.action == "created":
        return f"ToDo added: {task}"
    if change.action == "deleted":
        return f"ToDo removed: {task}"
    if "status" in change.changed_fields() and (change.after or {}).get("status") == "done":
        return f"ToDo done: {task}"
    return f"ToDo updated: {task} ({', '.join(change.changed_fields())})"


def change_notes(artifact: Mapping[str, Any] | None) -> list[str]:
    """Notes for the changes an update node reported in its ToolMessage artifact (none when nothing changed)."""
    if not artifact:
        return []
    secrets = artifact.get("secrets") or []
    withheld = [f"Not saved (secrets are never stored): {', '.join(secrets)}"] if secrets else []
    return _change_notes(artifact) + withheld


def _change_notes(artifact: Mapping[str, Any]) -> list[str]:
    changes = [MemoryChange(**change) for change in artifact.get("changes") or []]
    kind = artifact.get("kind")
    if kind == TODO:
        return [_todo_note(change) for change in changes]
    if kind == PROFILE and changes:
        fields = dict.fromkeys(
            name
            for change in changes
            for name in change.changed_fields()
            if (change.before or {}).get(name) or (change.after or {}).get(name)
        )
        return [f"Profile updated ({', '.join(fields)})"]
    if kind == INSTRUCTIONS and changes:
        return ["Instructions updated"]
    return []


def _new_in_turn(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The messages of a chat-node update after the user's message (a repaired thread repeats older ones)."""
    last_human = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
    return list(messages[last_human + 1 :])


class ChatSession:
    """A user's conversation on one thread of a graph compiled with a checkpointer and a store."""

    def __init__(
        self, graph: CompiledStateGraph, user_id: str, thread_id: str | None = None, model: str | None = None
    ) -> None:
        """Talk to `graph` as `user_id` on `thread_id` (a new thread when None), with an optional model name."""
        self.graph = graph
        self.user_id = user_id
        self.thread_id = thread_id or str(uuid.uuid4())
        self.model = model

    @property
    def config(self) -> dict:
        """The run config: thread, user and (when chosen) model."""
        configurable = {"thread_id": self.thread_id, "user_id": self.user_id}
        if self.model:
            configurable["model"] = self.model
        return {"configurable": configurable}

    def new_thread(self) -> str:
        """Switch to a fresh thread (memories stay, messages don't) and return its id."""
        self.thread_id = str(uuid.uuid4())
        return self.thread_id

    def send(self, text: str) -> Iterator[Token | Note]:
        """Run one turn, yielding reply tokens as the model streams them and a Note per memory change.

        When the previous turn failed part-way and `text` is the message it failed on, the turn is resumed
        from where it stopped instead of adding the message twice.
        """
        state = self.graph.get_state(self.config)
        messages = state.values.get("messages", [])
        finished = bool(messages) and isinstance(messages[-1], AIMessage) and not messages[-1].tool_calls
        latest_user = last_human_message(messages)
        retry = (bool(state.next) or not finished) and latest_user is not None and latest_user.text == text
        streamed: set[str] = set()
        for mode, payload in self.graph.stream(
            None if retry else {"messages": [HumanMessage(content=text)]},
            self.config,
            stream_mode=["messages", "updates"],
        ):
            if mode == "messages":
                message, metadata = payload
                if metadata.get("langgraph_node") == CHAT_NODE and isinstance(message, AIMessage) and message.text:
                    streamed.add(message.id)
                    yield Token(message.text, message.id)
                continue
            for node, update in payload.items():
                messages = update.get("messages", []) if isinstance(update, dict) else []
                if node == CHAT_NODE:
                    yield from (
                        Token(m.text, m.id)
                        for m in _new_in_turn(messages)
                        if isinstance(m, AIMessage) and m.text and m.id not in streamed
                    )
                else:
                    yield from (
                        Note(note)
                        for m in messages
                        if isinstance(m, ToolMessage)
                        for note in change_notes(m.artifact)
                    )
