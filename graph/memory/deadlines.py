"""Deadlines as aware date-times: a deadline a model wrote without a UTC offset gets the user's time zone before
it is stored.

A model asked for an absolute date-time sometimes writes "2026-12-04T18:00" (no offset) or "2026-12-04" (no time:
the ToDo schema reads it as the end of that day, 23:59:59, `schemas.ToDo`). Either is taken as the user's local
time, in the zone the turn resolved (`graph.run_context.RunContext.zone_name`): 18:00 in Berlin is stored as
`2026-12-04T18:00:00+01:00`, and a date-only Friday ends at 23:59:59 of that Friday where the user is, never
at the server's midnight. A wall time that a DST change skips or repeats is read as `zoneinfo` reads it (fold 0).
"""

from collections.abc import Sequence
from dataclasses import replace
from datetime import tzinfo
from typing import Any

from graph.memory.changes import MemoryChange
from graph.memory.due import read_date_time
from graph.memory.kinds import MemoryKind


def zoned_deadline(value: Any, zone: tzinfo) -> Any:
    """A stored deadline with the user's `zone` when it has no offset (ISO 8601, to the second); any other value
    (None, an aware date-time, text that is not a date-time) as it is."""
    moment = read_date_time(value)
    if moment is None or moment.tzinfo:
        return value
    return moment.replace(tzinfo=zone).isoformat()


def zoned_changes(kind: MemoryKind, changes: Sequence[MemoryChange], zone: tzinfo) -> list[MemoryChange]:
    """`changes` with each new or updated document's `deadline_field` in the user's `zone` (`zoned_deadline`);
    unchanged for a kind without a deadline field."""
    if not kind.deadline_field:
        return list(changes)
    zoned = []
    for change in changes:
        if change.after is not None and kind.deadline_field in change.after:
            deadline = zoned_deadline(change.after[kind.deadline_field], zone)
            change = replace(change, after={**change.after, kind.deadline_field: deadline})
        zoned.append(change)
    return zoned
