"""The graph state: the thread's messages (short-term memory) and LangGraph's step budget."""

from langgraph.graph import MessagesState
from langgraph.managed import RemainingSteps


class State(MessagesState):
    """Messages of the thread; `remaining_steps` lets the chat node stop routing before the recursion limit."""

    remaining_steps: RemainingSteps
