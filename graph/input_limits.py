"""Bounds on what a user sends: an overlong message is cut before it reaches a model, an empty one never does."""

from collections.abc import Sequence

from langchain_core.messages import AnyMessage, HumanMessage

from graph.tokens import count_text_tokens

MAX_MESSAGE_TOKENS = 8000
TRUNCATED_NOTICE = "(Your message was {total:,} characters long; I read only the first {kept:,}.)"
EMPTY_MESSAGE_REPLY = "Your message was empty. What would you like me to do or remember?"


def is_blank(message: AnyMessage) -> bool:
    """Whether a user message has no text worth a model call."""
    return isinstance(message, HumanMessage) and isinstance(message.content, str) and not message.content.strip()


def _prefix_within(text: str, max_tokens: int) -> str:
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if count_text_tokens(text[:middle]) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    return text[:low]


def bound_message(message: AnyMessage, max_tokens: int = MAX_MESSAGE_TOKENS) -> AnyMessage:
    """The user message cut to `max_tokens` (estimated, CJK-aware); other messages unchanged."""
    if not (isinstance(message, HumanMessage) and isinstance(message.content, str)):
        return message
    if count_text_tokens(message.content) <= max_tokens:
        return message
    return message.model_copy(update={"content": _prefix_within(message.content, max_tokens)})


def bound_messages(messages: Sequence[AnyMessage], max_tokens: int = MAX_MESSAGE_TOKENS) -> list[AnyMessage]:
    """The messages with every user message cut to `max_tokens`."""
    return [bound_message(message, max_tokens) for message in messages]


def truncation_notice(message: AnyMessage, max_tokens: int = MAX_MESSAGE_TOKENS) -> str:
    """A sentence telling the user their message was cut, or "" when it was not."""
    bounded = bound_message(message, max_tokens)
    if bounded is message:
        return ""
    return TRUNCATED_NOTICE.format(total=len(message.content), kept=len(bounded.content))
