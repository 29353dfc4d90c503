"""The `update_instructions` node: rewrites the user's ToDo-writing instructions with one model call."""

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graph.backends.model import ChatModelFactory, model_errors, quiet
from graph.configuration import Configuration
from graph.memory.changes import MemoryChange
from graph.memory.kinds import INSTRUCTIONS
from graph.memory.store import namespace
from graph.nodes.update import UpdateRequest, update_memory
from graph.state import State
from prompts import CREATE_INSTRUCTIONS, INSTRUCTIONS_REQUEST, INSTRUCTIONS_UNCHANGED, INSTRUCTIONS_UPDATED
from schemas import Instructions


def propose_instructions(request: UpdateRequest) -> list[MemoryChange]:
    """The complete new instructions, asked of the model (an unchanged text is dropped by the commit)."""
    current = request.store.get(namespace(INSTRUCTIONS, request.user_id), INSTRUCTIONS.key)
    before = current.value if current else None
    instruction = CREATE_INSTRUCTIONS.format(current_instructions=(before or {}).get("memory", ""))
    prompt = [*request.prompt(instruction), HumanMessage(content=INSTRUCTIONS_REQUEST)]
    with model_errors():
        text = quiet(request.model).invoke(prompt, request.config).text.strip()
    if not text:
        return []
    after = Instructions(memory=text).model_dump()
    return [MemoryChange("updated" if before else "created", INSTRUCTIONS.key, before, after)]


def report_instructions(_proposed: list[MemoryChange] | None, saved: list[MemoryChange]) -> str:
    """Whether the instructions changed."""
    return INSTRUCTIONS_UPDATED if saved else INSTRUCTIONS_UNCHANGED


def update_instructions(
    state: State, config: RunnableConfig, runtime: Runtime[Configuration], *, chat_model: ChatModelFactory
) -> dict:
    """Ask the model for the complete new instructions and store them under `user_instructions`."""
    return update_memory(
        state,
        config,
        runtime,
        chat_model,
        kind=INSTRUCTIONS,
        propose=propose_instructions,
        report=report_instructions,
    )
