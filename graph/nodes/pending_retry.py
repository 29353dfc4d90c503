"""Retry a pending change: propose again from the user's kept message, against the memories as they are now.

The retry runs the kind's own update node (`graph.nodes.update.update_memory`, with its proposer, its secret
redaction and its conflict checks) in a graph of that node alone, without a checkpointer: it answers one
`UpdateMemory` call made for the kept message, and no thread gets a turn. The batch that saves removes the
pending change, only if it is still there as it was read (`graph.memory.pending.settle_op`); so two retries, or
a retry and a drop, never both take effect, and a retry replayed after its commit answers from what it saved.
A retry that fails again leaves the pending change as it was.
"""

from dataclasses import dataclass
from functools import partial

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from graph.backends.model import ChatModelFactory
from graph.memory.kinds import kind_named
from graph.memory.notes import change_notes
from graph.memory.pending import PendingChange
from graph.nodes.update import update_memory
from graph.nodes.update_kinds import update_steps
from graph.run_context import RunContext
from graph.runtime import GraphRuntime
from graph.state import State
from graph.thread.model_message import UPDATE_TOOL


@dataclass(frozen=True)
class RetryOutcome:
    """What a retry did: whether it saved (`failed` False; the pending change is gone), the notes people read,
    and why it failed again (the problem, as the tool answer told the model)."""

    failed: bool
    notes: list[str]
    answer: str


def retry_pending(
    store: BaseStore,
    graph_runtime: GraphRuntime,
    chat_model: ChatModelFactory,
    user_id: str,
    pending: PendingChange,
    model: str | None = None,
) -> RetryOutcome:
    """Retry the user's `pending` change through its kind's update node (one of `graph_runtime`'s kinds, else
    `UnknownKindError`), with `chat_model`'s model (`model`, when given, names it) on `store`."""
    kind = kind_named(graph_runtime.kinds, pending.kind)
    propose, report = update_steps(kind)
    node = partial(
        update_memory, chat_model=chat_model, kind=kind, graph_runtime=graph_runtime, propose=propose, report=report,
        retry=pending,
    )
    builder = StateGraph(State, context_schema=RunContext)
    builder.add_node(kind.node, node)
    builder.add_edge(START, kind.node)
    builder.add_edge(kind.node, END)
    call = {"name": UPDATE_TOOL, "args": {"update_type": kind.update_type}, "id": f"retry-{pending.id}"}
    messages = [
        HumanMessage(pending.message, id=f"pending-{pending.id}"),
        AIMessage("", id=f"retry-{pending.id}", tool_calls=[call]),
    ]
    configurable = {"user_id": user_id, "thread_id": pending.thread_id, **({"model": model} if model else {})}
    result = builder.compile(store=store).invoke({"messages": messages}, {"configurable": configurable})
    answer = next(message for message in result["messages"] if isinstance(message, ToolMessage))
    failed = answer.status == "error"
    return RetryOutcome(failed, change_notes(answer.artifact, [kind]), answer.text)
