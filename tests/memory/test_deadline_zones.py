"""Deadlines in the user's zone: a date-only or offset-less deadline gets the zone, and what is due holds across DST
changes and midnight."""

from datetime import datetime
from zoneinfo import ZoneInfo

from langgraph.store.base import Item

from graph.memory.deadlines import zoned_deadline
from graph.memory.due import DUE_TODAY, OVERDUE, due_items, due_state
from graph.memory.kinds import TODO
from schemas import ToDo

BERLIN = ZoneInfo("Europe/Berlin")


def stored(deadline: str, zone=BERLIN) -> str:
    """A deadline as the model wrote it, as the store keeps it for a user in `zone`."""
    return zoned_deadline(ToDo(task="t", deadline=deadline).model_dump(mode="json")["deadline"], zone)


def test_a_date_only_deadline_ends_its_day_in_the_users_zone():
    assert stored("2026-12-04") == "2026-12-04T23:59:59+01:00"
    assert stored("2026-12-04", ZoneInfo("Asia/Tokyo")) == "2026-12-04T23:59:59+09:00"
    assert stored("2026-12-04T09:00:00-05:00") == "2026-12-04T09:00:00-05:00", "an offset the model gave stays"


def test_the_last_sundays_of_march_and_october_in_berlin():
    assert stored("2026-03-28") == "2026-03-28T23:59:59+01:00"
    assert stored("2026-03-29") == "2026-03-29T23:59:59+02:00"
    assert stored("2026-03-29T02:30:00") == "2026-03-29T02:30:00+01:00", "a skipped wall time: zoneinfo's fold 0"
    assert stored("2026-10-25") == "2026-10-25T23:59:59+01:00"
    assert stored("2026-10-25T02:30:00") == "2026-10-25T02:30:00+02:00", "a repeated wall time: the first"


def test_due_today_and_the_window_across_the_spring_change():
    deadline = stored("2026-03-29")
    assert due_state(deadline, datetime(2026, 3, 29, 23, 30, tzinfo=BERLIN)) == DUE_TODAY
    assert due_state(deadline, datetime(2026, 3, 30, 0, 0, 30, tzinfo=BERLIN)) == OVERDUE
    item = Item(value={"task": "t", "deadline": deadline, "status": "not started"}, key="k", namespace=("t",),
                created_at=datetime.now(), updated_at=datetime.now())
    saturday_noon = datetime(2026, 3, 28, 12, 0, tzinfo=BERLIN)
    due = due_items([item], saturday_noon, 1, deadline_field="deadline", is_open=TODO.is_open)
    assert due.upcoming == [item] and due.until.isoformat() == "2026-03-30T00:00:00+02:00"


def test_midnight_in_tokyo_is_the_users_day_not_utcs():
    tokyo = ZoneInfo("Asia/Tokyo")
    deadline = stored("2026-12-04", tokyo)  # 14:59:59 UTC on the 4th
    assert due_state(deadline, datetime(2026, 12, 4, 0, 30, tzinfo=tokyo)) == DUE_TODAY  # the 3rd in UTC
    assert due_state(deadline, datetime(2026, 12, 3, 23, 30, tzinfo=tokyo)) == ""
