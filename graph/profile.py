"""The `update_profile` node: one profile document per user, created once and then patched by trustcall."""

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
    run_extractor,
)
from graph.memory_store import PROFILE, PROFILE_KEY, namespace, search_all
from graph.model import ChatModelFactory
from graph.state import State
from graph.tool_calls import pending_update_calls
from prompts import LANGUAGE_RULE, TRUSTCALL_INSTRUCTION
from schemas import Profile


def update_profile(
    state: State, config: RunnableConfig, *, store: BaseStore, chat_model: ChatModelFactory
) -> dict:
    """Extract profile facts from the conversation into the user's single profile document."""
    settings = Configuration.from_runnable_config(config)
    user_id = settings.resolved_user_id
    calls = pending_update_calls(state["messages"], "user")
    existing = {item.key: item.value for item in search_all(store, namespace(PROFILE, user_id))}
    extractor = cached_extractor(chat_model(settings), Profile)
    instruction = TRUSTCALL_INSTRUCTION.format(language_rule=LANGUAGE_RULE, now=settings.now_text())
    result = run_extractor(
        extractor,
        {
            "messages": extraction_messages(instruction, state["messages"], state.get("summary", "")),
            "existing": [(key, "Profile", value) for key, value in existing.items()] or None,
        },
        config,
    )
    changes = changes_from_extraction(result, existing, lambda _: PROFILE_KEY)[-1:]
    saved, secrets = commit_changes(store, user_id, PROFILE, changes, change_context(state, config, calls))
    if result is None:
        report = EXTRACTION_FAILED.format(memory="profile")
    elif saved:
        report = "Profile updated: " + ", ".join(saved[0].changed_fields()) + "."
    else:
        report = "No profile changes were needed."
    return answer_update_calls(calls, report, PROFILE, saved, secrets)
