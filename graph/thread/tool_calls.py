"""Tool-call bookkeeping: every tool call in the thread gets exactly one `ToolMessage` answer.

OpenAI (and strict OpenAI-compatible servers) answer HTTP 400 when an assistant message with tool calls is
not followed by an answer to each call, so the chat node checks and repairs the thread before calling the
model, and answers calls it cannot route itself.
"""

from collections.abc import Sequence, Set

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from graph.thread.model_message import UPDATE_TOOL, sendable_message
from graph.thread.reply_last import routing_start
from prompts import INTERRUPTED_ANSWER, LIMIT_REPLY


def call_ids(message: AIMessage) -> list[str]:
    """The ids of a message's calls, valid and invalid (an empty or missing id is left out)."""
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
    """`UpdateMemory` calls of the latest assistant message that have no answer yet (of `update_type`, if given).

    The chat node answers a call whose update type names no memory kind at once (`graph.thread.model_message`),
    so every call left unanswered names one.
    """
    message = last_ai_message(messages)
    if message is None:
        return []
    return [
        call
        for call in unanswered_update_calls(message, _answered_ids(messages))
        if update_type is None or call["args"]["update_type"] == update_type
    ]


def unanswered_update_calls(message: AIMessage, answered: Set[str]) -> list[dict]:
    """The `UpdateMemory` calls of `message` whose ids are not among the `answered` ones."""
    return [call for call in message.tool_calls if call["id"] not in answered and is_update_call(call)]


def is_update_call(call: dict) -> bool:
    """Whether a tool call is an `UpdateMemory` call with a text `update_type`."""
    args = call.get("args")
    return call.get("name") == UPDATE_TOOL and isinstance(args, dict) and isinstance(args.get("update_type"), str)


def without_tool_calls(message: AIMessage) -> AIMessage:
    """The message with its tool calls dropped, for a model that calls tools after they were taken away."""
    if not (message.tool_calls or message.invalid_tool_calls):
        return message
    return AIMessage(content=message.content or LIMIT_REPLY, id=message.id, response_metadata=message.response_metadata)


def sendable_calls(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The thread with every assistant message's calls as a strict server takes them (`sendable_message`): ids
    of their own, invalid calls kept as calls (threads stored before the chat node normalised replies)."""
    taken: set[str] = set()
    sendable: list[AnyMessage] = []
    for message in messages:
        if isinstance(message, AIMessage):
            message = sendable_message(message, taken)
            taken.update(call_ids(message))
        sendable.append(message)
    return sendable


def repair_tool_answers(messages: Sequence[AnyMessage]) -> list[AnyMessage] | None:
    """The thread with every call's answers right after the calling message, or None if it needs no repair.

    Strict servers expect them there. Answers that arrived later (an interrupted turn finished after the
    user's next message) move up, in the order they came; a call without an answer gets one saying it was
    interrupted. Calls a strict server would refuse (no id, a repeated id, invalid) are mended first.
    """
    original, messages = messages, sendable_calls(messages)
    caller = {call_id: index for index, m in enumerate(messages) if isinstance(m, AIMessage) for call_id in call_ids(m)}
    answers: dict[int, list[ToolMessage]] = {}
    for message in messages:
        if isinstance(message, ToolMessage) and message.tool_call_id in caller:
            answers.setdefault(caller[message.tool_call_id], []).append(message)
    repaired: list[AnyMessage] = []
    for index, message in enumerate(messages):
        if isinstance(message, ToolMessage) and message.tool_call_id in caller:
            continue
        repaired.append(message)
        if isinstance(message, AIMessage):
            given = answers.get(index, [])
            answered = {answer.tool_call_id for answer in given}
            repaired += given
            repaired += [
                ToolMessage(content=INTERRUPTED_ANSWER, tool_call_id=call_id, status="error")
                for call_id in call_ids(message)
                if call_id not in answered
            ]
    unchanged = len(repaired) == len(original) and all(a is b for a, b in zip(repaired, original, strict=True))
    return None if unchanged else repaired


def through_latest_calls(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The thread up to the latest assistant message and the answers after it.

    What an update node works from: user messages sent after a turn that was cut short, before its update
    nodes ran, belong to the next turn, not to the calls being finished.
    """
    routing = last_ai_message(messages)
    if routing is None:
        return list(messages)
    end = messages.index(routing) + 1
    while end < len(messages) and isinstance(messages[end], ToolMessage):
        end += 1
    return list(messages[:end])


def turn_answered(messages: Sequence[AnyMessage]) -> bool:
    """Whether the latest turn has its reply and nothing left to do: its last assistant message calls no tool, or
    it speaks to the user beside calls that are all answered (a reply given first, while the memories were saved:
    in the message, or right before it, `graph.thread.reply_last`).
    """
    position = next((i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], AIMessage)), None)
    if position is None:
        return False
    reply, after = messages[position], messages[position + 1 :]
    if not all(isinstance(message, ToolMessage) for message in after) or set(call_ids(reply)) - _answered_ids(after):
        return False
    return not call_ids(reply) or bool(reply.text.strip()) or routing_start(messages, position) < position


def spoken_messages(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The user's and the assistant's words: tool calls and their answers left out, the assistant's text kept."""
    spoken: list[AnyMessage] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            spoken.append(message)
        elif isinstance(message, AIMessage) and message.text:
            calls = message.tool_calls or message.invalid_tool_calls  # langchain-openai sends invalid calls too
            spoken.append(AIMessage(content=message.text, id=message.id) if calls else message)
    return spoken


def split_turns(messages: Sequence[AnyMessage]) -> list[list[AnyMessage]]:
    """The thread cut before each user message: its turns, after what came before the first one (if anything)."""
    starts = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    bounds = [0, *starts] if starts[:1] != [0] else starts
    return [list(messages[start:end]) for start, end in zip(bounds, [*bounds[1:], len(messages)]) if start < end]


def chat_history(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """What the chat prompt carries of a thread: ended turns without their tool-call bookkeeping, the rest whole.

    Once a turn has ended (`turn_answered`) its UpdateMemory calls and their answers are only
    bookkeeping: the reply says what changed, and the memories are in the system prompt. A turn cut short
    keeps them, so the model sees what its updates did; so does the current turn.
    """
    turns = split_turns(messages)
    history: list[AnyMessage] = []
    for turn in turns[:-1]:
        ended = isinstance(turn[0], HumanMessage) and turn_answered(turn)
        history += spoken_messages(turn) if ended else turn
    return history + (turns[-1] if turns else [])


def transcript(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The user's and the assistant's words, turn by turn, as an extraction reads them.

    An earlier turn cut short after its memory updates but before its reply gets the updates' reports as
    the assistant's words, so that its message does not read as still waiting to be acted on.
    """
    turns = split_turns(messages)
    said: list[AnyMessage] = []
    for turn in turns[:-1]:
        spoken = spoken_messages(turn)
        reports = [m.text for m in turn if isinstance(m, ToolMessage) and m.status != "error"]
        if reports and not any(isinstance(m, AIMessage) for m in spoken):
            spoken.append(AIMessage(content="\n".join(reports)))
        said += spoken
    return said + (spoken_messages(turns[-1]) if turns else [])
