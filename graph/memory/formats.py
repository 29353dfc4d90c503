"""How a memory kind's values are shown, as its declaration says: the columns of the CLI's table (`Column`) with
formats for a date-time, minutes and a bullet list, and the ToDo's one-line form in the chat prompt, saying what is due
(`MemoryKind.render`).

Plain data and functions of stored values, declared by the tutorial's kinds (`graph.memory.kinds`) and usable
by any added kind.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from graph.memory.due import DUE_TODAY, OVERDUE, due_state

# The ToDo statuses of work still to do (the ToDo kind's `open_statuses`).
OPEN_TODO_STATUSES = ("not started", "in progress")
# How a ToDo's line in the chat prompt introduces its deadline, by `due_state`: a few tokens say what is due.
DUE_WORDS = {OVERDUE: "overdue since", DUE_TODAY: "due today", "": "due"}


@dataclass(frozen=True)
class Column:
    """One column of the table the CLI draws of a collection kind (`MemoryKind.columns`).

    `field` is the schema field it shows; `heading` its title (default: the field's name in words, capitalised);
    `text` writes a value (default: as people read it, a list joined with commas, an object as "field: value"
    pairs); `default` is written for a missing value; `styles` gives a Rich style to some written values (the
    ToDos' "done" in green), as a mapping or (value, style) pairs.
    """

    field: str
    heading: str = ""
    text: Callable[[Any], str] | None = None
    default: str = ""
    styles: Mapping[str, str] | tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.field, str) or not self.field:
            raise ValueError(f"A table column needs a field name, not {self.field!r}.")
        object.__setattr__(self, "heading", self.heading or self.field.replace("_", " ").capitalize())
        styles = self.styles.items() if isinstance(self.styles, Mapping) else self.styles
        object.__setattr__(self, "styles", tuple((str(value), str(style)) for value, style in styles))

    def style(self, written: str) -> str:
        """The Rich style of a cell that reads `written` ("" for none)."""
        return dict(self.styles).get(written, "")


def date_time_text(value: Any) -> str:
    """An ISO 8601 date-time as "2026-01-05 14:30"; a value that is not one as it is; nothing for none."""
    if not value:
        return ""
    try:
        return datetime.fromisoformat(value).strftime("%Y-%m-%d %H:%M")
    except (TypeError, ValueError):
        return str(value)


def minutes_text(value: Any) -> str:
    """A number of minutes as "45 min"; nothing for none (or 0)."""
    return f"{value} min" if value else ""


def bullets(value: Any) -> str:
    """A list as one "• item" line each; nothing for none."""
    return "\n".join(f"• {item}" for item in value or [])


def todo_line(todo: Mapping[str, Any], now: datetime | None = None) -> str:
    """One ToDo as a single line: task | due | minutes | status | solutions; with the current time `now`, an open
    ToDo's deadline says "overdue since" once it has passed, and "due today" when it falls later on `now`'s day."""
    status = str(todo.get("status", "not started"))
    parts = [str(todo.get("task", ""))]
    if todo.get("deadline"):
        state = due_state(todo["deadline"], now) if now is not None and status in OPEN_TODO_STATUSES else ""
        parts.append(f"{DUE_WORDS[state]} {todo['deadline']}")
    if todo.get("time_to_complete"):
        parts.append(f"{todo['time_to_complete']} min")
    parts.append(status)
    if todo.get("solutions"):
        parts.append("solutions: " + "; ".join(todo["solutions"]))
    return " | ".join(parts)


def todo_lines(todos: Sequence[Mapping[str, Any]], now: datetime | None = None) -> str:
    """ToDos as the chat prompt shows them: one compact line each (`todo_line`), what is due said against `now`."""
    return "\n".join(f"- {todo_line(todo, now)}" for todo in todos)
