"""Puts a case's `seed` (the ToDos the user had before its first turn) into a graph's store before the case plays.

On this agent the seed goes in through the import path (`graph.memory.admin.import_memories`), as a user's export
would: a done ToDo keeps its completion time, and those finished more than MAISTRO_DONE_LOG_AFTER_DAYS ago move into
the done log at once. The tutorial's graph has no import, no completion time and no done log: its ToDos are written
into its store as its own update node writes them, so its list keeps them all.
"""

import uuid
from datetime import UTC, date, datetime, time
from typing import Any

from langgraph.store.base import BaseStore

from graph.eval.cases import Case, SeedTodo
from graph.eval.dates import resolve_date

# The store keys of seeded ToDos: the same for a case on every run.
SEED_KEYS = uuid.UUID("0b6f3c2e-8d4a-4e51-9f7c-2a1d5e8b3c90")
# When on its day a seeded ToDo was completed (UTC): far from midnight, so its month is the same in every zone
# a run is likely to use.
COMPLETED_AT = time(12, tzinfo=UTC)


def seed_document(todo: SeedTodo, today: date, completion: bool) -> dict[str, Any]:
    """A seeded ToDo as a store document: dates resolved against `today`, at least one solution, and (`completion`)
    its completion time when it says one."""
    document = todo.model_dump(exclude={"completed"})
    document["deadline"] = resolve_date(todo.deadline, today).isoformat() if todo.deadline else None
    document["solutions"] = todo.solutions or [todo.task]
    if completion and todo.completed:
        document["completed_at"] = datetime.combine(resolve_date(todo.completed, today), COMPLETED_AT).isoformat()
    return document


def seed_memory(store: BaseStore, graph_name: str, case: Case, user_id: str, today: date) -> None:
    """Put the case's seed into `store` for `user_id`, its dates counted from `today`: through the import on this
    agent ("maistro"), as plain documents of its ToDo namespace on the tutorial's graph."""
    if case.seed is None or not case.seed.todos:
        return
    keys = [str(uuid.uuid5(SEED_KEYS, f"{case.id}/{index}")) for index in range(len(case.seed.todos))]
    if graph_name == "tutorial":
        for key, todo in zip(keys, case.seed.todos, strict=True):
            store.put(("todo", user_id), key, seed_document(todo, today, completion=False))
        return
    from graph.memory.admin import EXPORT_FORMAT, import_memories
    from graph.memory.kinds import DEFAULT_MEMORY_KINDS

    todos = {key: seed_document(todo, today, completion=True) for key, todo in zip(keys, case.seed.todos, strict=True)}
    import_memories(store, user_id, {"format": EXPORT_FORMAT, "todo": todos}, DEFAULT_MEMORY_KINDS)
