"""The memory page lists a collection's open documents first, the overdue ones (the soonest deadlines) at the top,
and the closed ones last, however they were stored."""

from datetime import datetime, timedelta, timezone

from langgraph.store.base import Item

from graph.memory.kinds import TODO
from graph.server.memory_page import open_first


def test_overdue_todos_come_first_then_by_deadline_then_the_closed_ones():
    now = datetime.now(timezone.utc)

    def item(key: str, deadline: datetime | None, status: str = "not started") -> Item:
        value = {"task": key, "status": status, "deadline": deadline.isoformat() if deadline else None}
        return Item(value=value, key=key, namespace=("todo", "Lance"), created_at=now, updated_at=now)

    items = [
        item("someday", None),
        item("done-late", now - timedelta(days=9), "done"),
        item("next-week", now + timedelta(days=7)),
        item("late", now - timedelta(days=2), "in progress"),
        item("later-late", now - timedelta(hours=1)),
    ]
    assert [shown.key for shown in open_first(TODO, items)] == ["late", "later-late", "next-week", "someday", "done-late"]
