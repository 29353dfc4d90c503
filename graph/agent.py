"""The task_mAIstro graph, as drawn in DESIGN.md.

    START → task_maistro ──(no tool call)──→ END
                │ UpdateMemory(update_type=user|todo|instructions)
                ├──→ update_profile ──────┐
                ├──→ update_todos ────────┼──→ task_maistro
                └──→ update_instructions ─┘

`graph` (named in langgraph.json) is compiled without checkpointer or store: `langgraph dev` and the
LangGraph Platform supply both. Python users call `graph.build_graph()` for the durable SQLite version.
"""

from functools import partial

from langgraph.graph import END, START, StateGraph

from graph.chat import task_maistro
from graph.configuration import Configuration
from graph.instructions import update_instructions
from graph.model import ChatModelFactory, load_chat_model
from graph.profile import update_profile
from graph.routing import route_message
from graph.state import State
from graph.todos import update_todos

UPDATE_NODES = {
    "update_profile": update_profile,
    "update_todos": update_todos,
    "update_instructions": update_instructions,
}


def create_builder(chat_model: ChatModelFactory = load_chat_model) -> StateGraph:
    """The uncompiled graph; `chat_model` turns a run's settings into the chat model every node uses."""
    builder = StateGraph(State, context_schema=Configuration)
    builder.add_node("task_maistro", partial(task_maistro, chat_model=chat_model))
    for name, node in UPDATE_NODES.items():
        builder.add_node(name, partial(node, chat_model=chat_model))
        builder.add_edge(name, "task_maistro")
    builder.add_edge(START, "task_maistro")
    builder.add_conditional_edges("task_maistro", route_message, [*UPDATE_NODES, END])
    return builder


graph = create_builder().compile(name="task_maistro")
