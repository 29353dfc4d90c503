"""When a document was finished: the completion time every write of a kind with a done status stamps.

A kind that declares `done_status` and `completed_field` (the ToDos' "done" and `completed_at`) has every change
pass through `stamped` before it is written (`graph.memory.changes.commit_changes`): a document that becomes done
gets the time of the write, one that stays done keeps the time it had, and one reopened loses it. Only an import
may bring its own time (`trusted`): an export's `completed_at` is kept as it was, and an imported done document
without one stays without (an export made before ToDos recorded it): its time in the list then counts from its last
change, the import (`graph.memory.done_log.finished_at`). The model's own value is never taken: it may not know
the time.
"""

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from graph.memory.due import read_date_time
from graph.memory.kinds import MemoryKind


def completed_at(value: Any) -> datetime | None:
    """A stored completion time as an aware datetime; None for none, one unreadable or one without a zone."""
    moment = read_date_time(value)
    return moment if moment is not None and moment.tzinfo else None


def is_done(kind: MemoryKind, document: Mapping[str, Any] | None) -> bool:
    """Whether `document` of `kind` is finished: its status is the kind's `done_status`."""
    return bool(kind.done_status and document and document.get(kind.status_field) == kind.done_status)


def stamped(
    kind: MemoryKind,
    before: Mapping[str, Any] | None,
    after: dict[str, Any] | None,
    now: datetime | None = None,
    *,
    trusted: bool = False,
) -> dict[str, Any] | None:
    """`after` with the kind's completion field as the write leaves it: the time it was first marked done (`now`,
    default the current time, for a document that becomes done; `before`'s for one that stays done), removed for
    one that is not done. `trusted` (an import) keeps a valid time `after` brings."""
    if after is None or not kind.completed_field:
        return after
    field = kind.completed_field
    if not is_done(kind, after):
        return {name: value for name, value in after.items() if name != field}
    if trusted:
        return after
    kept = completed_at((before or {}).get(field)) if is_done(kind, before) else None
    moment = kept or now or datetime.now(timezone.utc)
    return {**after, field: moment.isoformat()}
