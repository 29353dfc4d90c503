"""The `update_profile` node: one profile document per user, created once and then patched by trustcall."""

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graph.backends.model import ChatModelFactory
from graph.configuration import Configuration
from graph.memory.changes import MemoryChange
from graph.memory.kinds import PROFILE
from graph.memory.store import namespace, search_all
from graph.nodes.extraction import extract_changes
from graph.nodes.update import UpdateRequest, update_memory
from graph.state import State
from prompts import EXTRACTION_FAILED, LANGUAGE_RULE, PROFILE_UNCHANGED, PROFILE_UPDATED, TRUSTCALL_INSTRUCTION
from schemas import Profile


def propose_profile(request: UpdateRequest) -> list[MemoryChange] | None:
    """The profile document patched (or created) from the conversation; at most one change."""
    existing = {item.key: item.value for item in search_all(request.store, namespace(PROFILE, request.user_id))}
    instruction = TRUSTCALL_INSTRUCTION.format(language_rule=LANGUAGE_RULE, now=request.settings.now_text())
    changes = extract_changes(
        request.model, Profile, request.prompt(instruction), existing, lambda _: PROFILE.key, request.config
    )
    return None if changes is None else changes[-1:]


def report_profile(proposed: list[MemoryChange] | None, saved: list[MemoryChange]) -> str:
    """Which profile fields changed, or why none did."""
    if proposed is None:
        return EXTRACTION_FAILED.format(memory=PROFILE.title)
    if saved:
        return PROFILE_UPDATED.format(fields=", ".join(saved[0].changed_fields()))
    return PROFILE_UNCHANGED


def update_profile(
    state: State, config: RunnableConfig, runtime: Runtime[Configuration], *, chat_model: ChatModelFactory
) -> dict:
    """Extract profile facts from the conversation into the user's single profile document."""
    return update_memory(
        state, config, runtime, chat_model, kind=PROFILE, propose=propose_profile, report=report_profile
    )
