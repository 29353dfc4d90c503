"""Rich tables of a user's memories for the terminal: ToDo list, profile, instructions."""

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from langgraph.store.base import BaseStore, Item
from rich.console import RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from graph.memory.kinds import DEFAULT_MEMORY_KINDS, PROFILE, TODO, MemoryKind, UnknownKindError, kind_named
from graph.memory.store import read_kind, read_text

STATUS_STYLES = {"done": "green", "in progress": "yellow", "archived": "dim"}
# What an undo did to the document, by the action it recorded.
UNDONE = {"created": "restored", "deleted": "removed", "updated": "changed back"}


def _deadline_text(deadline: str | None) -> str:
    if not deadline:
        return ""
    try:
        return datetime.fromisoformat(deadline).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return deadline


def todo_table(items: Sequence[Item], user_id: str) -> RenderableType:
    """The ToDo list: task, status, deadline, time to complete and solutions, one row per item."""
    if not items:
        return Text(f"No ToDos yet for {user_id}.")
    table = Table(title=f"ToDo list of {user_id}", show_lines=True)
    for column in ("Task", "Status", "Deadline", "Time", "Solutions"):
        table.add_column(column)
    for item in items:
        todo = item.value
        minutes = todo.get("time_to_complete")
        status = todo.get("status") or "not started"
        table.add_row(
            Text(str(todo.get("task", ""))),
            Text(status, style=STATUS_STYLES.get(status, "")),
            _deadline_text(todo.get("deadline")),
            f"{minutes} min" if minutes else "",
            Text("\n".join(f"• {solution}" for solution in todo.get("solutions") or [])),
        )
    return table


def profile_table(profile: Mapping[str, Any] | None, user_id: str) -> RenderableType:
    """The profile's filled-in fields, one row each; lists joined with commas."""
    filled = {name: value for name, value in (profile or {}).items() if value not in (None, "", [])}
    if not filled:
        return Text(f"No profile yet for {user_id}.")
    table = Table(title=f"Profile of {user_id}", show_header=False)
    table.add_column(style="bold")
    table.add_column()
    for name, value in filled.items():
        shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        table.add_row(name.replace("_", " ").capitalize(), Text(shown))
    return table


def instructions_panel(text: str, user_id: str) -> RenderableType:
    """The user's instructions for writing ToDos, in a titled panel."""
    if not text:
        return Text(f"No instructions yet for {user_id}.")
    return Panel(Text(text), title=f"Instructions of {user_id}", title_align="left")


def memory_view(store: BaseStore, kind: MemoryKind, user_id: str) -> RenderableType:
    """The table (or panel) of one memory kind of the user."""
    if kind.name == TODO.name:
        return todo_table(read_kind(store, kind, user_id), user_id)
    if kind.name == PROFILE.name:
        profile = read_kind(store, kind, user_id)
        return profile_table(profile[0].value if profile else None, user_id)
    return instructions_panel(read_text(store, kind, user_id), user_id)


def _summary(document: Mapping[str, Any] | None) -> str:
    if not document:
        return "—"
    return str(document.get("task") or document.get("name") or document.get("memory") or document)[:60]


def undo_summary(entry: Mapping[str, Any]) -> str:
    """What an undo did, naming the ToDo by its task: e.g. 'ToDo "Fix the Yale lock" changed back'."""
    try:
        name = kind_named(DEFAULT_MEMORY_KINDS, entry["kind"]).label
    except UnknownKindError:
        name = entry["kind"]
    if entry["kind"] == TODO.name:
        name = f'{name} "{_summary(entry["after"] or entry["before"])}"'
    return f"{name} {UNDONE[entry['action']]}"


def history_table(entries: Sequence[Mapping[str, Any]], user_id: str) -> RenderableType:
    """The change history, oldest first: time, change id, kind, action, what changed and the message behind it."""
    if not entries:
        return Text(f"No changes recorded for {user_id}.")
    table = Table(title=f"Change history of {user_id}", show_lines=False)
    for column in ("time", "change", "memory", "action", "what", "message"):
        table.add_column(column, overflow="fold")
    for entry in entries:
        action = entry["action"] + (" (undo)" if entry.get("undoes") else "")
        table.add_row(
            _deadline_text(entry["time"]),
            entry["id"][:8],
            entry["kind"],
            action,
            _summary(entry["after"] or entry["before"]),
            entry.get("message", "")[:60],
        )
    return table
