"""The task_mAIstro graph, as drawn in DESIGN.md, and the composition root that gives it storage.

    START → task_maistro ──(no tool call)──→ END
                │ UpdateMemory(update_type=user|todo|instructions)
                ├──→ update_profile ──────┐
                ├──→ update_todos ────────┼──→ task_maistro
                └──→ update_instructions ─┘

`graph` (named in langgraph.json) is compiled without checkpointer or store: `langgraph dev` and the
LangGraph Platform supply both. Python users get the durable version from `open_graph()` (a context
manager that closes what it opened) or `build_graph()` (the tutorial's style: open until `close_graph`).
"""

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graph.backends.model import ChatModelFactory, ModelCallBudget, load_chat_model
from graph.backends.storage import close_storage, open_storage
from graph.configuration import Configuration
from graph.durability import durability_config
from graph.memory.kinds import INSTRUCTIONS, PROFILE, TODO
from graph.nodes.chat import task_maistro
from graph.nodes.update_instructions import update_instructions
from graph.nodes.update_profile import update_profile
from graph.nodes.update_todos import update_todos
from graph.state import InputState, State
from graph.thread.tool_calls import pending_update_calls

UPDATE_NODES = {
    PROFILE.update_type: ("update_profile", update_profile),
    TODO.update_type: ("update_todos", update_todos),
    INSTRUCTIONS.update_type: ("update_instructions", update_instructions),
}
NODE_FOR_UPDATE_TYPE = {update_type: name for update_type, (name, _) in UPDATE_NODES.items()}
UpdateNode = Literal["update_profile", "update_todos", "update_instructions"]
# The graph's name: the API server names its assistant after it, and MCP clients see it as the tool's name.
AGENT_NAME = "todo_memory_agent"


def route_message(state: State, config: RunnableConfig) -> list[UpdateNode] | Literal["__end__"]:
    """Send the turn to every update node named by a pending UpdateMemory call (in parallel), else end."""
    update_types = {call["args"]["update_type"] for call in pending_update_calls(state["messages"])}
    return sorted(NODE_FOR_UPDATE_TYPE[kind] for kind in update_types) or END


def create_builder(chat_model: ChatModelFactory = load_chat_model) -> StateGraph:
    """The uncompiled graph; `chat_model` turns a run's settings into the chat model every node uses.

    `Configuration` is the run context's schema (a run's `context=`, shown in Studio); each node gets the run's
    settings from `RunSettings.of`, which also reads the tutorial's `configurable`.
    """
    builder = StateGraph(State, input_schema=InputState, context_schema=Configuration)
    builder.add_node("task_maistro", partial(task_maistro, chat_model=chat_model))
    for name, node in UPDATE_NODES.values():
        builder.add_node(name, partial(node, chat_model=chat_model))
        builder.add_edge(name, "task_maistro")
    builder.add_edge(START, "task_maistro")
    builder.add_conditional_edges("task_maistro", route_message, [*NODE_FOR_UPDATE_TYPE.values(), END])
    return builder


def compile_agent(chat_model: ChatModelFactory = load_chat_model, **persistence: Any) -> CompiledStateGraph:
    """The compiled graph (with `checkpointer` and `store` when given), every run capped in model calls."""
    compiled = create_builder(chat_model).compile(name=AGENT_NAME, **persistence)
    return compiled.with_config(callbacks=[ModelCallBudget()])


graph = compile_agent()


def build_graph(
    data_dir: Path | str | None = None,
    *,
    database_url: str | None = None,
    embeddings: str | None = None,
    chat_model: ChatModelFactory = load_chat_model,
) -> CompiledStateGraph:
    """The agent compiled with durable persistence: threads and memories survive restarts.

    SQLite in `data_dir` (default MAISTRO_DATA_DIR, else the platform's data directory), or PostgreSQL at
    `database_url` (default MAISTRO_DATABASE_URL); `embeddings` (default MAISTRO_EMBEDDINGS) turns on the
    semantic index. Runs default to "sync" durability (see graph.durability). Release it with `close_graph`.
    """
    checkpointer, store = open_storage(data_dir, database_url, embeddings)
    store.start_ttl_sweeper()
    return compile_agent(chat_model, checkpointer=checkpointer, store=store).with_config(durability_config("sync"))


def close_graph(compiled: CompiledStateGraph) -> None:
    """Release what `build_graph` opened: the TTL sweeper and the database connections (or pool)."""
    compiled.store.stop_ttl_sweeper()
    close_storage(compiled.checkpointer, compiled.store)


@contextmanager
def open_graph(
    data_dir: Path | str | None = None,
    *,
    database_url: str | None = None,
    embeddings: str | None = None,
    chat_model: ChatModelFactory = load_chat_model,
) -> Iterator[CompiledStateGraph]:
    """`build_graph` as a context manager: `with open_graph() as graph:` closes storage on the way out."""
    compiled = build_graph(data_dir, database_url=database_url, embeddings=embeddings, chat_model=chat_model)
    try:
        yield compiled
    finally:
        close_graph(compiled)
