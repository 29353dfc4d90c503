"""The `task_maistro` node: answers the user with their memories in the prompt, and decides what to save."""

import functools
import itertools
from collections.abc import Sequence
from dataclasses import replace
from typing import Annotated, Literal

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from graph.backends.json_calls import CallOption, OptionsTool
from graph.backends.model import ChatModelFactory
from graph.memory.context import TurnMemories, start_turn, turn_memories
from graph.memory.kinds import MemoryKind
from graph.memory.notes import change_notes
from graph.memory.rendering import (
    eager_memories,
    kept_memories,
    memory_section,
    tell_user_rules,
)
from graph.memory.source_lines import asks_about_past, asks_for_source, past_section, sources_section
from graph.memory.user_time import asks_for_zone, calendar_text
from graph.nodes.remind import checked_reminders, offered_tools
from graph.nodes.summary import fold_into_summary, with_summary
from graph.nodes.update import must_tell_user, routed_here, send_outcome
from graph.nodes.window import PromptParts, invoke_fitted
from graph.run_context import ResolvedRun, RunContext, time_text
from graph.runtime import GraphRuntime
from graph.settings import current_settings
from graph.state import State
from graph.thread.cut_replies import as_prompted, is_cut, marked_cut
from graph.thread.model_message import UPDATE_TOOL, NormalisedReply, Refusal, normalise_reply
from graph.thread.reply_last import rejoined, reply_first, reply_last
from graph.thread.tokens import bound_messages, is_blank, truncation_notice
from graph.thread.tool_calls import (
    chat_history,
    repair_tool_answers,
    sendable_calls,
    turn_answered,
    without_tool_calls,
)
from graph.thread.turn_markers import first_marker
from graph.thread.view import ThreadView
from prompts import (
    CHAT_CONTEXT,
    EMPTY_MESSAGE_REPLY,
    EMPTY_REPLY_FALLBACK,
    LANGUAGE_RULE,
    MEMORY_LIST_ITEM,
    MODEL_SYSTEM_MESSAGE,
    REPLY_AFTER_UPDATES_RULE,
    REPLY_FIRST_RULE,
    ROUTING_RULE,
    SAVED_REPLY_FALLBACK,
    UPDATE_MEMORY_DOC,
    UPDATE_TYPE_DOC,
)

# Routing needs one step for the update nodes and one for the chat node that answers afterwards.
STEPS_PER_ROUND = 2
# How often the calls of a turn cut short are re-run before the next message (a kill during the re-run counts
# too); then they are answered as interrupted, so an update that fails every time cannot hold up the thread.
MAX_RESUME_ATTEMPTS = 10


@functools.lru_cache(maxsize=32)
def update_memory_tool(kinds: tuple[MemoryKind, ...]) -> OptionsTool:
    """The `UpdateMemory` tool whose `update_type` names one of `kinds` (converted once per list of kinds); a model
    that answers in JSON is asked about each kind with its description and examples (`OptionsTool`)."""
    choices = ", ".join(f"'{kind.update_type}' for {kind.description}" for kind in kinds)
    update_type = Literal[tuple(kind.update_type for kind in kinds)]  # type: ignore[valid-type]
    schema = TypedDict(UPDATE_TOOL, {"update_type": Annotated[update_type, ..., UPDATE_TYPE_DOC.format(choices=choices)]})
    schema.__doc__ = UPDATE_MEMORY_DOC.format(memories=", ".join(kind.title for kind in kinds))
    options = [CallOption(kind.update_type, kind.description, kind.examples) for kind in kinds]
    return OptionsTool(convert_to_openai_tool(schema), "update_type", options)


def chat_system_prompt(settings: RunContext, kinds: Sequence[MemoryKind]) -> str:
    """The chat prompt's part that stays the same from turn to turn: the role, the memories kept, a routing rule for
    each kind and the rule for when to reply (`reply_timing`)."""
    return MODEL_SYSTEM_MESSAGE.format(
        role=settings.role,
        memory_list="\n".join(
            MEMORY_LIST_ITEM.format(number=number, memory=kind.title, description=kind.description)
            for number, kind in enumerate(kinds, 1)
        ),
        kept=kept_memories(kinds),
        routing_rules="\n".join(
            ROUTING_RULE.format(description=kind.description, memory=kind.title, update_type=kind.update_type)
            for kind in kinds
        ),
        tell_user_rules=tell_user_rules(kinds),
        eager=eager_memories(kinds),
        reply_rule=REPLY_FIRST_RULE if settings.reply_timing == "first" else REPLY_AFTER_UPDATES_RULE,
        language_rule=LANGUAGE_RULE,
    )


def chat_context(
    memories: TurnMemories, settings: RunContext, kinds: Sequence[MemoryKind], said: Sequence[str] = ()
) -> SystemMessage:
    """The chat prompt's part that changes from turn to turn, placed right before the user's latest message: the
    user's time (the message's, in the user's zone) and calendar, with a note to ask where the user is when no
    zone is known and the user's messages (`said`, oldest first) bring up a relative date for the first time, and a
    section for each memory kind; when the latest message asks where a memory came from, the sources of the
    memories shown, and when it asks what held before, the past facts (`graph.memory.source_lines`)."""
    sections = "\n\n".join(memory_section(kind, memories.shown(kind)) for kind in kinds)
    asked = said[-1] if said else ""
    if asks_for_source(asked):
        sections += "\n\n" + sources_section(memories.store, settings.resolved_user_id, kinds, memories.shown_documents(kinds))
    if asks_about_past(asked):
        sections += "\n\n" + past_section(memories.store, settings.resolved_user_id)
    now = memories.now or settings.now(memories.zone)
    calendar = calendar_text(now, not settings.zone_name(memories.zone) and asks_for_zone(said, now.date()))
    return SystemMessage(content=CHAT_CONTEXT.format(now=time_text(now), calendar=calendar, memory_sections=sections))


def chat_prompt(
    stable: str, summary: str, history: Sequence[AnyMessage], context: SystemMessage
) -> PromptParts:
    """The chat prompt in its parts: the stable system prompt with the thread's summary, the history, and the
    context block right before the user's latest message; what stays the same comes first, so a local server
    reuses its cache of the prompt from turn to turn."""
    return PromptParts.of(lambda kept: [SystemMessage(content=with_summary(stable, kept))], summary, history, [context])


def task_maistro(
    state: State,
    config: RunnableConfig,
    runtime: Runtime[RunContext],
    *,
    chat_model: ChatModelFactory,
    graph_runtime: GraphRuntime,
) -> dict:
    """Answer the user, and call UpdateMemory for the memory kinds of `graph_runtime` the turn brings news for (and
    Remind when the user asks for a reminder: `graph.nodes.remind`, whose calls that cannot be scheduled are dropped
    here, the reply saying why in one sentence).

    With `reply_timing="first"` (the default) the model replies in the same message as its UpdateMemory calls,
    so the reply streams while the update nodes run: the thread gets it before a message of its own for the calls
    (`reply_first`). When they are done this node makes no second model call if that reply stands
    (`reply_stands`): it moves the reply after the calls' answers (`reply_last`), so the turn ends with it, and
    the graph ends. It calls the model again when the reply had no
    text, or an answer reports something the user must hear (a failed update, a secret not saved, a ToDo
    update that changed nothing). With
    "after_updates" (the tutorial's) the reply always comes from a model call after the updates.

    When the user writes after a turn that was cut short before its memory updates ran, those updates run
    first (`route_message` sends the turn's pending calls on; they replay with the same call ids, so their
    writes land on the same keys), and the new message is handled once they are answered; calls that
    failed MAX_RESUME_ATTEMPTS times are answered as interrupted instead. The prompt puts what stays the same first
    and the time and the memories right before the user's latest message (`chat_prompt`), and is kept within the
    model's context window (`graph.nodes.window`: a refusal as too long is answered by a smaller prompt, once). A
    reply cut at MAISTRO_MAX_REPLY_TOKENS says so and later prompts carry it as cut (`graph.thread.cut_replies`).
    Before the model call the thread
    is made valid (every call's answers right after it) and, at the start of a turn past the summary's
    budgets, older messages are folded into the summary. The memories are read once per turn
    (`graph.memory.context`); past turns reach the prompt without their tool-call bookkeeping. An empty
    message gets a reply without a model call; an overlong one is cut in the prompt (the thread keeps it)
    and the reply says so; a run that brings no message ends without one.

    Each model reply enters the thread through one boundary (`graph.thread.model_message`): calls written as
    text, malformed arguments, near-miss routing values and missing or repeated ids are mended there, and a
    call that cannot run is refused once, with an answer for the model and a note for the user; the reply
    after a refusal comes without tools. An empty reply is replaced by one saying what the turn saved.
    """
    original = state["messages"]
    view = ThreadView.of(original)
    if view.interrupted:
        routing_id = view.latest_ai.id
        resumed_id, attempts = state.get("resumed_calls") or ("", 0)
        attempts = attempts + 1 if resumed_id == routing_id else 1
        if attempts <= MAX_RESUME_ATTEMPTS:
            resume: dict = {"resumed_calls": [routing_id, attempts]}
            mended = sendable_calls(original)  # calls an earlier version stored without ids get theirs first
            if any(kept is not same for kept, same in zip(mended, original, strict=True)):
                resume["messages"] = thread_update(original, mended)
            return resume
    if view.idle:
        return {"messages": [AIMessage(content=EMPTY_MESSAGE_REPLY)]} if not original else {}
    kinds, reads = graph_runtime.kinds, graph_runtime.reads
    run = ResolvedRun.of(config, runtime, graph_runtime.runs)
    settings = run.context
    thread = repair_tool_answers(original) or list(original)
    summary = state.get("summary", "")
    turn_starts = view.starts_turn
    if turn_starts and is_blank(thread[-1]):
        reply = AIMessage(content=EMPTY_MESSAGE_REPLY)
        return {"messages": [*thread_update(original, thread), reply], "summary": summary}
    if not turn_starts and settings.reply_timing == "first" and reply_stands(thread):
        return {"messages": thread_update(original, reply_last(thread))}
    # A reply given first that did not move last (it does not stand, or its turn was cut short) goes back beside
    # its calls, as the model wrote it.
    thread = rejoined(thread)
    model = chat_model(settings)
    if turn_starts:
        thread, summary = fold_into_summary(thread, summary, model, settings)
        memories = start_turn(runtime.store, settings, thread, run.thread_id, kinds, reads)
    else:
        memories = turn_memories(runtime.store, settings, thread, run.thread_id, kinds, reads)
    view = ThreadView.of(thread)
    said = [message.text for message in thread if isinstance(message, HumanMessage)]
    stable, context = chat_system_prompt(settings, kinds), chat_context(memories, settings, kinds, said)
    visible_thread = as_prompted(bound_messages(chat_history(thread)))
    new_messages: list[AnyMessage] = []
    may_route = view.rounds < settings.max_memory_rounds and state["remaining_steps"] > STEPS_PER_ROUND + 1
    while True:
        prompt = chat_prompt(stable, summary, [*visible_thread, *new_messages], context)
        tools = [update_memory_tool(kinds), *offered_tools(model)]
        response = invoke_fitted(model.bind_tools(tools) if may_route else model, model, prompt)
        taken = ThreadView.of([*thread, *new_messages]).taken_ids
        normalised = read_reply(response, kinds, taken)
        tell_quoted_calls(normalised.notes)
        if not may_route:
            new_messages.append(without_tool_calls(normalised.message))
            break
        normalised = replace(normalised, message=checked_reminders(normalised.message, said[-1] if said else ""))
        routed_here(graph_runtime.routed, normalised.message)
        new_messages += [normalised.message, *(refusal.answer for refusal in normalised.refusals)]
        tell_refusals(normalised.refusals)
        refused = {refusal.answer.tool_call_id for refusal in normalised.refusals}
        if not refused or any(call["id"] not in refused for call in normalised.message.tool_calls):
            break
        may_route = False  # refused once: the reply that follows tells the user, with no tool to refuse again
    new_messages = with_truncation_notice(view, with_fallback_reply(view, new_messages, kinds))
    if settings.reply_timing == "first":
        new_messages = reply_first(new_messages)
    return {
        "messages": [*thread_update(original, thread), *new_messages],
        "summary": summary,
    }


def read_reply(response: AIMessage, kinds: Sequence[MemoryKind], taken: frozenset[str]) -> NormalisedReply:
    """The model's reply through the boundary (`normalise_reply`); a reply cut at the token limit is not read for
    calls written as text (a cut call is no call) and is marked as cut for the user (`marked_cut`). A reply that
    writes a chat-template turn marker out ended there, whole: what ran on to the limit after it was a made-up next
    turn, which the boundary drops (`graph.thread.turn_markers`)."""
    if is_cut(response) and first_marker(response.text) is not None:
        response = response.model_copy(update={"response_metadata": {**response.response_metadata, "finish_reason": "stop"}})
    if not is_cut(response):
        return normalise_reply(response, kinds, taken)
    normalised = normalise_reply(response.model_copy(update={"content": ""}), kinds, taken)
    whole = normalised.message.model_copy(update={"content": response.content})
    return replace(normalised, message=marked_cut(whole, current_settings().max_reply_tokens))


def tell_refusals(refusals: Sequence[Refusal]) -> None:
    """Send each refused call's note to the user as a failed `memory_update` event with no kind (the CLI prints it)."""
    for refusal in refusals:
        send_outcome(None, refusal.answer.tool_call_id, [refusal.note], failed=True)


def tell_quoted_calls(notes: Sequence[str]) -> None:
    """Send the notes that a reply's quoted calls were not run as one failed `memory_update` event with no kind and
    no call (the CLI prints it)."""
    if notes:
        send_outcome(None, None, list(notes), failed=True)


def with_fallback_reply(view: ThreadView, new_messages: list[AnyMessage], kinds: Sequence[MemoryKind]) -> list[AnyMessage]:
    """The new messages, a final reply the model left empty (no text, no call) filled in: with what the turn
    saved when it saved something (`view` is the thread before the new messages), else a plain sentence."""
    final = new_messages[-1] if new_messages else None
    if not isinstance(final, AIMessage) or final.tool_calls or final.text.strip():
        return new_messages
    turn = [*(view.turns[-1] if view.turns else []), *new_messages]
    notes = [
        note for message in turn if isinstance(message, ToolMessage) for note in change_notes(message.artifact, kinds)
    ]
    text = SAVED_REPLY_FALLBACK.format(notes="; ".join(notes)) if notes else EMPTY_REPLY_FALLBACK
    return [*new_messages[:-1], final.model_copy(update={"content": text})]


def reply_stands(thread: Sequence[AnyMessage]) -> bool:
    """Whether the reply given beside the turn's UpdateMemory calls holds now that every call is answered: it
    has text and no answer reports what the user must hear about (`must_tell_user`)."""
    answers = itertools.takewhile(lambda message: isinstance(message, ToolMessage), reversed(thread))
    return turn_answered(thread) and not any(must_tell_user(answer) for answer in answers)


def with_truncation_notice(view: ThreadView, new_messages: list[AnyMessage]) -> list[AnyMessage]:
    """The new messages, the turn's first words to the user prefixed with a note when the user's latest message
    was cut (`view` is the thread before the new messages)."""
    notice = truncation_notice(view.latest_user) if view.latest_user is not None else ""
    turn = [*(view.turns[-1] if view.turns else []), *new_messages]
    spoken = next((m for m in turn if isinstance(m, AIMessage) and isinstance(m.content, str) and m.content.strip()), None)
    if not notice or not any(spoken is message for message in new_messages):
        return new_messages
    noted = spoken.model_copy(update={"content": f"{notice}\n\n{spoken.content}"})
    return [noted if message is spoken else message for message in new_messages]


def thread_update(original: Sequence[AnyMessage], thread: Sequence[AnyMessage]) -> list[AnyMessage]:
    """Messages for the `add_messages` reducer that turn `original` into `thread` (folded or repaired).

    A thread that is a tail of the original only needs removals; anything else is written out whole.
    """
    dropped = len(original) - len(thread)
    if dropped >= 0 and all(kept is same for kept, same in zip(original[dropped:], thread, strict=True)):
        return [RemoveMessage(id=message.id) for message in original[:dropped]]
    return [RemoveMessage(id=REMOVE_ALL_MESSAGES), *thread]
