"""The user's own time through `graph.stream` with the scripted model: the profile's time zone, a client's zone
over it, the time the user wrote the message, deadlines in the user's zone, and what is due answered in one call."""

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from langchain_core.messages import HumanMessage

from graph.memory.store import namespace
from prompts import ZONE_UNKNOWN
from testing.helpers import config, profile_of, todos, turn
from testing.scripted_model import calls, profile, route, say, todo
from testing.stored_names import PROFILE, TODO

TOKYO = ZoneInfo("Asia/Tokyo")


def context_of(call) -> str:
    """The chat prompt's context block: the time and the memories, right before the user's latest message."""
    return call.messages[-2].text


def test_with_no_zone_known_the_first_relative_date_asks_where_the_user_is_once(agent, model, monkeypatch):
    monkeypatch.delenv("MAISTRO_TIMEZONE")
    model.standing["task_maistro"] = say("OK.")

    for text in ("Hi", "Pay rent tomorrow", "Call mum the day after tomorrow", "明天交报告"):
        turn(agent, text)
    turn(agent, "Water the plants tomorrow", thread_id="2")

    asked = [ZONE_UNKNOWN in context_of(call) for call in model.calls_in("task_maistro")]
    assert asked == [False, True, False, False, True], "once per conversation, when a relative date first needs it"


def test_the_user_says_where_they_live_and_later_prompts_use_that_zone(agent, model, monkeypatch):
    monkeypatch.delenv("MAISTRO_TIMEZONE")
    model.add("task_maistro", say("Where are you?"), route("user"), say("Noted, Tokyo."), say("Sure."))
    model.add("update_profile", calls(profile(location="Tokyo", timezone="Asia/Tokyo")))

    turn(agent, "Remind me to pay rent tomorrow")
    turn(agent, "I live in Tokyo.")
    turn(agent, "And the bank the day after tomorrow?")

    assert profile_of(agent)["timezone"] == "Asia/Tokyo"
    first, *_, last = model.calls_in("task_maistro")
    assert ZONE_UNKNOWN in context_of(first), "no zone from the run, the profile or the operator: ask"
    assert "+09:00 (" in context_of(last) and ZONE_UNKNOWN not in context_of(last)


def test_a_zone_the_model_names_wrongly_is_never_stored(agent, model):
    model.add("task_maistro", route("user"), say("Noted."))
    model.standing["update_profile"] = calls(profile(location="Tokyo", timezone="Tokyo"))

    thread = turn(agent, "I live in Tokyo.")

    assert profile_of(agent) is None, "the profile update is refused, nothing of it stored"
    assert "The profile update failed" in thread[2].content


def test_a_clients_zone_wins_over_the_profiles_and_the_profiles_over_the_operators(agent, model):
    agent.store.put(namespace(PROFILE, "Lance"), "user_profile", {"name": "Lance", "timezone": "Asia/Tokyo"})
    model.add("task_maistro", say("Hi."), say("Hi again."))

    turn(agent, "Hello")
    turn(agent, "Hello from Berlin", timezone="Europe/Berlin")

    profile_zone, client_zone = (context_of(call) for call in model.calls_in("task_maistro"))
    assert "+09:00 (" in profile_zone, "the profile's Tokyo over MAISTRO_TIMEZONE's Los Angeles"
    berlin = datetime.now(ZoneInfo("Europe/Berlin")).strftime("%z")
    assert f"{berlin[:3]}:{berlin[3:]} (" in client_zone


def test_the_prompts_now_is_the_message_time_in_the_users_zone(agent, model):
    """A user at 23:30 in Tokyo: the prompt's today is Tokyo's date, whatever the server's date is."""
    tokyo_now = datetime.now(TOKYO)
    written = tokyo_now.replace(hour=23, minute=30, second=0, microsecond=0)
    if written - tokyo_now > timedelta(hours=23):
        written -= timedelta(days=1)
    model.add("task_maistro", say("Noted."))

    turn(agent, "Hi", timezone="Asia/Tokyo", message_time=written.isoformat())

    context = context_of(model.calls_in("task_maistro")[0])
    assert context.startswith(f"Current date and time: {written.isoformat(timespec='minutes')} ({written:%A}, JST)")
    monday = written.date() - timedelta(days=written.weekday())
    assert f"Today is {written:%A} {written:%Y-%m-%d} where the user is; this week runs from Monday {monday}" in context


@pytest.mark.parametrize(
    "message_time, problem",
    [
        ("2026-12-03T21:30:00", "is not an ISO 8601 date-time with a UTC offset"),
        ("yesterday evening", "is not an ISO 8601 date-time with a UTC offset"),
        ((datetime.now(timezone.utc) - timedelta(hours=25)).isoformat(), "is more than 24 hours from the server's clock"),
    ],
)
def test_a_bad_message_time_is_refused_in_one_sentence_and_the_message_kept(agent, model, message_time, problem):
    with pytest.raises(ValueError, match=problem) as refused:
        agent.invoke({"messages": [HumanMessage("Pay rent tomorrow")]}, config(message_time=message_time))

    assert "\n" not in str(refused.value)
    assert [m.content for m in agent.get_state(config()).values["messages"]] == ["Pay rent tomorrow"]
    assert model.calls == [] and todos(agent) == {}


@pytest.mark.parametrize(
    "written, stored",
    [
        ("2026-12-04", "2026-12-04T23:59:59+01:00"),  # a date only: by the end of that day in Berlin
        ("2026-12-04T18:00:00", "2026-12-04T18:00:00+01:00"),  # no offset: Berlin's wall time
        ("2026-03-29", "2026-03-29T23:59:59+02:00"),  # the day clocks go forward: the day ends in summer time
        ("2026-10-25", "2026-10-25T23:59:59+01:00"),  # the day they go back: it ends in winter time
        ("2026-12-04T18:00:00+09:00", "2026-12-04T18:00:00+09:00"),  # an offset the model gave is kept
    ],
)
def test_a_deadline_without_an_offset_is_stored_in_the_users_zone(agent, model, written, stored):
    agent.store.put(namespace(PROFILE, "Lance"), "user_profile", {"name": "Lance", "timezone": "Europe/Berlin"})
    model.add("task_maistro", route("todo"), say("Added."))
    model.add("update_todos", calls(todo("Pay rent", deadline=written, solutions=["Bank transfer"])))

    turn(agent, "Pay rent by then")

    assert todos(agent)["Pay rent"]["deadline"] == stored


def test_whats_due_this_week_is_answered_from_the_list_in_one_model_call(agent, model):
    now = datetime.now(TOKYO)
    for task, days in (("Pay rent", -1), ("Call the bank", 0), ("Renew passport", 30)):
        deadline = (now + timedelta(days=days)).replace(hour=23, minute=59, second=0, microsecond=0)
        item = {"task": task, "deadline": deadline.isoformat(), "status": "not started", "solutions": ["x"]}
        agent.store.put(namespace(TODO, "Lance"), task, {**item, "time_to_complete": None})
    model.add("task_maistro", say("Overdue: Pay rent. Today: Call the bank."))

    thread = turn(agent, "今天要做什么?", timezone="Asia/Tokyo")

    assert thread[-1].content == "Overdue: Pay rent. Today: Call the bank."
    assert len(model.calls) == 1, "one model call: no update, the list is in the prompt"
    context = context_of(model.calls[0])
    assert "- Pay rent | overdue since" in context and "- Call the bank | due today" in context
    assert f"Today is {now:%A} {now:%Y-%m-%d} where the user is" in context


@pytest.mark.parametrize("said, days", [("明天之前要交房租", 1), ("后天之前要交房租", 2), ("Pay rent in 3 days", 3)])
def test_a_deadline_counted_from_the_servers_clock_is_moved_to_the_users_day(agent, model, said, days):
    """Half past midnight in Tokyo is still the day before in UTC: a model that counts from the server's date
    writes a day too early (a date alone: the end of that day in Tokyo); the relative day the message names puts
    it right."""
    tokyo_now = datetime.now(TOKYO)
    written = tokyo_now.replace(hour=0, minute=30, second=0, microsecond=0)
    if tokyo_now - written > timedelta(hours=23):
        written += timedelta(days=1)
    server_day = written.astimezone(timezone.utc).date() + timedelta(days=days)
    model.add("task_maistro", route("todo"), say("OK"))
    model.add("update_todos", calls(todo("交房租", deadline=server_day.isoformat(), solutions=["Bank"])))

    turn(agent, said, timezone="Asia/Tokyo", message_time=written.isoformat())

    stored = datetime.fromisoformat(todos(agent)["交房租"]["deadline"])
    assert stored.astimezone(TOKYO).date() == written.date() + timedelta(days=days)
