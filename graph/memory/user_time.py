"""The user's calendar in the chat prompt: today's weekday and date and the week "this week" means, in the user's
zone, and a note to ask where the user is when no zone is known from the run, the profile or the operator; and
the zone the user's profile holds."""

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

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


def calendar_text(now: datetime, zone_known: bool) -> str:
    """The chat context's calendar lines for the user's `now` (in their zone): today and this week (Monday to
    Sunday), and, when no zone is known (`zone_known` false), the note to ask once where the user is."""
    monday = now.date() - timedelta(days=now.weekday())
    lines = [WEEK_LINE.format(today=now.date(), monday=monday, sunday=monday + timedelta(days=6))]
    if not zone_known:
        lines.append(ZONE_UNKNOWN)
    return "\n".join(lines)
