"""Cron schedules a reminder may have: a five-field cron line that fires at most once an hour (each firing is a
model call). Checked where the agent makes a reminder (`graph.nodes.remind`) and where a server takes a cron
(`graph.server.limits`); this module imports neither, so the server's auth module stays light."""

from datetime import UTC, datetime
from typing import Any

from croniter import croniter

MIN_CRON_INTERVAL_SECONDS = 3600
# How many coming firings of a cron schedule are checked for the interval (two days of an hourly one).
CRON_FIRINGS_CHECKED = 48


def shortest_interval(schedule: str) -> float:
    """The shortest time, in seconds, between two of the next `CRON_FIRINGS_CHECKED` firings of a valid cron line."""
    firings = croniter(schedule, datetime(2026, 1, 1, tzinfo=UTC))
    times = [firings.get_next(float) for _ in range(CRON_FIRINGS_CHECKED)]
    return min(later - earlier for earlier, later in zip(times, times[1:], strict=False))


def schedule_problem(schedule: Any) -> str | None:
    """Why `schedule` cannot be a reminder's (one sentence: not a five-field cron line, or it fires more often than
    once every `MIN_CRON_INTERVAL_SECONDS`), or None when it can."""
    if not isinstance(schedule, str) or len(schedule.split()) != 5 or not croniter.is_valid(schedule):
        return f"the schedule {schedule!r} is not a cron line such as '0 8 * * *' (every day at 8:00)."
    if (shortest := shortest_interval(schedule)) < MIN_CRON_INTERVAL_SECONDS:
        minutes = round(shortest / 60)
        return f"the schedule {schedule!r} fires every {minutes} minute{'s' * (minutes != 1)}; a reminder may fire at most once an hour."
    return None
