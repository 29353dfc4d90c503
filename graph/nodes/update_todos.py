"""The `update_todos` node: insert, patch and delete ToDo items with trustcall, whatever the list's size."""

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graph.backends.model import ChatModelFactory
from graph.configuration import Configuration
from graph.memory.changes import MemoryChange
from graph.memory.context import start_turn, turn_memories, with_turn_changes
from graph.memory.kinds import TODO
from graph.nodes.extraction import extract_changes, new_document_key
from graph.nodes.update import UpdateRequest, update_memory
from graph.state import State
from prompts import EXTRACTION_FAILED, LANGUAGE_RULE, TODO_INSTRUCTION, TODOS_UNCHANGED, TODOS_UPDATED
from schemas import ToDo


def propose_todos(request: UpdateRequest) -> list[MemoryChange] | None:
    """ToDo items created, patched and removed from the conversation, among those relevant to the turn.

    The candidates are the ones the turn's read chose (`graph.memory.context`), with the changes of the
    turn's earlier rounds applied; a `fresh` request reads the list again, and what it read wins over those
    changes. New items get keys derived from the routing call, so a replayed update writes the same keys.
    """
    settings = request.settings
    read = start_turn if request.fresh else turn_memories
    memories = read(request.store, settings, request.messages, request.run.thread_id)
    reachable = {item.key: item.value for item in memories.update_todos.items}
    existing = with_turn_changes(reachable, request.messages, TODO)
    if request.fresh:
        existing.update(reachable)
    instruction = TODO_INSTRUCTION.format(
        instructions=memories.instructions,
        language_rule=LANGUAGE_RULE,
        now=settings.now_text(),
    )
    return extract_changes(
        request.model,
        ToDo,
        request.prompt(instruction),
        existing,
        lambda index: new_document_key(request.messages, request.calls[0]["id"], index),
        request.config,
        enable_inserts=True,
        enable_deletes=True,
    )


def report_todos(proposed: list[MemoryChange] | None, saved: list[MemoryChange]) -> str:
    """A short report naming each created, updated and deleted task."""
    if proposed is None:
        return EXTRACTION_FAILED.format(memory=TODO.title)
    if not saved:
        return TODOS_UNCHANGED
    lines = []
    for change in saved:
        task = (change.after or change.before or {}).get("task", change.key)
        detail = f" ({', '.join(change.changed_fields())})" if change.action == "updated" else ""
        lines.append(f"{change.action}: {task}{detail}")
    return TODOS_UPDATED.format(changes="\n".join(lines))


def update_todos(
    state: State, config: RunnableConfig, runtime: Runtime[Configuration], *, chat_model: ChatModelFactory
) -> dict:
    """Reflect on the conversation and create, patch or remove ToDo items, following the user's instructions."""
    return update_memory(
        state, config, runtime, chat_model, kind=TODO, propose=propose_todos, report=report_todos
    )
