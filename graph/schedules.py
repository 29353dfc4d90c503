"""Cron schedules a reminder may have: a five-field cron line that fires at most once an hour (each firing is a
model call). Checked where the agent makes a reminder (`graph.nodes.remind`) and where a server takes a cron
(`graph.server.limits`); this module imports neither, so the server's auth module stays light. A schedule that names
one date a year (`0 9 5 12 *`) is a one-off: a cron line has no year, so its cron is given an end time
(`one_date_end`)."""

from datetime import UTC, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from croniter import CroniterBadDateError, croniter

MIN_CRON_INTERVAL_SECONDS = 3600
# How many coming firings of a cron schedule are checked for the interval (two days of an hourly one).
CRON_FIRINGS_CHECKED = 48


def shortest_interval(schedule: str) -> float:
    """The shortest time, in seconds, between two of the next `CRON_FIRINGS_CHECKED` firings of a valid cron line."""
    firings = croniter(schedule, datetime(2026, 1, 1, tzinfo=UTC))
    times = [firings.get_next(float) for _ in range(CRON_FIRINGS_CHECKED)]
    return min(later - earlier for earlier, later in zip(times, times[1:], strict=False))


def schedule_problem(schedule: Any) -> str | None:
    """Why `schedule` cannot be a reminder's (one sentence: not a five-field cron line, a date that never comes such
    as February 31, or it fires more often than once every `MIN_CRON_INTERVAL_SECONDS`), or None when it can."""
    if not isinstance(schedule, str) or len(schedule.split()) != 5 or not croniter.is_valid(schedule):
        return f"the schedule {schedule!r} is not a cron line such as '0 8 * * *' (every day at 8:00)."
    try:
        shortest = shortest_interval(schedule)
    except CroniterBadDateError:
        return f"the schedule {schedule!r} names a date that never comes."
    if shortest < MIN_CRON_INTERVAL_SECONDS:
        minutes = round(shortest / 60)
        return f"the schedule {schedule!r} fires every {minutes} minute{'s' * (minutes != 1)}; a reminder may fire at most once an hour."
    return None


def one_date_end(schedule: str, timezone: str, now: datetime) -> datetime | None:
    """When a valid cron line names one date a year (a single day of the month and month, any weekday), the end of
    that date's next occurrence on which it still fires after `now`, in `timezone`; None for a recurring schedule."""
    _minute, _hour, day, month, weekday = schedule.split()
    if not (day.isdigit() and month.isalnum() and weekday == "*"):
        return None
    zone = ZoneInfo(timezone)
    first = croniter(schedule, now.astimezone(zone)).get_next(datetime)
    return datetime.combine(first.date() + timedelta(days=1), time(), tzinfo=zone)


def cron_end_time(schedule: str, timezone: str, now: datetime, *, aegra: bool) -> datetime | None:
    """The end time a cron made at `now` with a valid cron line read in `timezone` is given: None for a recurring
    schedule; for one date a year, the date's end (`one_date_end`: langgraph-api skips a cron past its end time) or,
    on Aegra, the date's last firing (Aegra fires a due cron whatever its end time, and disables it after a firing
    at or past it)."""
    end = one_date_end(schedule, timezone, now)
    return croniter(schedule, end).get_prev(datetime) if end and aegra else end
