"""What is due, in the chat prompt: an open ToDo's line says "overdue since" or "due today" against the run's time
in the user's zone, for a few tokens more."""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from langchain_core.messages import HumanMessage
from langgraph.store.memory import InMemoryStore

from graph.memory.context import read_turn_memories
from graph.memory.formats import todo_lines
from graph.memory.kinds import DEFAULT_MEMORY_KINDS, TODO
from graph.memory.store import namespace
from graph.run_context import RunContext
from graph.text_tokens import count_text_tokens

TOKYO = ZoneInfo("Asia/Tokyo")
# Half past midnight in Tokyo: still the day before in UTC.
NOW = datetime(2026, 12, 3, 0, 30, tzinfo=TOKYO)


def todo(task: str, deadline: str, status: str = "not started") -> dict:
    return {"task": task, "deadline": deadline, "status": status, "time_to_complete": None, "solutions": []}


def test_yesterday_today_and_next_week_in_a_zone_ahead_of_utc_across_midnight():
    lines = todo_lines(
        [
            todo("Pay rent", "2026-12-02T23:00:00+09:00", "in progress"),
            todo("Call the bank", "2026-12-02T16:00:00+00:00"),  # 01:00 on the 3rd in Tokyo, the 2nd in UTC
            todo("Renew passport", "2026-12-10T09:00:00+09:00"),
            todo("File taxes", "2026-12-01T09:00:00+09:00", "done"),
        ],
        NOW,
    ).splitlines()
    assert lines == [
        "- Pay rent | overdue since 2026-12-02T23:00:00+09:00 | in progress",
        "- Call the bank | due today 2026-12-02T16:00:00+00:00 | not started",
        "- Renew passport | due 2026-12-10T09:00:00+09:00 | not started",
        "- File taxes | due 2026-12-01T09:00:00+09:00 | done",
    ]


def test_the_day_is_the_users_not_utcs():
    """The same deadline, 23:30 UTC on the 2nd, is due today in Tokyo (08:30 on the 3rd), but not on the evening of
    the 1st in New York, though it is already the 2nd in UTC there (the deadline is 18:30 on the 2nd in New York)."""
    deadline = "2026-12-02T23:30:00+00:00"
    assert "due today" in todo_lines([todo("Call", deadline)], NOW)
    new_york_evening = datetime(2026, 12, 1, 20, 0, tzinfo=ZoneInfo("America/New_York"))  # 01:00 on the 2nd in UTC
    assert todo_lines([todo("Call", deadline)], new_york_evening) == f"- Call | due {deadline} | not started"


def test_what_is_due_costs_a_few_tokens_per_todo():
    plain = todo_lines([todo("Pay rent", "2026-12-02T23:00:00+09:00")])
    overdue = todo_lines([todo("Pay rent", "2026-12-02T23:00:00+09:00")], NOW)
    today = todo_lines([todo("Pay rent", "2026-12-03T23:00:00+09:00")], NOW)
    assert "overdue since" in overdue and "due today" in today
    assert count_text_tokens(overdue) - count_text_tokens(plain) <= 3
    assert count_text_tokens(today) - count_text_tokens(plain) <= 3


def test_a_turn_shows_what_is_due_against_the_runs_time_zone():
    store = InMemoryStore()
    now = datetime.now(TOKYO)
    store.put(namespace(TODO, "Lance"), "late", todo("Pay rent", (now - timedelta(hours=1)).isoformat()))
    store.put(namespace(TODO, "Lance"), "later", todo("Renew passport", (now + timedelta(days=9)).isoformat()))
    settings = RunContext(user_id="Lance", timezone="Asia/Tokyo")
    shown = read_turn_memories(store, settings, [HumanMessage("What is due?")], DEFAULT_MEMORY_KINDS).shown(TODO)
    assert "- Pay rent | overdue since " in shown
    assert "- Renew passport | due " in shown
