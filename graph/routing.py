"""Routing after the chat node: one branch per memory the model asked to update, or the end of the turn."""

from typing import Literal

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END

from graph.state import State
from graph.tool_calls import pending_update_calls

NODE_FOR_UPDATE_TYPE = {
    "user": "update_profile",
    "todo": "update_todos",
    "instructions": "update_instructions",
}
UpdateNode = Literal["update_profile", "update_todos", "update_instructions"]


def route_message(state: State, config: RunnableConfig) -> list[UpdateNode] | Literal["__end__"]:
    """Send the turn to every update node named by a pending UpdateMemory call (in parallel), else end."""
    update_types = {call["args"]["update_type"] for call in pending_update_calls(state["messages"])}
    return sorted(NODE_FOR_UPDATE_TYPE[kind] for kind in update_types) or END
