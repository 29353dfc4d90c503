"""What a change replaced: each changed field of an updated document, its old value and its new one.

The notes people read say it ("Profile updated (location San Francisco → Oakland)", "ToDo updated: Pay rent
(deadline 2026-12-01 → 2026-12-05)"), with each value shortened to `VALUE_CHARS`; the `memory_update` stream
events carry it whole (`field_changes`), so API clients need not parse the notes. A field that held nothing
before, or a list that only gained items, replaced nothing: the note names the field alone, as before.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from graph.memory.due import read_date_time

__all__ = ["ARROW", "VALUE_CHARS", "event_changes", "field_changes", "field_texts", "value_text"]

# The most characters of one value a note shows; a longer value ends with "…".
VALUE_CHARS = 40
ARROW = "→"


def _filled(value: Any) -> Any:
    """The value, with every kind of empty value as None (as `MemoryChange.changed_fields` compares them)."""
    return None if value is None or value in ("", [], {}) else value


def field_changes(action: str, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Each field an updated document changed, in the document's order, as `{"field", "old", "new"}` (a value
    that was or became empty is None); nothing for a document created or deleted."""
    if action != "updated":
        return []
    before, after = before or {}, after or {}
    return [
        {"field": name, "old": _filled(before.get(name)), "new": _filled(after.get(name))}
        for name in {**before, **after}
        if _filled(before.get(name)) != _filled(after.get(name))
    ]


def _replaced(old: Any, new: Any) -> bool:
    """Whether a change of a field from `old` to `new` replaced something: it held a value, and (for a list) lost
    an item of it."""
    if old is None:
        return False
    if isinstance(old, list) and isinstance(new, list):
        return any(item not in new for item in old)
    return True


def value_text(value: Any) -> str:
    """A field's value in a note: a date-time as "2026-12-05" (with its time when not midnight), a list joined with
    commas, "none" for nothing; at most `VALUE_CHARS` characters."""
    if value is None:
        return "none"
    if isinstance(value, list):
        text = ", ".join(value_text(item) for item in value)
    elif isinstance(value, dict):
        text = ", ".join(f"{name} {value_text(item)}" for name, item in value.items() if _filled(item) is not None)
    elif isinstance(value, str):
        text = _date_text(value) or " ".join(value.split())
    else:
        text = str(value)
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1].rstrip() + "…"


def _date_text(value: str) -> str | None:
    """An ISO 8601 date-time as "2026-12-05" or "2026-12-05 14:30"; None for any other text."""
    if len(value) < 10 or not value[:4].isdigit() or value[4] != "-":
        return None
    moment = read_date_time(value)
    if moment is None:
        return None
    return moment.strftime("%Y-%m-%d" if (moment.hour, moment.minute) == (0, 0) else "%Y-%m-%d %H:%M")


def field_texts(action: str, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[str]:
    """Each changed field as a note names it: "location San Francisco → Oakland" when it replaced a value, else
    the field's name alone."""
    return [
        f"{change['field']} {value_text(change['old'])} {ARROW} {value_text(change['new'])}"
        if _replaced(change["old"], change["new"])
        else change["field"]
        for change in field_changes(action, before, after)
    ]


def event_changes(changes: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The changes a `memory_update` event carries, whole (for API clients): for each changed field of an updated
    document `{"action": "updated", "key", "field", "old", "new"}`; for a document created or deleted one entry
    with `field` None and the document as `new` or `old`. `changes` are `MemoryChange`s as dicts."""
    events: list[dict[str, Any]] = []
    for change in changes:
        action, key, before, after = change["action"], change["key"], change["before"], change["after"]
        if action != "updated":
            events.append({"action": action, "key": key, "field": None, "old": before, "new": after})
            continue
        events += [{"action": action, "key": key, **field} for field in field_changes(action, before, after)]
    return events
