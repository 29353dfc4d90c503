"""What is due: a deadline read from a stored document, whether an open one is overdue or due today in the user's
time zone, and which open documents of a kind are overdue or due within some days (`maistro due`).

Plain functions of stored values and a current time (the run's `RunContext.now()`, aware, in the zone the agent
uses): a deadline without a zone is taken as UTC, as the ranking of a long list takes it.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: the chat prompt's rendering imports this module
    from langgraph.store.base import Item

OVERDUE = "overdue"
DUE_TODAY = "today"


def read_date_time(value: Any) -> datetime | None:
    """A stored ISO 8601 date-time read as it is (with or without a zone); None for a value that is not text or
    text that is not one."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def deadline_at(value: Any) -> datetime | None:
    """A stored deadline as an aware datetime (one without a zone taken as UTC); None for none or one unreadable."""
    parsed = read_date_time(str(value)) if value else None
    if parsed is None:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def due_state(value: Any, now: datetime) -> str:
    """Whether an open document's deadline `value` has passed (`OVERDUE`), falls later on `now`'s day in `now`'s
    zone (`DUE_TODAY`), or neither ("")."""
    deadline = deadline_at(value)
    if deadline is None:
        return ""
    if deadline < now:
        return OVERDUE
    return DUE_TODAY if deadline.astimezone(now.tzinfo).date() == now.date() else ""


@dataclass(frozen=True)
class Due:
    """A kind's open documents that are due: those whose deadline has passed, and those due by `until`, each
    soonest first."""

    overdue: list["Item"]
    upcoming: list["Item"]
    until: datetime

    @property
    def last_day(self) -> date:
        """The last day `upcoming` reaches: the one `until` ends."""
        return (self.until - timedelta(days=1)).date()


def due_items(
    items: Sequence["Item"], now: datetime, days: int, *, deadline_field: str, is_open: Callable[[Mapping[str, Any]], bool]
) -> Due:
    """The open documents among `items` (`is_open`: a kind's `MemoryKind.is_open`) whose `deadline_field` has
    passed, and those due by the end of the day `days` days after `now`'s (in `now`'s zone), by deadline."""
    until = datetime.combine(now.date() + timedelta(days=days + 1), time(), now.tzinfo)
    dated = [(deadline, item) for item in items if is_open(item.value)
             if (deadline := deadline_at(item.value.get(deadline_field))) is not None]
    dated.sort(key=lambda pair: (pair[0], pair[1].key))
    return Due(
        overdue=[item for deadline, item in dated if deadline < now],
        upcoming=[item for deadline, item in dated if now <= deadline < until],
        until=until,
    )
