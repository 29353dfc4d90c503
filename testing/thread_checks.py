"""What the agent must never leave behind, whatever a model sent: read from a thread's messages and a user's ToDos.

Shared by the real-model tests (tests/real_models/), `python -m bench.real_models` and the fault table.
"""

import re
from collections import Counter
from collections.abc import Iterable, Sequence

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from graph.memory.store import namespace, search_all
from testing.stored_names import TODO


def unanswered_calls(messages: Sequence[AnyMessage]) -> list[str]:
    """Ids of tool calls no ToolMessage answers: a thread holding one is refused by strict servers (wedged)."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    return [call["id"] for m in messages if isinstance(m, AIMessage) for call in m.tool_calls if call["id"] not in answered]


def turns_without_reply(messages: Sequence[AnyMessage]) -> list[str]:
    """The user messages the thread holds no assistant words after (before the next user message)."""
    silent, current, spoken = [], None, True
    for message in messages:
        if isinstance(message, HumanMessage):
            if not spoken:
                silent.append(current)
            current, spoken = message.text, False
        elif isinstance(message, AIMessage) and message.text.strip():
            spoken = True
    return silent + ([current] if not spoken else [])


def doubled(tasks: Iterable[object]) -> list[str]:
    """The tasks that occur more than once, told apart by their words alone ("Buy milk." and "buy milk" are one)."""
    counted = Counter(" ".join(re.findall(r"\w+", str(task).casefold())) for task in tasks)
    return sorted(task for task, count in counted.items() if count > 1)


def doubled_todos(store, user_id: str) -> list[str]:
    """Tasks the user's ToDo list holds more than once (`doubled`)."""
    return doubled(item.value.get("task") for item in search_all(store, namespace(TODO, user_id)))
