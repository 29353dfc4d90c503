"""One conversation with the agent: send a message, stream the reply's tokens and what memory changed."""

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.graph.state import CompiledStateGraph

from graph.change_notes import change_notes
from graph.tool_calls import last_human_message

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
