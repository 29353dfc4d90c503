"""Reminders the agent makes when the user asks: the `Remind` tool the chat model may call, and the `remind` node.

The chat model calls `Remind(schedule, message)` beside its reply (a cron line in the user's local time; an empty
message asks for a digest of what is due). The chat node checks each call as the model's reply comes in
(`checked_reminders`): when no server can schedule it (the CLI, `maistro chat`, plain Python) or the schedule is
no cron line or fires more than once an hour, the call is dropped and the reply says so in one sentence, with
nothing scheduled and no second model call. Otherwise the graph routes the call to the `remind` node, which asks
the server's scheduler (`Scheduler`, installed by the server's modules as they load: `graph.server.platform`) to
make a cron on the run's own thread, for the run's own user, read in the user's time zone (the run's `timezone`,
else the profile's, else MAISTRO_TIMEZONE): nothing the model writes names a thread, a user or a zone, so a
reminder on another user's thread is impossible by construction, and the server's own cron rules apply.
"""

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from graph.backends.json_calls import JsonCallModel
from graph.memory.context import turn_memories
from graph.run_context import ResolvedRun, RunContext
from graph.runtime import GraphRuntime
from graph.schedules import schedule_problem
from graph.state import State
from graph.text_tokens import cjk_characters
from graph.thread.model_message import REMIND_TOOL
from graph.thread.tool_calls import last_ai_message
from prompts import (
    REMIND_BAD_SCHEDULE,
    REMIND_DIGEST,
    REMIND_DOC,
    REMIND_FAILED,
    REMIND_MESSAGE_DOC,
    REMIND_NEEDS_SERVER,
    REMIND_NEEDS_SERVER_ZH,
    REMIND_SCHEDULE_DOC,
    REMIND_SET,
)

REMIND_NODE = "remind"
MAX_REMINDER_CHARACTERS = 1000
# The reply's `response_metadata` key listing the Remind requests dropped from it (what the model asked: the eval
# scores them, as it runs without a server).
REMINDERS_ASKED = "reminders_asked"


@dataclass(frozen=True)
class ReminderRequest:
    """A reminder to schedule: a cron `schedule` read in `timezone`, the `message` its runs send (the digest's
    question when the user named nothing), on `thread_id`, for the run's `config` (whose user it is)."""

    schedule: str
    timezone: str
    message: str
    thread_id: str
    config: RunnableConfig


# What makes a cron on the server the graph runs in: the request → the cron as the server stores it.
Scheduler = Callable[[ReminderRequest], Awaitable[dict[str, Any]]]
_SCHEDULERS: list[Scheduler] = []


def offered_tools(model: BaseChatModel) -> list[dict]:
    """The tools beside UpdateMemory the chat node offers `model`: `Remind`, except to a model asked for its calls
    as JSON (`JsonCallModel`: a small model's routing question stays about the memories alone)."""
    return [] if isinstance(model, JsonCallModel) else [REMIND_TOOL_SCHEMA]


def install_scheduler(scheduler: Scheduler) -> None:
    """Make `scheduler` the one reminders use in this process (the API server's modules call this as they load)."""
    _SCHEDULERS[:] = [scheduler]


def current_scheduler() -> Scheduler | None:
    """The process's scheduler, or None without a server."""
    return _SCHEDULERS[0] if _SCHEDULERS else None


# The tool as the chat model is offered it (its description is REMIND_DOC).
_Remind = TypedDict(
    REMIND_TOOL,
    {"schedule": Annotated[str, ..., REMIND_SCHEDULE_DOC], "message": Annotated[str, ..., REMIND_MESSAGE_DOC]},
)
_Remind.__doc__ = REMIND_DOC
REMIND_TOOL_SCHEMA = convert_to_openai_tool(_Remind)




def request_problem(args: Any) -> str | None:
    """Why a `Remind` call's arguments cannot be scheduled, in one sentence, or None when they can."""
    if not isinstance(args, dict):
        return "the reminder's arguments are not an object."
    message = args.get("message", "")
    if not isinstance(message, str) or len(message) > MAX_REMINDER_CHARACTERS:
        return f"the reminder's message must be text of at most {MAX_REMINDER_CHARACTERS} characters."
    return schedule_problem(args.get("schedule"))


def is_remind_call(call: dict) -> bool:
    """Whether a tool call is a `Remind` call."""
    return call.get("name") == REMIND_TOOL


def checked_reminders(message: AIMessage, user_text: str = "") -> AIMessage:
    """The chat model's message with its `Remind` calls that cannot be scheduled dropped (no server, or a bad
    schedule; their arguments kept in its metadata, `REMINDERS_ASKED`), and one sentence saying why in its reply:
    in place of the reply when the message made no other call (a reply beside a reminder alone would only claim
    it), after it otherwise. The no-server sentence is in Chinese when the user's latest message (`user_text`) is."""
    reminders = [call for call in message.tool_calls if is_remind_call(call)]
    if not reminders:
        return message
    problems = [request_problem(call["args"]) for call in reminders]
    if current_scheduler() is None:
        sentences = [REMIND_NEEDS_SERVER_ZH if cjk_characters(user_text) else REMIND_NEEDS_SERVER]
    else:
        sentences = list(dict.fromkeys(REMIND_BAD_SCHEDULE.format(problem=problem) for problem in problems if problem))
    if not sentences:
        return message
    dropped = {call["id"] for call, problem in zip(reminders, problems, strict=True) if problem or current_scheduler() is None}
    kept = [call for call in message.tool_calls if call["id"] not in dropped]
    said = " ".join(sentences)
    others = [call for call in kept if not is_remind_call(call)]
    content = f"{message.text.strip()}\n\n{said}" if others and message.text.strip() else said
    asked = [call["args"] for call in reminders if call["id"] in dropped]
    metadata = {**message.response_metadata, REMINDERS_ASKED: asked}
    return message.model_copy(update={"content": content, "tool_calls": kept, "response_metadata": metadata})


def reminder_requests(message: AIMessage) -> list[dict]:
    """The Remind requests a (checked) reply of the chat model made: the calls it kept and those it dropped."""
    kept = [call["args"] for call in message.tool_calls if is_remind_call(call)]
    return [*kept, *message.response_metadata.get(REMINDERS_ASKED, [])]


def pending_remind_calls(messages: Sequence[AnyMessage]) -> list[dict]:
    """The `Remind` calls of the latest assistant message that have no answer yet."""
    message = last_ai_message(messages)
    if message is None:
        return []
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    return [call for call in message.tool_calls if is_remind_call(call) and call["id"] not in answered]


def reminder_request(args: dict, settings: RunContext, profile_zone: str, thread_id: str, config: RunnableConfig) -> ReminderRequest:
    """The request a checked `Remind` call makes: its schedule and message (the digest's question when empty), on
    the run's thread, read in the user's zone (`RunContext.zone_name`)."""
    return ReminderRequest(
        schedule=args["schedule"].strip(),
        timezone=settings.zone_name(profile_zone) or "UTC",
        message=args.get("message", "").strip() or REMIND_DIGEST,
        thread_id=thread_id,
        config=config,
    )


async def remind(
    state: State, config: RunnableConfig, runtime: Runtime[RunContext], *, graph_runtime: GraphRuntime
) -> dict:
    """Schedule each pending `Remind` call with the server's scheduler and answer it: the reminder's id, schedule
    and zone, or (status error, so the chat model tells the user) the one sentence the server refused it with."""
    run = ResolvedRun.of(config, runtime, graph_runtime.runs)
    thread = state["messages"]
    memories = turn_memories(runtime.store, run.context, thread, run.thread_id, graph_runtime.kinds, graph_runtime.reads)
    scheduler = current_scheduler()
    answers: list[AnyMessage] = []
    for call in pending_remind_calls(thread):
        problem = request_problem(call["args"]) or ("" if scheduler else REMIND_NEEDS_SERVER)
        if problem:
            answers.append(ToolMessage(content=REMIND_FAILED.format(problem=problem), tool_call_id=call["id"], status="error"))
            continue
        request = reminder_request(call["args"], run.context, memories.zone, run.thread_id, config)
        try:
            cron = await scheduler(request)
        except Exception as error:  # the server's refusal, in its own words, for the user
            answers.append(ToolMessage(content=REMIND_FAILED.format(problem=refusal_text(error)), tool_call_id=call["id"], status="error"))
            continue
        what = f"sending {request.message!r}" if request.message != REMIND_DIGEST else "with a digest of what is due"
        text = REMIND_SET.format(cron_id=cron.get("cron_id", ""), schedule=request.schedule, timezone=request.timezone, what=what)
        answers.append(ToolMessage(content=text, tool_call_id=call["id"], artifact={"reminder": cron_summary(cron, request)}))
    return {"messages": answers}


def cron_summary(cron: dict[str, Any], request: ReminderRequest) -> dict[str, str]:
    """What an answer records of the cron made: its id, thread, schedule and zone."""
    return {
        "cron_id": str(cron.get("cron_id", "")), "thread_id": request.thread_id,
        "schedule": request.schedule, "timezone": request.timezone,
    }


def refusal_text(error: Exception) -> str:
    """A server's refusal as one sentence: an HTTP error's detail, else the error's text."""
    detail = getattr(error, "detail", None) or str(error) or type(error).__name__
    return str(detail).rstrip(".") + "."
