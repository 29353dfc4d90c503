"""Relative dates in English and Chinese, counted from the user's own today; one the message pins moves the model's
deadline to the user's day."""

from datetime import date, datetime
from zoneinfo import ZoneInfo

import pytest

from graph.memory.changes import MemoryChange
from graph.memory.kinds import TODO
from graph.memory.relative_dates import only_date_said, pinned_deadlines, said_dates

THURSDAY = date(2026, 12, 3)
TOKYO = ZoneInfo("Asia/Tokyo")


@pytest.mark.parametrize(
    "text, day",
    [
        ("Pay rent tomorrow", "2026-12-04"),
        ("Renew the permit in 3 days", "2026-12-06"),
        ("in three days", "2026-12-06"),
        ("the day after tomorrow", "2026-12-05"),
        ("moved to a week from today", "2026-12-10"),
        ("in 2 weeks", "2026-12-17"),
        ("tonight", "2026-12-03"),
        ("明天交报告", "2026-12-04"),
        ("后天要交房租", "2026-12-05"),
        ("大后天", "2026-12-06"),
        ("三天后", "2026-12-06"),
        ("3天之后", "2026-12-06"),
        ("下周五开会", "2026-12-11"),
        ("下星期日", "2026-12-13"),
        ("一周后", "2026-12-10"),
    ],
)
def test_each_expression_names_one_day_from_the_users_today(text, day):
    assert said_dates(text, THURSDAY) == [date.fromisoformat(day)]
    assert only_date_said(text, THURSDAY) == date.fromisoformat(day)


def test_next_friday_is_read_but_pins_nothing_because_english_reads_it_two_ways():
    assert said_dates("next Friday", THURSDAY) == [date(2026, 12, 4)]
    assert only_date_said("next Friday", THURSDAY) is None


@pytest.mark.parametrize(
    "text",
    [
        "Pay rent tomorrow and call the bank the day after tomorrow",
        "Remind me tomorrow to pay the rent due on the 15th",
        "Tomorrow I'll know whether the report is due Friday",
        "明天交15号的报告",
        "下下周五",
        "Buy milk",
    ],
)
def test_a_message_with_another_date_or_none_pins_nothing(text):
    assert only_date_said(text, THURSDAY) is None


def test_midnight_in_tokyo_counts_from_tokyos_day():
    """23:30 and 00:30 in Tokyo are the same UTC date, but 明天 is a different day."""
    late = datetime(2026, 12, 3, 23, 30, tzinfo=TOKYO)
    early = datetime(2026, 12, 4, 0, 30, tzinfo=TOKYO)
    assert (only_date_said("明天", late.date()), only_date_said("明天", early.date())) == (date(2026, 12, 4), date(2026, 12, 5))


def created(deadline: str | None, task: str = "Pay rent") -> MemoryChange:
    return MemoryChange("created", task, None, {"task": task, "deadline": deadline, "status": "not started"})


def test_the_one_dated_todo_moves_to_the_day_said_at_the_models_time_of_day():
    now = datetime(2026, 12, 4, 0, 30, tzinfo=TOKYO)  # still the 3rd in UTC: a server-clock model says the 4th
    pinned = pinned_deadlines(TODO, [created("2026-12-04T18:00:00+09:00")], "明天交房租", now)
    assert pinned[0].after["deadline"] == "2026-12-05T18:00:00+09:00"
    right = [created("2026-12-05T23:59:59+09:00")]
    assert pinned_deadlines(TODO, right, "明天交房租", now) == right
    two = [created("2026-12-04T18:00:00+09:00"), created("2026-12-04T19:00:00+09:00", "Call")]
    assert pinned_deadlines(TODO, two, "明天交房租", now) == two, "two dated ToDos: which one the day is for is unknown"
