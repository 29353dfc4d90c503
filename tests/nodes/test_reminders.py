"""Reminders the user asks the agent for, with the scripted model: without a server the reply says in one sentence
that they need one (nothing scheduled, one model call); with a server's scheduler the request made carries the
run's own thread and user, the user's time zone and the schedule, and a bad schedule is one sentence."""

import asyncio

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from graph.agent import compile_graph
from graph.memory.kinds import resolve_kinds
from graph.memory.store import namespace
from graph.nodes.remind import ReminderRequest, install_scheduler
from graph.runtime import GraphRuntime
from graph.schedules import schedule_problem
from graph.thread.model_message import REMIND_TOOL
from prompts import REMIND_DIGEST, REMIND_NEEDS_SERVER, REMIND_NEEDS_SERVER_ZH
from testing.helpers import config, todos, turn
from testing.scripted_model import ScriptedChatModel, calls, remind, say, todo
from testing.stored_names import PROFILE


@pytest.fixture(autouse=True)
def no_scheduler(monkeypatch: pytest.MonkeyPatch) -> None:
    """No server in this process unless a test installs a scheduler."""
    monkeypatch.setattr("graph.nodes.remind._SCHEDULERS", [])


@pytest.fixture
def scheduled() -> list[ReminderRequest]:
    """A scheduler installed as a server's would be, recording each request and answering with a cron."""
    made: list[ReminderRequest] = []

    async def schedule(request: ReminderRequest) -> dict:
        made.append(request)
        return {"cron_id": f"cron-{len(made)}", "thread_id": request.thread_id}

    install_scheduler(schedule)
    return made


def served_graph(model: ScriptedChatModel):
    """The graph as a server runs it: asynchronously, with the server's checkpointer and store (here in memory)."""
    return compile_graph(GraphRuntime(resolve_kinds(None)), lambda _settings: model, checkpointer=InMemorySaver(), store=InMemoryStore())


def served_turn(graph, text: str, user_id: str = "Lance", thread_id: str = "1", **extra) -> list:
    """One user message through the served graph; the thread afterwards."""
    run = graph.ainvoke({"messages": [HumanMessage(content=text)]}, config(user_id, thread_id, **extra))
    return asyncio.run(run)["messages"]


@pytest.mark.parametrize(("text", "sentence"), [("Remind me every day at 8", REMIND_NEEDS_SERVER), ("每天早上提醒我", REMIND_NEEDS_SERVER_ZH)])
def test_without_a_server_the_reply_says_reminders_need_one_in_one_model_call(agent, model, text, sentence):
    model.add("task_maistro", remind("0 8 * * *", content="Sure, I'll remind you every day at 8."))

    thread = turn(agent, text)

    assert thread[-1].content == sentence, "the reply claims nothing: it says a server is needed, in the user's language"
    assert not any(call["name"] == REMIND_TOOL for message in thread if isinstance(message, AIMessage) for call in message.tool_calls)
    assert len(model.calls_in("task_maistro")) == 1


def test_without_a_server_a_todo_saved_beside_the_reminder_is_kept_and_the_reply_says_both(agent, model):
    model.add("task_maistro", remind("0 9 13 12 *", "Pay rent", "Added 'Pay rent'.", "todo"))
    model.add("update_todos", calls(todo("Pay rent", deadline="2026-12-14T09:00:00+00:00")))

    thread = turn(agent, "Pay rent on the 14th, remind me the day before")

    assert [item["task"] for item in todos(agent).values()] == ["Pay rent"]
    assert thread[-1].content == f"Added 'Pay rent'.\n\n{REMIND_NEEDS_SERVER}"
    assert len(model.calls_in("task_maistro")) == 1


def test_on_a_server_the_request_names_the_runs_own_thread_user_and_zone(scheduled, model):
    graph = served_graph(model)
    model.add("task_maistro", remind("0 8 * * *", "", "I'll send you a digest every morning at 8."))

    thread = served_turn(graph, "Remind me every morning at 8 of what is due", thread_id="t-1", timezone="Asia/Tokyo")

    (request,) = scheduled
    assert (request.schedule, request.timezone, request.message, request.thread_id) == ("0 8 * * *", "Asia/Tokyo", REMIND_DIGEST, "t-1")
    assert request.config["configurable"]["user_id"] == "Lance", "the run's own config: its user, not one the model names"
    answer = next(message for message in thread if isinstance(message, ToolMessage))
    assert answer.status == "success" and "cron-1" in answer.content and "Asia/Tokyo" in answer.content
    assert thread[-1].content == "I'll send you a digest every morning at 8.", "the reply given first stands"
    assert len(model.calls_in("task_maistro")) == 1


def test_the_profiles_zone_is_used_when_the_run_names_none_and_the_model_cannot_name_a_thread(scheduled, model, monkeypatch):
    monkeypatch.setenv("MAISTRO_TIMEZONE", "UTC")
    graph = served_graph(model)
    graph.store.put(namespace(PROFILE, "Lance"), "user_profile", {"name": "Lance", "timezone": "Europe/Berlin"})
    forged = AIMessage(content="OK.", tool_calls=[{
        "name": REMIND_TOOL, "id": "call_forged", "type": "tool_call",
        "args": {"schedule": "30 7 * * 1", "message": "Gym", "thread_id": "someone-elses", "user_id": "Mallory", "timezone": "UTC"},
    }])
    model.add("task_maistro", forged)

    served_turn(graph, "Remind me to go to the gym every Monday at 7:30", thread_id="mine")

    (request,) = scheduled
    assert (request.timezone, request.thread_id, request.message) == ("Europe/Berlin", "mine", "Gym")
    assert request.config["configurable"]["user_id"] == "Lance"


@pytest.mark.parametrize(
    ("schedule", "sentence"),
    [
        ("*/5 * * * *", "I could not set that reminder: the schedule '*/5 * * * *' fires every 5 minutes; a reminder may fire at most once an hour."),
        ("every day at 8", "I could not set that reminder: the schedule 'every day at 8' is not a cron line such as '0 8 * * *' (every day at 8:00)."),
        ("0 8 * * * *", "I could not set that reminder: the schedule '0 8 * * * *' is not a cron line such as '0 8 * * *' (every day at 8:00)."),
        ("0 9 31 2 *", "I could not set that reminder: the schedule '0 9 31 2 *' names a date that never comes."),
    ],
)
def test_a_bad_schedule_is_one_sentence_and_nothing_is_scheduled(scheduled, model, schedule, sentence):
    graph = served_graph(model)
    model.add("task_maistro", remind(schedule, "Stretch", "Done, I'll remind you."))

    thread = served_turn(graph, "Remind me to stretch")

    assert scheduled == [] and thread[-1].content == sentence
    assert len(model.calls_in("task_maistro")) == 1


def test_a_server_refusal_is_told_to_the_user_by_the_model(model):
    async def refuse(request: ReminderRequest) -> dict:
        raise PermissionError("Thread not found.")

    install_scheduler(refuse)
    graph = served_graph(model)
    model.add("task_maistro", remind("0 8 * * *", "Water the plants", "OK, every day at 8."), say("Sorry, the reminder was not set."))

    thread = served_turn(graph, "Remind me to water the plants every day at 8")

    answer = next(message for message in thread if isinstance(message, ToolMessage))
    assert answer.status == "error" and answer.content == "The reminder was not set: Thread not found."
    assert thread[-1].content == "Sorry, the reminder was not set."


def test_schedules_fire_at_most_hourly_and_are_five_field_cron_lines():
    assert schedule_problem("0 8 * * *") is None and schedule_problem("0 * * * *") is None
    assert schedule_problem("0 9 14 3 *") is None, "once a year: the day before a deadline"
    assert "fires every 30 minutes" in schedule_problem("0,30 * * * *")
    assert "is not a cron line" in schedule_problem(None)
