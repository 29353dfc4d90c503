"""Rich tables of a user's memories for the terminal: a collection's documents in the columns its kind declares
(`MemoryKind.columns`), a single document's fields, or a panel of a text."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from graph.memory.due import Due
from graph.memory.formats import Column, date_time_text
from graph.memory.kinds import MemoryKind, UnknownKindError, kind_named
from graph.memory.rendering import capitalized
from graph.memory.replaced import ARROW, field_texts
from graph.memory.store import read_kind, read_text

if TYPE_CHECKING:  # annotations only: `maistro todos` reads through whichever store it is given
    from langgraph.store.base import BaseStore, Item

# What an undo did to the document, by the action it recorded.
UNDONE = {"created": "restored", "deleted": "removed", "updated": "changed back"}


def readable(value: Any) -> str:
    """A stored value as a person reads it: a list of words joined with commas, an object as "field: value"
    pairs, a list of objects one "•" line each (nested as deep as stored); nothing for an empty value."""
    if value is None:
        return ""
    if isinstance(value, dict):
        return "; ".join(f"{_heading(name)}: {readable(item)}" for name, item in value.items() if item not in (None, "", [], {}))
    if isinstance(value, list):
        if any(isinstance(item, dict | list) for item in value):
            return "\n".join(f"• {readable(item)}" for item in value)
        return ", ".join(map(readable, value))
    return str(value)


def _heading(field: str) -> str:
    return field.replace("_", " ").capitalize()


def document_table(kind: MemoryKind, document: Mapping[str, Any] | None, user_id: str) -> RenderableType:
    """A single document's filled-in fields (the profile's), one row each, their values `readable`."""
    filled = {name: value for name, value in (document or {}).items() if value not in (None, "", [])}
    if not filled:
        return Text(f"No {kind.plural} yet for {user_id}.")
    table = Table(title=f"{capitalized(kind.title)} of {user_id}", show_header=False)
    table.add_column(style="bold")
    table.add_column()
    for name, value in filled.items():
        table.add_row(_heading(name), Text(readable(value)))
    return table


def collection_table(kind: MemoryKind, items: Sequence[Item], user_id: str, title: str = "") -> RenderableType:
    """A collection's documents (the ToDos, contacts), one row each, in the columns its kind declares, under
    `title` (default: the kind's title and the user's id)."""
    if not items:
        return Text(f"No {kind.plural} yet for {user_id}.")
    table = Table(title=title or f"{capitalized(kind.title)} of {user_id}", show_lines=True)
    for column in kind.columns:
        table.add_column(column.heading)
    for item in items:
        table.add_row(*(_cell(column, item.value.get(column.field)) for column in kind.columns))
    return table


def _cell(column: Column, value: Any) -> Text:
    """A value as its column writes it, or the column's default for none, in the column's style for it."""
    written = (column.text or readable)(value) if value is not None else ""
    written = written or column.default
    return Text(written, style=column.style(written))


def due_tables(kind: MemoryKind, due: Due, user_id: str) -> list[RenderableType]:
    """The tables of what of `kind` is due (`graph.memory.due.due_items`): the overdue documents, then those due by
    `due.last_day`; a table only for documents there are."""
    tables = [
        (due.overdue, f"Overdue {kind.plural} of {user_id}"),
        (due.upcoming, f"{capitalized(kind.plural)} of {user_id} due by {due.last_day:%Y-%m-%d}"),
    ]
    return [collection_table(kind, items, user_id, title) for items, title in tables if items]


def text_panel(kind: MemoryKind, text: str, user_id: str) -> RenderableType:
    """A free-text memory (the instructions for writing ToDos) in a titled panel."""
    if not text:
        return Text(f"No {kind.plural} yet for {user_id}.")
    return Panel(Text(text), title=f"{capitalized(kind.title)} of {user_id}", title_align="left")


def memory_view(store: BaseStore, kind: MemoryKind, user_id: str) -> RenderableType:
    """The table (or panel) of one memory kind of the user."""
    if kind.text:
        return text_panel(kind, read_text(store, kind, user_id), user_id)
    if kind.collection:
        return collection_table(kind, read_kind(store, kind, user_id), user_id)
    documents = read_kind(store, kind, user_id)
    return document_table(kind, documents[0].value if documents else None, user_id)


def _summary(document: Mapping[str, Any] | None, kind: MemoryKind | None) -> str:
    if not document:
        return "—"
    shown = document.get(kind.summary_field) if kind else None
    return readable(shown or document.get("memory") or document)[:60]


def _replaced(entry: Mapping[str, Any], kind: MemoryKind | None) -> str:
    """What an update replaced, after its summary: " (location San Francisco → Oakland)" (`graph.memory.replaced`);
    nothing for a free text (its summary is the text) or a change that replaced nothing."""
    texts = [] if kind is not None and kind.text else field_texts(entry["action"], entry["before"], entry["after"])
    return f" ({'; '.join(texts)})" if any(ARROW in text for text in texts) else ""


def _kind_of(entry: Mapping[str, Any], kinds: Sequence[MemoryKind]) -> MemoryKind | None:
    try:
        return kind_named(kinds, entry["kind"])
    except UnknownKindError:
        return None


def change_summary(entry: Mapping[str, Any], kinds: Sequence[MemoryKind]) -> str:
    """A change as `maistro undo` names it before reverting it: e.g. 'ToDo "Fix the Yale lock" created on
    2026-05-01 10:00'."""
    kind = _kind_of(entry, kinds)
    name = kind.label if kind else entry["kind"]
    what = _summary(entry["after"] or entry["before"], kind)
    undo = " (an undo)" if entry.get("undoes") else ""
    return f'{name} "{what}" {entry["action"]}{undo} on {date_time_text(entry["time"])}'


def undo_summary(entry: Mapping[str, Any], kinds: Sequence[MemoryKind]) -> str:
    """What an undo did, naming a collection's document by its summary: e.g. 'ToDo "Fix the Yale lock" changed back'."""
    kind = _kind_of(entry, kinds)
    name = kind.label if kind else entry["kind"]
    if kind and kind.collection:
        name = f'{name} "{_summary(entry["after"] or entry["before"], kind)}"'
    return f"{name} {UNDONE[entry['action']]}"


def history_table(entries: Sequence[Mapping[str, Any]], user_id: str, kinds: Sequence[MemoryKind]) -> RenderableType:
    """The change history, oldest first: time, change id, kind, action, what changed and the message behind it."""
    if not entries:
        return Text(f"No changes recorded for {user_id}.")
    table = Table(title=f"Change history of {user_id}", show_lines=False)
    for column in ("time", "change", "memory", "action", "what", "message"):
        table.add_column(column, overflow="fold")
    for entry in entries:
        action = entry["action"] + (" (undo)" if entry.get("undoes") else "")
        table.add_row(
            date_time_text(entry["time"]),
            entry["id"][:8],
            entry["kind"],
            action,
            _summary(entry["after"] or entry["before"], _kind_of(entry, kinds)) + _replaced(entry, _kind_of(entry, kinds)),
            entry.get("message", "")[:60],
        )
    return table
