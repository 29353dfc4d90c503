"""Pending changes as `maistro pending` prints them: one line each, its id first."""

from graph.memory.formats import date_time_text
from graph.memory.pending import PendingChange

# How much of the user's message a line quotes.
MESSAGE_CHARS = 60


def _quoted(message: str) -> str:
    text = " ".join(message.split())
    return f'"{text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1].rstrip() + "…"}"'


def pending_line(entry: PendingChange, *, with_id: bool = True) -> str:
    """A pending change on one line: its id's first 8 characters (`with_id`), when it failed, its memory, the
    problem and the user's message: e.g. '1a2b3c4d  2026-12-03 10:15  todo: the update failed  "Book a dentist"'."""
    said = f"  {_quoted(entry.message)}" if entry.message else ""
    line = f"{date_time_text(entry.time)}  {entry.kind}: {entry.problem}{said}"
    return f"{entry.id[:8]}  {line}" if with_id else line
