"""History entries as stored: reading one back, and the error of a change that is not in the history."""

from typing import Any

from pydantic import ValidationError

from schemas import HistoryEntry

# What older or hand-made history entries lacking these fields are read with.
ENTRY_DEFAULTS = {"order": 0, "thread_id": "", "message": ""}


class UnknownChangeError(LookupError):
    """There is no change with that id (or no change at all) in the user's history."""


def readable_entry(value: Any) -> dict[str, Any] | None:
    """A stored history entry as the history shows it, or None when it is not one.

    Entries this project wrote are complete. A hand-made one (or one imported before imports were checked)
    may lack `order`, `thread_id` or `message` (read as 0, "", "") or carry unknown fields (left out).
    """
    if not isinstance(value, dict):
        return None
    entry = {name: item for name, item in value.items() if name in HistoryEntry.model_fields}
    for name, default in ENTRY_DEFAULTS.items():
        entry.setdefault(name, default)
    try:
        HistoryEntry.model_validate(entry)
    except ValidationError:
        return None
    return entry
