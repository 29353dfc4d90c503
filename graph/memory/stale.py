"""Stale open documents: those whose deadline passed long ago are raised with the user once, never silently kept
or dropped.

An open document of a kind with a `deadline_field` is stale once its deadline is more than
MAISTRO_STALE_TODO_AFTER_DAYS past. The first turn that shows it (`raise_stale`) gets one line in the chat
prompt's context naming it, and the user's record of what was raised (`(DONE_LOG, <user label>)`, key
"<kind>.stale": the keys of the documents raised and still stale) keeps later turns from raising it again. A
document that stops being stale (rescheduled, finished, dropped) leaves the record, so it is raised again if it
ever goes stale anew. The record is written with a condition on what was read: of two turns at once, one raises.
"""

from collections.abc import Sequence
from datetime import datetime, timedelta

from langgraph.store.base import BaseStore, Item, PutOp

from graph.memory.conditions import ConflictError, Unchanged, write_unless_changed
from graph.memory.done_log import counts_namespace
from graph.memory.due import deadline_at
from graph.memory.kinds import MemoryKind
from graph.settings import current_settings

RAISED = "raised"


def stale_items(kind: MemoryKind, items: Sequence[Item], now: datetime) -> list[Item]:
    """The open documents among `items` whose deadline is more than MAISTRO_STALE_TODO_AFTER_DAYS before `now`,
    soonest deadline first."""
    if not kind.deadline_field:
        return []
    cutoff = now - timedelta(days=current_settings().stale_todo_after_days)
    dated = [(deadline, item) for item in items if kind.is_open(item.value)
             if (deadline := deadline_at(item.value.get(kind.deadline_field))) is not None and deadline < cutoff]
    return [item for _, item in sorted(dated, key=lambda pair: (pair[0], pair[1].key))]


def stale_record_key(kind: MemoryKind) -> str:
    """The key, in the user's done-log counts namespace, of the record of `kind`'s stale documents already raised."""
    return f"{kind.name}.stale"


def raise_stale(
    store: BaseStore, user_id: str, kind: MemoryKind, items: Sequence[Item], now: datetime, stored: Item | None
) -> str:
    """The line of the chat prompt that raises the stale documents among `items` not raised before (recorded now);
    "" when there are none, or another turn raised them first. `stored`: the record as the turn read it
    (`stale_record_key`)."""
    stale = stale_items(kind, items, now)
    record_key = stale_record_key(kind)
    before = stored.value if stored else None
    raised = before.get(RAISED) if isinstance(before, dict) else None
    raised = set(raised) if isinstance(raised, list) else set()
    new = [item for item in stale if item.key not in raised]
    current = sorted(item.key for item in stale)
    if current != sorted(raised):
        try:
            write_unless_changed(
                store,
                [Unchanged(counts_namespace(user_id), record_key, before)],
                [PutOp(counts_namespace(user_id), record_key, {RAISED: current}, index=False)],
            )
        except ConflictError:
            return ""
    if not new:
        return ""
    days = current_settings().stale_todo_after_days
    named = "; ".join(
        f"{item.value.get(kind.summary_field)} (due {deadline_at(item.value.get(kind.deadline_field)).date().isoformat()})"
        for item in new
    )
    return (
        f"Stale {kind.plural} (deadline passed over {days:g} days ago; raise them with the user once, now: is each "
        f"done, does it need a new deadline, or can it go?): {named}"
    )
