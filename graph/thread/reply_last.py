"""A turn answered first ends with its reply: the words given beside the UpdateMemory calls come after their answers.

With `reply_timing="first"` the model replies in the message that calls UpdateMemory. The chat node writes that
message into the thread as two (`reply_first`): its reply, then its calls, so the turn reads
`human, ai (reply), ai (calls), tool…` while the updates run. Once every call is answered and the reply stands,
`reply_last` moves the reply after the answers, with no model call: `human, ai (calls), tool…, ai (reply)`.
So each message of the turn is written with its final content once, and a `values` stream whose loop prints
the last message (the tutorial's) prints the reply once, at the end:

- the reply keeps the routing message's id and metadata: the id its tokens streamed under, so LangGraph's
  messages stream (which skips messages whose ids it has seen) and clients that key messages by id (Agent
  Chat UI, Studio) show it once, from its first token on, and `graph.invoke(...)["messages"][-1]` is the reply;
- the calls have a message of their own (`calls_message_id`), right before their answers, as strict
  OpenAI-compatible servers require; a reply that stays before its calls (it does not stand, or its turn was
  cut short) goes back beside them before the model is called again (`rejoined`), as the model wrote it;
- the ids a replay uses (history entries and new document keys derive from the routing message's id and the
  call ids, `graph.nodes.extraction.routing_seed`) are the routing message's: `routing_id` reads it from the
  calls' message, and a turn whose reply moved has no call left to run or replay.

`add_messages` replaces a message with a known id in place, so the reducer is given the rewritten thread whole
(`graph.nodes.chat.thread_update`).
"""

from collections.abc import Sequence

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage

# Provider fields of a message that carry its calls (langchain-openai sends them when `tool_calls` is empty).
CALL_FIELDS = ("tool_calls", "function_call")
CALLS_SUFFIX = "-calls"


def calls_message_id(routing_id: str | None) -> str:
    """The id of the message that keeps the calls of the routing message `routing_id` apart from its reply."""
    return f"{routing_id}{CALLS_SUFFIX}"


def routing_id(message: AIMessage) -> str | None:
    """The id of the routing message whose calls `message` holds: its own, or the reply's when the reply was given
    first (`calls_message_id`)."""
    return message.id.removesuffix(CALLS_SUFFIX) if message.id else message.id


def _calls(message: AnyMessage) -> bool:
    return isinstance(message, AIMessage) and bool(message.tool_calls or message.invalid_tool_calls)


def _is_text_block(block: object) -> bool:
    return isinstance(block, str) or (isinstance(block, dict) and block.get("type") == "text")


def split_reply(routing: AIMessage) -> tuple[AIMessage, AIMessage]:
    """The routing message as two: its calls without its words (a new id), and its words (its own id and metadata)."""
    content = "" if isinstance(routing.content, str) else [b for b in routing.content if not _is_text_block(b)]
    calls = AIMessage(
        content=content,
        id=calls_message_id(routing.id),
        name=routing.name,
        tool_calls=routing.tool_calls,
        invalid_tool_calls=routing.invalid_tool_calls,
        additional_kwargs=routing.additional_kwargs,
    )
    reply = AIMessage(
        content=routing.text,
        id=routing.id,
        name=routing.name,
        additional_kwargs={key: value for key, value in routing.additional_kwargs.items() if key not in CALL_FIELDS},
        response_metadata=routing.response_metadata,
        usage_metadata=routing.usage_metadata,
    )
    return calls, reply


def reply_first(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The messages with each one that speaks beside its calls written as two: its reply, then its calls."""
    written: list[AnyMessage] = []
    for message in messages:
        if _calls(message) and message.text.strip():
            calls, reply = split_reply(message)
            written += [reply, calls]
        else:
            written.append(message)
    return written


def is_reply_of(reply: AnyMessage, calls: AnyMessage) -> bool:
    """Whether `reply` is the reply given first beside the calls of `calls` (`reply_first`)."""
    return (
        isinstance(reply, AIMessage)
        and not _calls(reply)
        and reply.id is not None
        and _calls(calls)
        and calls.id == calls_message_id(reply.id)
    )


def routing_start(messages: Sequence[AnyMessage], position: int) -> int:
    """Where the routing message at `position` starts in `messages`: at its reply when the reply was given first
    (right before it), else at itself."""
    return position - 1 if position > 0 and is_reply_of(messages[position - 1], messages[position]) else position


def rejoined(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The messages with each reply given first back beside its calls, in one message as the model wrote it: what a
    prompt shows the model."""
    joined: list[AnyMessage] = []
    for message in messages:
        if joined and is_reply_of(joined[-1], message):
            reply = joined.pop()
            content = reply.text if not message.content else [{"type": "text", "text": reply.text}, *message.content]
            message = reply.model_copy(
                update={
                    "content": content,
                    "tool_calls": message.tool_calls,
                    "invalid_tool_calls": message.invalid_tool_calls,
                    "additional_kwargs": message.additional_kwargs,
                }
            )
        joined.append(message)
    return joined


def reply_last(thread: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The thread with the reply given beside its last assistant message's calls moved after their answers.

    Unchanged when that message calls nothing, has no reply beside it, or is not followed by answers only. A
    message that still holds its words and calls together (stored before replies were written apart) is split.
    """
    position = next((i for i in range(len(thread) - 1, -1, -1) if isinstance(thread[i], AIMessage)), None)
    answers = list(thread[position + 1 :]) if position is not None else []
    if not (answers and _calls(thread[position]) and all(isinstance(m, ToolMessage) for m in answers)):
        return list(thread)
    written = [*thread[:position], *reply_first([thread[position]])]
    start = routing_start(written, len(written) - 1)
    if start == len(written) - 1:
        return list(thread)
    return [*written[:start], written[-1], *answers, written[start]]
