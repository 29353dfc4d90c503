"""The user's calendar in the chat prompt: today's weekday and date and the week "this week" means, in the user's
zone, and a note to ask where the user is when no zone is known from the run, the profile or the operator and a
relative date first comes up; and the zone the user's profile holds."""

from collections.abc import Mapping, Sequence
from datetime import date, datetime, timedelta
from typing import Any

from graph.memory.relative_dates import said_dates
from graph.run_context import known_zone
from prompts import WEEK_LINE, ZONE_UNKNOWN


def profile_zone(documents: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    """The time zone the user's memories hold: the first known IANA zone in a single document's `timezone` field
    (the profile's), "" for none; `documents` are each single-document kind's documents, by kind name."""
    for listed in documents.values():
        for document in listed:
            if known_zone(zone := document.get("timezone")):
                return zone
    return ""


def asks_for_zone(said: Sequence[str], today: date) -> bool:
    """Whether a turn whose user has no known zone should ask where they are: the user's latest message (the last
    of `said`, the thread's user messages) names a relative day and no earlier one did, so the question comes
    once, when a relative date first needs it."""
    if not said or not said_dates(said[-1], today):
        return False
    return not any(said_dates(text, today) for text in said[:-1])


def calendar_text(now: datetime, ask_zone: bool) -> str:
    """The chat context's calendar lines for the user's `now` (in their zone): today and this week (Monday to
    Sunday), and, when `ask_zone` (`asks_for_zone` with no zone known), the note to ask where the user is."""
    monday = now.date() - timedelta(days=now.weekday())
    lines = [WEEK_LINE.format(today=now.date(), monday=monday, sunday=monday + timedelta(days=6))]
    if ask_zone:
        lines.append(ZONE_UNKNOWN)
    return "\n".join(lines)
