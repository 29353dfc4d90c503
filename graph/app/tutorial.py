"""The tutorial's conversation (LangChain Academy task_mAIstro), scripted once for the demo and the tests.

Each turn is a user message and the replies a scripted model gives, by graph node; the documents the store
should hold afterwards are spelled out here too, so the demo and the tests agree on what the agent saves.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from graph.memory.kinds import DEFAULT_MEMORY_KINDS, kind_for_update
from graph.names import AGENT_NAME
from graph.run_context import RunContext
from testing.scripted_model import (
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

USER = "Lance"
SWIM = "Book swim lessons for 1-year-old daughter."
LOCK = "Fix the jammed electric Yale lock on the door."
TOYOTA = "Call back City Toyota to schedule car service."
SWIM_SCHOOL = "Contact La Petite Baleen Swim School"
LOCAL_VENDORS = (
    "When creating or updating ToDo list items for Lance, include specific local businesses or vendors "
    "in San Francisco."
)
MESSAGES = {
    "profile": "My name is Lance. I live in SF with my wife. I have a 1 year old daughter.",
    "swim": "My wife asked me to book swim lessons for the baby.",
    "instructions": "When creating or updating ToDo items, include specific local businesses / vendors.",
    "lock": "I need to fix the jammed electric Yale lock on the door.",
    "deadline": "For the swim lessons, I need to get that done by end of November.",
    "toyota": "Need to call back City Toyota to schedule car service.",
    "remove toyota": "I already called City Toyota, remove that task.",
    "lock done": "The Yale lock is fixed, it's done.",
    "recall": "I have 30 minutes, what tasks can I get done?",
}
LANCE = {
    "name": "Lance",
    "location": "San Francisco",
    "job": None,
    "connections": ["Wife", "1-year-old daughter"],
    "interests": [],
    "timezone": None,
}
SWIM_SOLUTIONS = ["Check local swim schools in SF", "Look for baby swim classes online"]
LOCK_SOLUTIONS = ["Contact a local locksmith in SF", "Check Yale's customer support for troubleshooting"]
TOYOTA_SOLUTIONS = ["Find City Toyota's contact number", "Check car service availability"]


def todo_item(task: str, minutes: int, solutions: list[str], deadline: str | None = None, status: str = "not started"):
    """A ToDo document as the store holds it."""
    return {"task": task, "time_to_complete": minutes, "deadline": deadline, "solutions": solutions, "status": status}


@dataclass(frozen=True)
class TutorialTurn:
    """One user message, the scripted replies it needs by graph node, and the ToDos stored afterwards."""

    key: str
    replies: dict[str, list[Reply]]
    todos: dict[str, dict[str, Any]]
    new_thread: bool = False

    @property
    def message(self) -> str:
        """What the user says."""
        return MESSAGES[self.key]


def end_of_november(settings: RunContext) -> str:
    """The next end of November (30 Nov 23:59) in the configured time zone, as ISO 8601 with the offset."""
    now = settings.now()

    def deadline(year: int) -> datetime:
        naive = datetime(year, 11, 30, 23, 59)
        return naive.replace(tzinfo=ZoneInfo(zone)) if (zone := settings.zone_name()) else naive.astimezone()

    upcoming = deadline(now.year) if deadline(now.year) >= now else deadline(now.year + 1)
    return upcoming.isoformat()


def _recall(messages: list[BaseMessage], _tools: list[str]) -> BaseMessage:
    """The new thread's answer, which only knows the list if the store put it into the prompt."""
    if not any(SWIM in message.text for message in messages if isinstance(message, SystemMessage)):
        return say("I can't find your ToDo list.")
    return say("With 30 minutes you could book the swim lessons for your daughter: that takes about 30 minutes.")


def tutorial_turns(deadline: str, reply_timing: str = "first") -> list[TutorialTurn]:
    """The conversation: profile, ToDos, instructions, a deadline, a removal, a ToDo done, recall in a new thread.

    With `reply_timing="first"` the model answers in the message that calls UpdateMemory; with "after_updates"
    it calls UpdateMemory alone and answers once the update is done (the tutorial's way).
    """

    def memory_turn(key: str, update_type: str, update: Reply, answer: str, todos: dict) -> TutorialTurn:
        """A turn in which the model updates one memory (`user`, `todo` or `instructions`) and answers."""
        chat = [route(update_type, content=answer)] if reply_timing == "first" else [route(update_type), say(answer)]
        return TutorialTurn(key, {AGENT_NAME: chat, kind_for_update(DEFAULT_MEMORY_KINDS, update_type).node: [update]}, todos)

    swim = todo_item(SWIM, 30, SWIM_SOLUTIONS)
    with_school = todo_item(SWIM, 30, [*SWIM_SOLUTIONS, SWIM_SCHOOL])
    due = todo_item(SWIM, 30, [*SWIM_SOLUTIONS, SWIM_SCHOOL], deadline)
    lock = todo_item(LOCK, 60, LOCK_SOLUTIONS)
    toyota = todo_item(TOYOTA, 10, TOYOTA_SOLUTIONS)
    add_school = patch_where("swim", add("/solutions/-", SWIM_SCHOOL))

    def lock_and_swim_school(messages: list[BaseMessage], tools: list[str]) -> BaseMessage:
        return calls(todo(LOCK, time_to_complete=60, solutions=LOCK_SOLUTIONS), *add_school(messages, tools).tool_calls)

    return [
        memory_turn(
            "profile",
            "user",
            calls(profile(name="Lance", location="San Francisco", connections=LANCE["connections"])),
            "Nice to meet you, Lance! How can I help you today?",
            {},
        ),
        memory_turn(
            "swim",
            "todo",
            calls(todo(SWIM, time_to_complete=30, solutions=SWIM_SOLUTIONS)),
            f'I added "{SWIM}" to your list.',
            {SWIM: swim},
        ),
        memory_turn(
            "instructions", "instructions", say(LOCAL_VENDORS), "Got it, I'll suggest local businesses from now on.",
            {SWIM: swim},
        ),
        memory_turn(
            "lock",
            "todo",
            lock_and_swim_school,
            f'I added "{LOCK}" and suggested a swim school near you for the lessons.',
            {SWIM: with_school, LOCK: lock},
        ),
        memory_turn(
            "deadline",
            "todo",
            patch_where("swim", replace("/deadline", deadline)),
            f"The swim lessons are now due {deadline[:10]}.",
            {SWIM: due, LOCK: lock},
        ),
        memory_turn(
            "toyota",
            "todo",
            calls(todo(TOYOTA, time_to_complete=10, solutions=TOYOTA_SOLUTIONS)),
            f'I added "{TOYOTA}".',
            {SWIM: due, LOCK: lock, TOYOTA: toyota},
        ),
        memory_turn(
            "remove toyota", "todo", remove_where("City Toyota"), "Done, the City Toyota task is gone.",
            {SWIM: due, LOCK: lock},
        ),
        memory_turn(
            "lock done",
            "todo",
            patch_where("Yale", replace("/status", "done")),
            "Great, I marked the Yale lock as done.",
            {SWIM: due, LOCK: {**lock, "status": "done"}},
        ),
        TutorialTurn("recall", {AGENT_NAME: [_recall]}, {SWIM: due, LOCK: {**lock, "status": "done"}}, True),
    ]


UNKNOWN_MESSAGE = (
    "I am the tutorial's scripted model: I only know the tutorial's messages (graph.app.tutorial.MESSAGES). "
    "Set OPENAI_API_KEY or OPENAI_BASE_URL and call build_graph() without chat_model to talk to a real model."
)


def _latest_turn(messages: Sequence[BaseMessage], turns: Sequence[TutorialTurn]) -> TutorialTurn | None:
    """The turn whose message comes last in the prompt (an extraction prompt may quote earlier ones too)."""
    text = "\n".join(message.text for message in messages if not isinstance(message, AIMessage))
    placed = [(text.rfind(turn.message), turn) for turn in turns if turn.message in text]
    return max(placed, key=lambda found: found[0])[1] if placed else None


def tutorial_model(settings: RunContext) -> BaseChatModel:
    """A scripted model that answers the tutorial's messages (`MESSAGES`) the way `maistro demo` does, in the run's
    reply timing, in any order and however often they are sent: the key-free `chat_model` for
    `build_graph(chat_model=tutorial_model)`. Any other message gets a sentence saying what it is."""
    turns = tutorial_turns(end_of_november(settings), settings.reply_timing)

    def chat(messages: Sequence[BaseMessage], tools: list[str]) -> BaseMessage:
        latest = next((message for message in reversed(messages) if isinstance(message, HumanMessage)), None)
        turn = _latest_turn([latest] if latest else [], turns)
        if turn is None:
            return say(UNKNOWN_MESSAGE)
        first, *_ = script = turn.replies[AGENT_NAME]
        if isinstance(messages[-1], HumanMessage):
            return first(messages, tools) if callable(first) else first
        return say(script[-1].text)  # after the updates: the turn's answer

    def update(node: str):
        def extract(messages: Sequence[BaseMessage], tools: list[str]) -> BaseMessage:
            turn = _latest_turn(messages, turns)
            reply = turn.replies[node][0] if turn is not None and node in turn.replies else calls()
            return reply(messages, tools) if callable(reply) else reply

        return extract

    standing = {kind.node: update(kind.node) for kind in DEFAULT_MEMORY_KINDS}
    return ScriptedChatModel(standing={**standing, AGENT_NAME: chat})
