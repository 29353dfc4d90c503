"""Rolling summary: once the thread passes a token budget, older messages fold into one summary that prompts carry."""

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage, get_buffer_string

from graph.backends.context_window import model_window
from graph.backends.model import quiet
from graph.nodes.window import EARLIER_SHARE, PromptParts, cut_message, invoke_fitted
from graph.run_context import RunContext
from graph.text_tokens import count_text_tokens
from graph.thread.cut_replies import as_prompted
from graph.thread.tokens import bound_messages, count_tokens
from graph.thread.tool_calls import chat_history
from prompts import SUMMARIZE_CONVERSATION, SUMMARY_BLOCK


def fold_point(messages: Sequence[AnyMessage], keep: int) -> int:
    """Where the verbatim tail starts: the first user message among the last `keep` messages.

    Starting the tail at a user message keeps each tool call with its answers and gives the model a
    thread that opens with the user. When no user message is that recent, the tail starts at the last one.
    """
    user_turns = [index for index, message in enumerate(messages) if isinstance(message, HumanMessage)]
    recent = [index for index in user_turns if index >= len(messages) - keep]
    if recent:
        return recent[0]
    return user_turns[-1] if user_turns else 0


def fold_into_summary(
    messages: list[AnyMessage], summary: str, model: BaseChatModel, settings: RunContext
) -> tuple[list[AnyMessage], str]:
    """The messages to keep and the summary to use: unchanged under the budgets, else folded with one model call.

    The budgets: `summary_trigger_tokens` for the thread and its summary, and `summary_trigger_messages` for
    the messages the chat prompt carries (`chat_history`), so neither the prompt's size nor its length grows. The
    folded messages are cut to fit the model's context window (`graph.nodes.window`), a cut reply carried as cut.
    """
    within_tokens = count_tokens(messages) + count_text_tokens(summary) <= settings.summary_trigger_tokens
    if within_tokens and len(chat_history(messages)) <= settings.summary_trigger_messages:
        return messages, summary
    cut = fold_point(messages, settings.messages_kept)
    if cut == 0:
        return messages, summary
    window = model_window(model)
    folded = as_prompted(bound_messages(messages[:cut]))
    if window is not None:
        folded = [cut_message(message, window.prompt_tokens // EARLIER_SHARE) for message in folded]
    parts = PromptParts(
        lambda _: [SystemMessage(content=SUMMARIZE_CONVERSATION.format(summary=summary))],
        "",
        [],
        [],
        [HumanMessage(content=get_buffer_string(folded))],
    )
    return messages[cut:], invoke_fitted(quiet(model), model, parts).text.strip()


def with_summary(prompt: str, summary: str) -> str:
    """A system prompt followed by the thread's summary, when there is one."""
    return prompt + ("\n\n" + SUMMARY_BLOCK.format(summary=summary) if summary else "")
