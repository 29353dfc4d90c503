"""The `update_instructions` node: rewrites the user's ToDo-writing instructions with one model call."""

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore

from graph.configuration import Configuration
from graph.extraction import answer_update_calls, change_context, commit_changes, extraction_messages, quiet
from graph.history import MemoryChange
from graph.memory_store import INSTRUCTIONS, INSTRUCTIONS_KEY, namespace
from graph.model import ChatModelFactory, model_errors
from graph.state import State
from graph.tool_calls import pending_update_calls
from prompts import CREATE_INSTRUCTIONS, INSTRUCTIONS_REQUEST


def update_instructions(
    state: State, config: RunnableConfig, *, store: BaseStore, chat_model: ChatModelFactory
) -> dict:
    """Ask the model for the complete new instructions and store them under `user_instructions`."""
    settings = Configuration.from_runnable_config(config)
    user_id = settings.resolved_user_id
    calls = pending_update_calls(state["messages"], "instructions")
    current = store.get(namespace(INSTRUCTIONS, user_id), INSTRUCTIONS_KEY)
    before = current.value if current else None
    instruction = CREATE_INSTRUCTIONS.format(current_instructions=(before or {}).get("memory", ""))
    prompt = [
        *extraction_messages(instruction, state["messages"], state.get("summary", "")),
        HumanMessage(content=INSTRUCTIONS_REQUEST),
    ]
    with model_errors():
        text = quiet(chat_model(settings)).invoke(prompt, config).text.strip()
    # An unchanged text is no change: commit_changes drops changes whose document stays the same.
    action = "updated" if before else "created"
    changes = [MemoryChange(action, INSTRUCTIONS_KEY, before, {"memory": text})] if text else []
    saved, secrets = commit_changes(store, user_id, INSTRUCTIONS, changes, change_context(state, config, calls))
    report = "Instructions updated." if saved else "The instructions were left unchanged."
    return answer_update_calls(calls, report, INSTRUCTIONS, saved, secrets)
