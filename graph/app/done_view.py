"""`maistro done`: what a user finished, read from their done log (`graph.memory.done_log`) without a model: a
count line ("Lance finished 37 ToDos since 2026-05-01"), the count by month, and the items, oldest first, as a
table or JSON."""

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Any

from langgraph.store.base import BaseStore
from rich.console import RenderableType
from rich.table import Table

from graph.memory.done_log import LoggedEntry, month_of, move_finished, read_log
from graph.memory.kinds import MemoryKind
from graph.memory.selection import searchable_text


class InvalidDateError(ValueError):
    """A --since value that is not a date (YYYY-MM-DD)."""


def parse_since(text: str | None) -> date | None:
    """The day a --since value names (YYYY-MM-DD); None for none; `InvalidDateError` (one sentence) otherwise."""
    if text is None:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise InvalidDateError(f"--since {text!r} is not a date; write it as YYYY-MM-DD, e.g. 2026-05-01.") from None


@dataclass(frozen=True)
class DoneReport:
    """One kind's done log as `maistro done` shows it: the entries finished since `since` that hold `find`."""

    kind: MemoryKind
    entries: list[LoggedEntry]
    since: date | None
    find: str

    @property
    def by_month(self) -> dict[str, int]:
        """How many entries were finished in each month (UTC), oldest month first."""
        return dict(sorted(Counter(month_of(entry.finished) for entry in self.entries).items()))

    def count_line(self, user_id: str) -> str:
        """The report in one sentence: how many the user finished, since when, holding what."""
        count = len(self.entries)
        noun = self.kind.label if count == 1 else self.kind.plural
        holding = f' mentioning "{self.find}"' if self.find else ""
        months = self.by_month
        if len(months) == 1:
            when = f" in {_month_name(next(iter(months)))}"
        else:
            when = f" since {self.since.isoformat()}" if self.since else ""
        return f"{user_id} finished {count:,} {noun}{holding}{when}."

    def as_json(self) -> dict[str, Any]:
        """The report as JSON: the kind, the count, the count by month, and the entries (log key → document)."""
        return {
            "kind": self.kind.name,
            "count": len(self.entries),
            "by_month": self.by_month,
            "items": {entry.key: entry.document for entry in self.entries},
        }

    def table(self) -> RenderableType:
        """The entries as a table: when each was finished (UTC) and its summary."""
        table = Table(title=f"Done log: {self.kind.plural}", title_justify="left")
        table.add_column("Finished (UTC)", no_wrap=True)
        table.add_column(self.kind.summary_field.replace("_", " ").capitalize())
        for entry in self.entries:
            moment = entry.finished.astimezone(timezone.utc)
            table.add_row(f"{moment:%Y-%m-%d %H:%M}", str(entry.document.get(self.kind.summary_field, "")))
        return table


def _month_name(month: str) -> str:
    """"2026-05" → "May 2026"."""
    return datetime.strptime(month, "%Y-%m").strftime("%B %Y")


def done_reports(
    store: BaseStore, user_id: str, kinds: Sequence[MemoryKind], since: date | None, find: str = ""
) -> list[DoneReport]:
    """The user's done log of each of `kinds` that keeps one, after moving what is due to move
    (`graph.memory.done_log.move_finished`): the entries finished on or after `since` (UTC) whose text holds `find`
    (case-insensitive; "" for all)."""
    move_finished(store, user_id, kinds)
    needle = find.casefold()
    reports = []
    for kind in kinds:
        if not (kind.collection and kind.done_status):
            continue
        entries = [
            entry for entry in read_log(store, user_id, kind, since)
            if not needle or needle in searchable_text(kind, entry.document).casefold()
        ]
        reports.append(DoneReport(kind, entries, since, find))
    return reports
