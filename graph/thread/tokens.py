"""Token estimates of messages (plain text: `graph.text_tokens`) and the bounds on what a user sends.

An overlong message is cut before it reaches a model (the thread keeps it whole); an empty one never does.
"""

from collections.abc import Sequence

from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately

from graph.text_tokens import CHARS_PER_TOKEN, cjk_characters, count_text_tokens
from prompts import TRUNCATED_NOTICE

MAX_MESSAGE_TOKENS = 8000


def count_tokens(messages: Sequence[BaseMessage]) -> int:
    """Estimated prompt tokens of messages, counting CJK characters as a token each."""
    approximate = count_tokens_approximately(messages, chars_per_token=CHARS_PER_TOKEN)
    cjk = sum(cjk_characters(message.text) for message in messages)
    return approximate + round(cjk * (1 - 1 / CHARS_PER_TOKEN))


def is_blank(message: AnyMessage) -> bool:
    """Whether a user message has no text worth a model call."""
    return isinstance(message, HumanMessage) and isinstance(message.content, str) and not message.content.strip()


def prefix_within(text: str, max_tokens: int) -> str:
    """The longest start of `text` whose estimated tokens are at most `max_tokens`."""
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
    return message.model_copy(update={"content": prefix_within(message.content, max_tokens)})


def bound_messages(messages: Sequence[AnyMessage], max_tokens: int = MAX_MESSAGE_TOKENS) -> list[AnyMessage]:
    """The messages with every user message cut to `max_tokens`."""
    return [bound_message(message, max_tokens) for message in messages]


def truncation_notice(message: AnyMessage, max_tokens: int = MAX_MESSAGE_TOKENS) -> str:
    """A sentence telling the user their message was cut, or "" when it was not."""
    bounded = bound_message(message, max_tokens)
    if bounded is message:
        return ""
    return TRUNCATED_NOTICE.format(total=len(message.content), kept=len(bounded.content))
