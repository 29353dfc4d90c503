"""Tool-call bookkeeping: every tool call in the thread gets exactly one `ToolMessage` answer.

OpenAI (and strict OpenAI-compatible servers) answer HTTP 400 when an assistant message with tool calls is
not followed by an answer to each call, so the chat node checks and repairs the thread before calling the
model, and answers calls it cannot route itself.
"""

from collections.abc import Sequence

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from pydantic import TypeAdapter, ValidationError

from prompts import INTERRUPTED_ANSWER, INVALID_UPDATE_ANSWER, LIMIT_REPLY, MALFORMED_CALL_ANSWER, UNKNOWN_TOOL_ANSWER
from schemas import UpdateMemory

_update_memory_args = TypeAdapter(UpdateMemory)


def _call_ids(message: AIMessage) -> list[str]:
    return [call["id"] for call in (*message.tool_calls, *message.invalid_tool_calls) if call.get("id")]


def _answered_ids(messages: Sequence[AnyMessage]) -> set[str]:
    return {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}


def last_ai_message(messages: Sequence[AnyMessage]) -> AIMessage | None:
    """The most recent assistant message of the thread."""
    return next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)


def last_human_message(messages: Sequence[AnyMessage]) -> HumanMessage | None:
    """The user's most recent message in the thread."""
    return next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)


def pending_update_calls(messages: Sequence[AnyMessage], update_type: str | None = None) -> list[dict]:
    """Valid `UpdateMemory` calls of the latest assistant message that have no answer yet."""
    message = last_ai_message(messages)
    if message is None:
        return []
    answered = _answered_ids(messages)
    return [
        call
        for call in message.tool_calls
        if call["id"] not in answered
        and update_memory_error(call) is None
        and (update_type is None or call["args"]["update_type"] == update_type)
    ]


def update_memory_error(call: dict) -> str | None:
    """Why a tool call is not a valid `UpdateMemory` call, or None when it is."""
    if call.get("name") != "UpdateMemory":
        return UNKNOWN_TOOL_ANSWER.format(name=call.get("name"))
    try:
        _update_memory_args.validate_python(call.get("args"))
    except ValidationError:
        return INVALID_UPDATE_ANSWER.format(args=call.get("args"))
    return None


def reject_invalid_calls(message: AIMessage) -> list[ToolMessage]:
    """Error answers for the calls of `message` that cannot be routed (unknown tool, bad or malformed arguments)."""
    answers = [
        ToolMessage(content=error, tool_call_id=call["id"], status="error")
        for call in message.tool_calls
        if (error := update_memory_error(call)) is not None
    ]
    answers += [
        ToolMessage(
            content=MALFORMED_CALL_ANSWER.format(error=call.get("error") or "not valid JSON"),
            tool_call_id=call["id"],
            status="error",
        )
        for call in message.invalid_tool_calls
        if call.get("id")
    ]
    return answers


def without_tool_calls(message: AIMessage) -> AIMessage:
    """The message with its tool calls dropped, for a model that calls tools after they were taken away."""
    if not (message.tool_calls or message.invalid_tool_calls):
        return message
    return AIMessage(content=message.content or LIMIT_REPLY, id=message.id, response_metadata=message.response_metadata)


def answer_dangling_tool_calls(messages: Sequence[AnyMessage]) -> list[AnyMessage] | None:
    """The thread with an answer inserted after every unanswered tool call, or None if none is missing.

    Answers go right after the calling message's existing answers, where strict servers expect them.
    """
    answered = _answered_ids(messages)
    repaired: list[AnyMessage] = []
    missing: list[ToolMessage] = []
    for message in messages:
        if missing and not isinstance(message, ToolMessage):
            repaired.extend(missing)
            missing = []
        repaired.append(message)
        if isinstance(message, AIMessage):
            missing = [
                ToolMessage(content=INTERRUPTED_ANSWER, tool_call_id=call_id, status="error")
                for call_id in _call_ids(message)
                if call_id not in answered
            ]
    repaired.extend(missing)
    return repaired if len(repaired) != len(messages) else None


def spoken_messages(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The user's and the assistant's words: tool calls and their answers left out, the assistant's text kept."""
    spoken: list[AnyMessage] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            spoken.append(message)
        elif isinstance(message, AIMessage) and message.text:
            spoken.append(message if not message.tool_calls else AIMessage(content=message.text, id=message.id))
    return spoken


def chat_history(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """What the chat prompt carries of a thread: ended turns without their tool-call bookkeeping, the rest whole.

    Once a turn has ended (with a reply that calls no tool) its UpdateMemory calls and their answers are only
    bookkeeping: the reply says what changed, and the memories are in the system prompt. A turn cut short
    keeps them, so the model sees that its update was interrupted; so does the current turn.
    """
    starts = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    history: list[AnyMessage] = list(messages[: starts[0]] if starts else messages)
    for start, end in zip(starts, [*starts[1:], len(messages)]):
        turn = messages[start:end]
        ended = end < len(messages) and isinstance(turn[-1], AIMessage) and not turn[-1].tool_calls
        history += spoken_messages(turn) if ended else turn
    return history


def memory_rounds_in_turn(messages: Sequence[AnyMessage]) -> int:
    """How many assistant messages with tool calls followed the user's latest message."""
    rounds = 0
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            break
        if isinstance(message, AIMessage) and (message.tool_calls or message.invalid_tool_calls):
            rounds += 1
    return rounds
