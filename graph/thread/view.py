"""A thread's messages read once: what the chat node needs to know about them, parsed in one pass.

`ThreadView.of(messages)` names the latest user and assistant messages, the call ids the thread holds and the
ones answered, the latest assistant message's pending UpdateMemory calls, the memory rounds of the current
turn and the turns themselves, so the chat node reads like its docstring and fault handling has one place
to look. The helpers of `graph.thread.tool_calls` answer the same questions for other modules.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from graph.thread.tool_calls import call_ids, split_turns, unanswered_update_calls


@dataclass(frozen=True)
class ThreadView:
    """One reading of a thread (see the module's docstring); `messages` are the messages it was read from."""

    messages: tuple[AnyMessage, ...]
    latest_user: HumanMessage | None
    latest_ai: AIMessage | None
    call_ids: frozenset[str]
    answered_ids: frozenset[str]
    rounds: int

    @classmethod
    def of(cls, messages: Sequence[AnyMessage]) -> "ThreadView":
        """Read `messages` once."""
        latest_user = latest_ai = None
        calls: set[str] = set()
        answered: set[str] = set()
        rounds = 0
        for message in messages:
            if isinstance(message, HumanMessage):
                latest_user, rounds = message, 0
            elif isinstance(message, AIMessage):
                latest_ai = message
                calls.update(call_ids(message))
                rounds += bool(message.tool_calls or message.invalid_tool_calls)
            elif isinstance(message, ToolMessage):
                answered.add(message.tool_call_id)
        return cls(tuple(messages), latest_user, latest_ai, frozenset(calls), frozenset(answered), rounds)

    @property
    def last(self) -> AnyMessage | None:
        """The thread's last message."""
        return self.messages[-1] if self.messages else None

    @property
    def starts_turn(self) -> bool:
        """Whether the user's message is the last one: the chat node starts a turn."""
        return isinstance(self.last, HumanMessage)

    @cached_property
    def pending_calls(self) -> list[dict]:
        """The latest assistant message's UpdateMemory calls that have no answer yet."""
        return [] if self.latest_ai is None else unanswered_update_calls(self.latest_ai, self.answered_ids)

    @property
    def interrupted(self) -> bool:
        """Whether the user wrote again after a turn whose UpdateMemory calls were cut short before their update ran."""
        return self.starts_turn and bool(self.pending_calls)

    @property
    def idle(self) -> bool:
        """Whether nothing arrived that asks for an answer: the thread is empty, or ends with the assistant's words
        and no call (a run sent no new message)."""
        last = self.last
        return last is None or (isinstance(last, AIMessage) and not (last.tool_calls or last.invalid_tool_calls))

    @cached_property
    def turns(self) -> list[list[AnyMessage]]:
        """The thread cut before each user message (`split_turns`)."""
        return split_turns(self.messages)

    @property
    def taken_ids(self) -> frozenset[str]:
        """Every call id the thread holds or answers: a new call needs another."""
        return self.call_ids | self.answered_ids
