"""Dates in eval cases, written relative to the day the run fixes as today ("today+1", "next friday", ...)."""

import calendar
import re
from datetime import date, timedelta

WEEKDAYS = tuple(day.lower() for day in calendar.day_name)
_RELATIVE = re.compile(r"today(?:\s*([+-])\s*(\d+))?")
_NEXT_WEEKDAY = re.compile(r"next (" + "|".join(WEEKDAYS) + ")")
_MONTH_START = re.compile(r"month-(\d+)")
_MONTH_END = re.compile(r"end of (" + "|".join(month.lower() for month in calendar.month_name[1:]) + ")")


class DateSpecError(ValueError):
    """A case's date is not one of the forms `resolve_date` reads."""


def resolve_date(spec: str, today: date) -> date:
    """The date `spec` means on `today`: "today", "today+N" / "today-N", "next <weekday>" (the first one after
    today), "month-N" (the first day of the month N months before today's), "end of <month>" (its last day, this
    year unless already past) or an ISO date "YYYY-MM-DD"."""
    text = spec.strip().lower()
    if match := _RELATIVE.fullmatch(text):
        sign, days = match.groups()
        return today + timedelta(days=(-1 if sign == "-" else 1) * int(days or 0))
    if match := _NEXT_WEEKDAY.fullmatch(text):
        ahead = (WEEKDAYS.index(match[1]) - today.weekday() - 1) % 7 + 1
        return today + timedelta(days=ahead)
    if match := _MONTH_START.fullmatch(text):
        months = today.year * 12 + today.month - 1 - int(match[1])
        return date(months // 12, months % 12 + 1, 1)
    if match := _MONTH_END.fullmatch(text):
        month = [name.lower() for name in calendar.month_name].index(match[1])
        year = today.year if (today.month, today.day) <= (month, calendar.monthrange(today.year, month)[1]) else today.year + 1
        return date(year, month, calendar.monthrange(year, month)[1])
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise DateSpecError(
            f"The date {spec!r} is not one of: today, today+N, today-N, next <weekday>, month-N, end of <month>, "
            "YYYY-MM-DD."
        ) from None


_CRON_DATE = re.compile(r"\{([^{}]+)\}")


def cron_dates(schedule: str, today: date) -> str:
    """A case's cron line with each `{SPEC}` (a date of `resolve_date`) written as that day's "day month" fields:
    "0 9 {today+2} *" is 9:00 on the day after tomorrow."""
    return _CRON_DATE.sub(lambda found: f"{(day := resolve_date(found[1], today)).day} {day.month}", schedule)
