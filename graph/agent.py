"""The task_mAIstro graph, as drawn in docs/contributing/architecture.md, and the composition root that gives it storage.

    START → task_maistro ──(no tool call)──→ END
                │ UpdateMemory(update_type=user|todo|instructions)
                ├──→ update_profile ──────┐
                ├──→ update_todos ────────┤
                ├──→ update_instructions ─┼──→ task_maistro
                │ Remind(schedule, message)│
                └──→ remind ──────────────┘

The chat node replies in the message that routes (`reply_timing="first"`), so on the way back from the update
nodes it ends the turn without a model call unless the reply must change (graph.nodes.chat); with
"after_updates" it always answers there, as in the tutorial.

One update node per memory kind (`graph.memory.kinds`; the drawing shows `DEFAULT_MEMORY_KINDS`): pass
`memory_kinds=[*DEFAULT_MEMORY_KINDS, my_kind]` to add one, or set MAISTRO_MEMORY_KINDS for the server's graph.
The `remind` node schedules a reminder the user asked for on the server the graph runs in (`graph.nodes.remind`;
without a server the chat node answers that reminders need one, and the graph never goes there).
Each graph built here has its own `GraphRuntime` (`graph.runtime`): its kinds, caches and background reader.

`server_graph` (named in langgraph.json and aegra.json) builds the servers' graph on its first call, without
checkpointer or store (the server supplies both), so a bad setting stops the server's start with one sentence
(`SettingsError`) and `import graph.agent` never fails on one; `graph` is that graph. Python users get the
durable version from `open_graph()` (a context manager that closes what it opened) or `build_graph()` (the
tutorial's style: open until `close_graph`).
"""

import functools
import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graph.backends.history_sql import HistorySql
from graph.backends.list_index import ListIndexed
from graph.backends.model import ChatModelFactory, ModelCallBudget, load_chat_model
from graph.backends.storage import close_storage, open_storage
from graph.durability import durability_config
from graph.memory.kinds import MemoryKind, resolve_kinds
from graph.names import AGENT_NAME
from graph.nodes.chat import task_maistro
from graph.nodes.extraction import cached_extractor
from graph.nodes.remind import REMIND_NODE, pending_remind_calls, remind
from graph.nodes.update import extraction_options
from graph.nodes.update_kinds import update_node
from graph.run_context import RunContext
from graph.runtime import GraphRuntime, runtime_of
from graph.settings import current_settings
from graph.state import InputState, State
from graph.thread.tool_calls import pending_update_calls


def message_router(kinds: Sequence[MemoryKind]) -> Callable[[State, RunnableConfig], list[str] | str]:
    """The edge out of `task_maistro`: to the node of every kind named by a pending UpdateMemory call and to `remind`
    for pending Remind calls, else END."""
    node_for_update_type = {kind.update_type: kind.node for kind in kinds}

    def route_message(state: State, config: RunnableConfig) -> list[str] | str:
        """Send the turn to every update node named by a pending UpdateMemory call and to `remind` for pending
        Remind calls (in parallel), else end."""
        update_types = {call["args"]["update_type"] for call in pending_update_calls(state["messages"])}
        nodes = sorted(node_for_update_type[kind] for kind in update_types if kind in node_for_update_type)
        return nodes + [REMIND_NODE] * bool(pending_remind_calls(state["messages"])) or END

    return route_message


def graph_builder(graph_runtime: GraphRuntime, chat_model: ChatModelFactory = load_chat_model) -> StateGraph:
    """The uncompiled graph of `graph_runtime`'s kinds, whose nodes keep what they keep in `graph_runtime`;
    `chat_model` turns a run's settings into the chat model every node uses.

    `RunContext` is the run context's schema (a run's `context=`, shown in Studio); each node gets the run's
    settings from `ResolvedRun.of`, which also reads the tutorial's `configurable`.
    """
    kinds = graph_runtime.kinds
    builder = StateGraph(State, input_schema=InputState, context_schema=RunContext)
    builder.add_node(AGENT_NAME, partial(task_maistro, chat_model=chat_model, graph_runtime=graph_runtime))
    for kind in kinds:
        builder.add_node(kind.node, update_node(kind, graph_runtime, chat_model))
        builder.add_edge(kind.node, AGENT_NAME)
    builder.add_node(REMIND_NODE, partial(remind, graph_runtime=graph_runtime))
    builder.add_edge(REMIND_NODE, AGENT_NAME)
    builder.add_edge(START, AGENT_NAME)
    builder.add_conditional_edges(AGENT_NAME, message_router(kinds), [*(kind.node for kind in kinds), REMIND_NODE, END])
    return builder


def compile_graph(
    graph_runtime: GraphRuntime, chat_model: ChatModelFactory = load_chat_model, **persistence: Any
) -> CompiledStateGraph:
    """`graph_builder`'s graph compiled under the agent's name (with `checkpointer` and `store` when given), every
    run capped in model calls; `graph_runtime` rides along as a callback, so after a run the lists it read by their
    heads are read whole in the background (`graph.memory.list_reads`), and `graph.runtime.runtime_of` finds it."""
    compiled = graph_builder(graph_runtime, chat_model).compile(name=AGENT_NAME, **persistence)
    return compiled.with_config(callbacks=[ModelCallBudget(), graph_runtime])


@functools.cache
def server_graph() -> CompiledStateGraph:
    """The graph `langgraph dev`, the LangGraph Platform and Aegra serve (langgraph.json and aegra.json name this
    function), built once, on the first call: with MAISTRO_MEMORY_KINDS's kinds, without checkpointer or store
    (the server supplies both). Raises `SettingsError`, one sentence, when a setting cannot be used."""
    return compile_graph(GraphRuntime(resolve_kinds(None)))


def __getattr__(name: str) -> Any:
    """`graph`, the servers' graph (`server_graph`), built when first asked for rather than at import."""
    if name == "graph":
        return server_graph()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_graph(
    data_dir: Path | str | None = None,
    *,
    database_url: str | None = None,
    embeddings: str | None = None,
    chat_model: ChatModelFactory = load_chat_model,
    memory_kinds: Sequence[MemoryKind] | None = None,
) -> CompiledStateGraph:
    """The agent compiled with durable persistence: threads and memories survive restarts.

    SQLite in `data_dir` (default MAISTRO_DATA_DIR, else the platform's data directory), or PostgreSQL at
    `database_url` (default MAISTRO_DATABASE_URL); `embeddings` (default MAISTRO_EMBEDDINGS) turns on the
    semantic index; `memory_kinds` (default MAISTRO_MEMORY_KINDS, else `DEFAULT_MEMORY_KINDS`) are the memories
    it keeps. Runs default to "sync" durability (see graph.durability). Release it with `close_graph`.
    """
    graph_runtime = GraphRuntime(resolve_kinds(memory_kinds))  # the kinds checked once, before storage opens
    checkpointer, store = open_storage(data_dir, database_url, embeddings)
    if isinstance(store, ListIndexed):
        store.describe_lists(graph_runtime.kinds)
    if isinstance(store, HistorySql):
        store.swept_kinds = graph_runtime.kinds  # its sweep moves what is due into the done logs
    store.start_ttl_sweeper()
    compiled = compile_graph(graph_runtime, chat_model, checkpointer=checkpointer, store=store)
    warm_up(chat_model, graph_runtime)
    return compiled.with_config(durability_config("sync"))


def warm_up(chat_model: ChatModelFactory, graph_runtime: GraphRuntime) -> None:
    """Do as the graph is built what a fresh process's first turn would pay for (`python -m bench.first_turn`):
    create the default model client when an endpoint is configured (its HTTP clients load the certificates,
    about 0.1 s) and each kind's trustcall extractor for it (building one converts its tools' JSON schemas,
    about 50 ms for the default kinds), kept in `graph_runtime`, and freeze what the process holds by then
    (`freeze_startup_objects`)."""
    if getattr(chat_model, "func", chat_model) is load_chat_model and current_settings().model_configured():
        model = chat_model(RunContext())
        for kind in graph_runtime.kinds:
            cached_extractor(graph_runtime.extractors, model, kind.schema, **extraction_options(kind))
    freeze_startup_objects()


@functools.cache
def freeze_startup_objects() -> None:
    """Move every object alive now (modules, classes, the compiled graph) to the collector's permanent generation,
    once per process: reading a long list allocates enough to start a full collection, which would otherwise walk
    all of them (about 0.1 s of the first turn for a user with 10,000 ToDos)."""
    gc.freeze()


def close_graph(compiled: CompiledStateGraph) -> None:
    """Release what `build_graph` opened: the TTL sweeper, the background list reads and the database connections
    (or pool)."""
    compiled.store.stop_ttl_sweeper()
    runtime_of(compiled).close()
    close_storage(compiled.checkpointer, compiled.store)


@contextmanager
def open_graph(
    data_dir: Path | str | None = None,
    *,
    database_url: str | None = None,
    embeddings: str | None = None,
    chat_model: ChatModelFactory = load_chat_model,
    memory_kinds: Sequence[MemoryKind] | None = None,
) -> Iterator[CompiledStateGraph]:
    """`build_graph` as a context manager: `with open_graph() as graph:` closes storage on the way out."""
    compiled = build_graph(
        data_dir, database_url=database_url, embeddings=embeddings, chat_model=chat_model, memory_kinds=memory_kinds
    )
    try:
        yield compiled
    finally:
        close_graph(compiled)
