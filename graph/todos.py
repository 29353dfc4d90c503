"""The `update_todos` node: insert, patch and delete ToDo items with trustcall, whatever the list's size."""

from collections.abc import Sequence

from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore

from graph.configuration import Configuration
from graph.extraction import (
    EXTRACTION_FAILED,
    answer_update_calls,
    cached_extractor,
    change_context,
    changes_from_extraction,
    commit_changes,
    extraction_messages,
    new_document_key,
    run_extractor,
)
from graph.history import MemoryChange
from graph.memory_store import TODO, read_instructions
from graph.todo_selection import recent_user_text, select_todos
from graph.model import ChatModelFactory
from graph.state import State
from graph.tool_calls import pending_update_calls
from prompts import LANGUAGE_RULE, TODO_INSTRUCTION
from schemas import ToDo


def describe_todo_changes(changes: Sequence[MemoryChange]) -> str:
    """A short report naming each created, updated and deleted task."""
    if not changes:
        return "No changes were made to the ToDo list."
    lines = []
    for change in changes:
        task = (change.after or change.before or {}).get("task", change.key)
        detail = f" ({', '.join(change.changed_fields())})" if change.action == "updated" else ""
        lines.append(f"{change.action}: {task}{detail}")
    return "ToDo list changes:\n" + "\n".join(lines)


def update_todos(
    state: State, config: RunnableConfig, *, store: BaseStore, chat_model: ChatModelFactory
) -> dict:
    """Reflect on the conversation and create, patch or remove ToDo items, following the user's instructions."""
    settings = Configuration.from_runnable_config(config)
    user_id = settings.resolved_user_id
    reachable = select_todos(store, user_id, recent_user_text(state["messages"]), settings.todo_update_limit)
    existing = {item.key: item.value for item in reachable.items}
    calls = pending_update_calls(state["messages"], "todo")
    extractor = cached_extractor(chat_model(settings), ToDo, enable_inserts=True, enable_deletes=True)
    instruction = TODO_INSTRUCTION.format(
        instructions=read_instructions(store, user_id),
        language_rule=LANGUAGE_RULE,
        now=settings.now_text(),
    )
    result = run_extractor(
        extractor,
        {
            "messages": extraction_messages(instruction, state["messages"], state.get("summary", "")),
            "existing": [(key, "ToDo", value) for key, value in existing.items()] or None,
        },
        config,
    )
    changes = changes_from_extraction(
        result, existing, lambda index: new_document_key(state["messages"], calls[0]["id"], index)
    )
    saved, secrets = commit_changes(store, user_id, TODO, changes, change_context(state, config, calls))
    report = describe_todo_changes(saved) if result is not None else EXTRACTION_FAILED.format(memory="ToDo list")
    return answer_update_calls(calls, report, TODO, saved, secrets)
