"""A turn answered first ends with its reply: the words given beside the UpdateMemory calls move after their answers.

With `reply_timing="first"` the model replies in the message that calls UpdateMemory, so the turn reads
`human, ai (reply + calls), tool…`. Once every call is answered and the reply stands, `reply_last` rewrites it
to `human, ai (calls), tool…, ai (reply)`, with no model call:

- the reply keeps the routing message's id and metadata: the id its tokens streamed under, so LangGraph's
  messages stream (which skips messages whose ids it has seen) and clients that key messages by id (Agent
  Chat UI, Studio) show it once, and `graph.invoke(...)["messages"][-1]` is the reply;
- the calls move to a message of their own (`calls_message_id`), right before their answers, as strict
  OpenAI-compatible servers require;
- the ids a replay uses (history entries and new document keys derive from the routing message's id and the
  call ids, `graph.nodes.extraction.routing_seed`) were used before the rewrite, and a rewritten turn has no
  call left to run or replay.

`add_messages` replaces a message with a known id in place, so the reducer is given the rewritten thread whole
(`graph.nodes.chat.thread_update`).
"""

from collections.abc import Sequence

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage

# Provider fields of a message that carry its calls (langchain-openai sends them when `tool_calls` is empty).
CALL_FIELDS = ("tool_calls", "function_call")


def calls_message_id(routing_id: str | None) -> str:
    """The id of the message that keeps the calls of the routing message `routing_id` once its reply moves last."""
    return f"{routing_id}-calls"


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


def reply_last(thread: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The thread with the words of its last assistant message moved after the answers to that message's calls.

    Unchanged when the last assistant message calls nothing, has no words, or is not followed by answers only.
    """
    position = next((i for i in range(len(thread) - 1, -1, -1) if isinstance(thread[i], AIMessage)), None)
    if position is None:
        return list(thread)
    routing, answers = thread[position], list(thread[position + 1 :])
    has_calls = bool(routing.tool_calls or routing.invalid_tool_calls)
    if not (has_calls and routing.text.strip() and answers and all(isinstance(m, ToolMessage) for m in answers)):
        return list(thread)
    calls, reply = split_reply(routing)
    return [*thread[:position], calls, *answers, reply]
