"""Replies cut at the token limit (MAISTRO_MAX_REPLY_TOKENS, sent as `max_tokens`): told, and never carried as whole.

A server that stops an answer at its `max_tokens` says so with `finish_reason: "length"`, which langchain-openai keeps
in the message's `response_metadata`. Such a reply is stored with one sentence after its text saying it was cut
(`marked_cut`: the user reads it, in the CLI and in every client that shows the thread), and later prompts carry
only its beginning and a note that it was cut (`as_prompted`): a small model that repeated a clause until the
limit is not shown that run-away text as a finished answer to imitate, nor does it fill the context window.
"""

import re
from collections.abc import Sequence

from langchain_core.messages import AIMessage, AnyMessage

from graph.thread.tokens import prefix_within
from prompts import CUT_REPLY_NOTICE, CUT_REPLY_PROMPTED

LENGTH = "length"
# How much of a cut reply later prompts carry (estimated tokens).
CUT_REPLY_PROMPT_TOKENS = 100
_NOTICE = re.compile(re.escape(CUT_REPLY_NOTICE).replace(r"\{limit:,\}", r"[\d,]+") + r"\Z")


def is_cut(message: AnyMessage) -> bool:
    """Whether `message` is an assistant answer the server stopped at its token limit."""
    return isinstance(message, AIMessage) and message.response_metadata.get("finish_reason") == LENGTH


def marked_cut(message: AIMessage, limit: int) -> AIMessage:
    """The cut reply with the sentence saying so after its text (alone when it has none)."""
    notice = CUT_REPLY_NOTICE.format(limit=limit)
    text = message.text.rstrip()
    return message.model_copy(update={"content": f"{text}\n\n{notice}" if text else notice})


def cut_notice(message: AnyMessage) -> str:
    """The sentence a cut reply ends with (`marked_cut`), or "" for any other message."""
    if not is_cut(message):
        return ""
    found = _NOTICE.search(message.text)
    return found.group(0) if found else ""


def as_prompted(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The messages as prompts carry them: each cut reply as its beginning and a note that it was cut."""
    return [_prompted(message) if is_cut(message) else message for message in messages]


def _prompted(message: AIMessage) -> AIMessage:
    text = message.text.removesuffix(cut_notice(message)).rstrip()
    start = prefix_within(text, CUT_REPLY_PROMPT_TOKENS).rstrip()
    return message.model_copy(update={"content": CUT_REPLY_PROMPTED.format(start=start)})
