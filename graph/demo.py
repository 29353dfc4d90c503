"""`maistro demo`: the tutorial's conversation, replayed with a scripted model through the real graph,
real trustcall and a real SQLite store, so a first look needs no API key."""

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from langchain_core.messages import BaseMessage
from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from graph.agent import create_builder
from graph.chat_loop import print_turn
from graph.chat_session import ChatSession
from graph.configuration import Configuration
from graph.memory_admin import user_items
from graph.memory_store import INSTRUCTIONS, PROFILE, TODO
from graph.memory_tables import memory_view
from graph.persistence import open_sqlite
from graph.routing import NODE_FOR_UPDATE_TYPE
from graph.scripted_model import (
    Reply,
    ScriptedChatModel,
    add,
    calls,
    patch_where,
    profile,
    remove_where,
    replace,
    route,
    say,
    todo,
)

DEMO_USER = "Lance"
SWIM = "Book swim lessons for 1-year-old daughter."
LOCK = "Fix the jammed electric Yale lock on the door."
TOYOTA = "Call back City Toyota to schedule car service."
LOCAL_VENDORS = (
    "When creating or updating ToDo list items for Lance, include specific local businesses or vendors "
    "in San Francisco."
)
BANNER = (
    "Scripted demo: the assistant's words come from a script, not from an AI model. The LangGraph graph, "
    "trustcall's extraction and the SQLite store are real, and the tables at the end are read back from the store."
)
NEXT_STEP = "To chat with a real model, set OPENAI_API_KEY (or OPENAI_BASE_URL) and run `maistro chat`."


class DemoError(RuntimeError):
    """The demo cannot run as asked (its user already has memories in the data directory)."""


@dataclass(frozen=True)
class DemoTurn:
    """One user message and the scripted model replies it needs, by graph node."""

    message: str
    replies: dict[str, list[Reply]]
    new_thread: bool = False


def end_of_november(settings: Configuration) -> str:
    """The next end of November (30 Nov 23:59) in the configured time zone, as ISO 8601 with the offset."""
    now = settings.now()

    def deadline(year: int) -> datetime:
        naive = datetime(year, 11, 30, 23, 59)
        return naive.replace(tzinfo=ZoneInfo(settings.timezone)) if settings.timezone else naive.astimezone()

    upcoming = deadline(now.year) if deadline(now.year) >= now else deadline(now.year + 1)
    return upcoming.isoformat()


def _recall(messages: list[BaseMessage], _tools: list[str]) -> BaseMessage:
    """The new thread's answer, which only knows the list if the store put it into the prompt."""
    if SWIM not in messages[0].text:
        return say("I can't find your ToDo list.")
    return say("With 30 minutes you could book the swim lessons for your daughter: that takes about 30 minutes.")


def memory_turn(message: str, update_type: str, update_reply: Reply, answer: str) -> DemoTurn:
    """A turn in which the model updates one memory (`user`, `todo` or `instructions`), then answers."""
    return DemoTurn(
        message,
        {"task_maistro": [route(update_type), say(answer)], NODE_FOR_UPDATE_TYPE[update_type]: [update_reply]},
    )


def tutorial_turns(deadline: str) -> list[DemoTurn]:
    """The tutorial's conversation: profile, ToDos, instructions, a deadline, a removal, recall in a new thread."""
    lance = profile(name="Lance", location="San Francisco", connections=["Wife", "1-year-old daughter"])
    swim = todo(SWIM, time_to_complete=30, solutions=["Check local swim schools in SF", "Look for baby swim classes online"])
    lock = todo(
        LOCK, time_to_complete=60, solutions=["Contact a local locksmith in SF", "Check Yale's customer support"]
    )
    toyota = todo(TOYOTA, time_to_complete=10, solutions=["Find City Toyota's number", "Check service availability"])
    swim_school = patch_where("swim", add("/solutions/-", "Contact La Petite Baleen Swim School"))

    def lock_and_swim_school(messages: list[BaseMessage], tools: list[str]) -> BaseMessage:
        return calls(lock, *swim_school(messages, tools).tool_calls)

    return [
        memory_turn(
            "My name is Lance. I live in SF with my wife. I have a 1 year old daughter.",
            "user",
            calls(lance),
            "Nice to meet you, Lance! How can I help you today?",
        ),
        memory_turn(
            "My wife asked me to book swim lessons for the baby.", "todo", calls(swim), f'I added "{SWIM}" to your list.'
        ),
        memory_turn(
            "When creating or updating ToDo items, include specific local businesses / vendors.",
            "instructions",
            say(LOCAL_VENDORS),
            "Got it, I'll suggest local businesses from now on.",
        ),
        memory_turn(
            "I need to fix the jammed electric Yale lock on the door.",
            "todo",
            lock_and_swim_school,
            f'I added "{LOCK}" and suggested a swim school near you for the lessons.',
        ),
        memory_turn(
            "For the swim lessons, I need to get that done by end of November.",
            "todo",
            patch_where("swim", replace("/deadline", deadline)),
            f"The swim lessons are now due {deadline[:10]}.",
        ),
        memory_turn(
            "Need to call back City Toyota to schedule car service.", "todo", calls(toyota), f'I added "{TOYOTA}".'
        ),
        memory_turn(
            "I already called City Toyota, remove that task.",
            "todo",
            remove_where("City Toyota"),
            "Done, the City Toyota task is gone.",
        ),
        memory_turn(
            "The Yale lock is fixed, it's done.",
            "todo",
            patch_where("Yale", replace("/status", "done")),
            "Great, I marked the Yale lock as done.",
        ),
        DemoTurn("I have 30 minutes, what tasks can I get done?", {"task_maistro": [_recall]}, new_thread=True),
    ]


def run_demo(console: Console, data_dir: Path, *, temporary: bool = False) -> None:
    """Play the scripted tutorial conversation against a SQLite store in `data_dir`, then show the memories.

    Raises `DemoError` when the demo user already has memories there (the demo never overwrites them).
    """
    checkpointer, store = open_sqlite(data_dir)
    if user_items(store, DEMO_USER):
        raise DemoError(
            f"{DEMO_USER} already has memories in {data_dir}; run the demo on another --data-dir "
            f"(or `maistro forget --user {DEMO_USER} --data-dir {data_dir}` first)."
        )
    model = ScriptedChatModel()
    graph = create_builder(lambda _settings: model).compile(checkpointer=checkpointer, store=store)
    session = ChatSession(graph, DEMO_USER)
    console.print(Panel(Text(BANNER), title="task-maistro demo", title_align="left", border_style="yellow"))
    console.print(f"Data directory: {data_dir}{' (temporary)' if temporary else ''}", markup=False)
    for turn in tutorial_turns(end_of_november(Configuration())):
        for node, replies in turn.replies.items():
            model.add(node, *replies)
        if turn.new_thread:
            console.print(Text(f"\n— a new thread ({session.new_thread()}): messages start afresh, memories stay —", style="bold"))
        console.print(Text.assemble(("\nyou › ", "bold cyan"), turn.message))
        print_turn(console, session.send(turn.message))
    console.print()
    for kind in (PROFILE, TODO, INSTRUCTIONS):
        console.print(memory_view(store, kind, DEMO_USER))
    console.print(NEXT_STEP, markup=False)
