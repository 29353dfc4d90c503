"""Prompts kept within the model's context window (`graph.backends.context_window`), so that no thread is wedged by
its own history.

A prompt is its head (the system prompt, with the thread's summary), the earlier messages, what comes right before
the latest turn (the chat prompt's context block), and the latest turn (the user's latest message and what followed
it). Past the budget, in this order, until it fits:

1. an oversized earlier message is cut to a quarter of the budget;
2. earlier turns are left out, the oldest first;
3. the summary is left out;
4. the latest turn's other messages are cut, the longest first, then the user's latest message, then the context
   block, then the system prompt: each only as far as needed, never to nothing.

Messages are cut in the prompt only: the thread keeps them whole. `invoke_fitted` sends a prompt fitted to the window
known, and answers a refusal as too long (the server's sizes learned) by one smaller prompt, never by sending the same
again; when none is smaller, `ContextWindowError` says so in one sentence.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import Runnable

from graph.backends.context_window import exceeded, learn, model_window
from graph.backends.model import CONTEXT_TOO_SMALL_MESSAGE, ContextWindowError, model_errors
from graph.thread.tokens import count_text_tokens, count_tokens, prefix_within
from graph.thread.tool_calls import split_turns
from prompts import CUT_IN_PROMPT

# What a cut message keeps at least, and what its marker takes (estimated tokens).
MIN_KEPT_TOKENS = 16
MARKER_TOKENS = 2
# The most an earlier message may take of the budget before it counts as oversized.
EARLIER_SHARE = 4


@dataclass(frozen=True)
class PromptParts:
    """A prompt in its parts (see the module's docstring): `head` builds the leading messages from the summary."""

    head: Callable[[str], list[AnyMessage]]
    summary: str
    earlier: list[AnyMessage]
    before_latest: list[AnyMessage]
    latest: list[AnyMessage]

    @classmethod
    def of(
        cls,
        head: Callable[[str], list[AnyMessage]],
        summary: str,
        history: Sequence[AnyMessage],
        before_latest: Sequence[AnyMessage] = (),
    ) -> "PromptParts":
        """The parts of a prompt whose history's latest turn starts at its last user message."""
        start = next((i for i in range(len(history) - 1, -1, -1) if isinstance(history[i], HumanMessage)), len(history))
        return cls(head, summary, list(history[:start]), list(before_latest), list(history[start:]))

    def prompt(self) -> list[AnyMessage]:
        """The prompt the parts make."""
        return [*self.head(self.summary), *self.earlier, *self.before_latest, *self.latest]


def cut_message(message: AnyMessage, max_tokens: int) -> AnyMessage:
    """The message with its text cut to `max_tokens` (estimated) and marked as cut; unchanged when it fits or its
    content is not text."""
    if not isinstance(message.content, str) or count_text_tokens(message.content) <= max_tokens:
        return message
    return message.model_copy(update={"content": CUT_IN_PROMPT.format(start=prefix_within(message.content, max_tokens))})


def _cut_in_order(prompt: list[AnyMessage], budget: int, order: Sequence[int]) -> list[AnyMessage]:
    """The prompt with the messages at the positions of `order` cut, in that order, each only as far as needed."""
    prompt = list(prompt)
    for position in order:
        excess = count_tokens(prompt) - budget
        if excess <= 0:
            break
        content = prompt[position].content
        if isinstance(content, str):
            keep = max(MIN_KEPT_TOKENS, count_text_tokens(content) - excess - MARKER_TOKENS)
            prompt[position] = cut_message(prompt[position], keep)
    return prompt


def fitted(parts: PromptParts, budget: int | None) -> list[AnyMessage]:
    """The prompt of `parts` within `budget` estimated tokens (see the module's docstring); whole when `budget` is
    None (no window known) or it fits."""
    prompt = parts.prompt()
    if budget is None or count_tokens(prompt) <= budget:
        return prompt
    earlier = [cut_message(message, budget // EARLIER_SHARE) for message in parts.earlier]
    turns = split_turns(earlier)
    while True:
        prompt = [*parts.head(parts.summary), *(m for turn in turns for m in turn), *parts.before_latest, *parts.latest]
        if count_tokens(prompt) <= budget or not turns:
            break
        turns.pop(0)
    if count_tokens(prompt) <= budget:
        return prompt
    head = parts.head("")
    prompt = [*head, *parts.before_latest, *parts.latest]
    if count_tokens(prompt) <= budget:
        return prompt
    start = len(head) + len(parts.before_latest)
    user = [start] if parts.latest and isinstance(parts.latest[0], HumanMessage) else []
    others = sorted(set(range(start, len(prompt))) - set(user), key=lambda i: -count_tokens([prompt[i]]))
    return _cut_in_order(prompt, budget, [*others, *user, *range(len(head), start), *range(len(head))])


def invoke_fitted(runnable: Runnable, model: BaseChatModel, parts: PromptParts, **kwargs: object) -> AIMessage:
    """`runnable` (`model`, maybe with tools bound) asked with the prompt of `parts` fitted to `model`'s context window;
    a refusal as too long is answered once, by a smaller prompt fitted to the window it taught (see the module's
    docstring). Raises `ContextWindowError` when no smaller prompt can be made or it is refused too."""
    window = model_window(model)
    prompt = fitted(parts, window.prompt_tokens if window else None)
    try:
        with model_errors():
            return runnable.invoke(prompt, **kwargs)
    except openai.BadRequestError as error:
        if exceeded(error) is None:
            raise
        sent = count_tokens(prompt)
        learned = learn(model, error, sent)
        smaller = fitted(parts, learned.prompt_tokens) if learned else prompt
        if count_tokens(smaller) >= sent:
            raise _too_small(error) from error
    try:
        with model_errors():
            return runnable.invoke(smaller, **kwargs)
    except openai.BadRequestError as again:
        if exceeded(again) is None:
            raise
        learn(model, again, count_tokens(smaller))
        raise _too_small(again) from again


def _too_small(error: BaseException) -> ContextWindowError:
    sizes = exceeded(error)
    window = f"{sizes[1]:,} tokens" if sizes and sizes[1] else "its size unknown"
    return ContextWindowError(CONTEXT_TOO_SMALL_MESSAGE.format(window=window))
