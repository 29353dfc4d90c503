"""The graph state: the thread's messages (short-term memory) and LangGraph's step budget."""

from langgraph.graph import MessagesState
from langgraph.managed import RemainingSteps


class State(MessagesState):
    """The thread's recent messages and the summary of older ones.

    `remaining_steps` lets the chat node stop routing before the recursion limit.
    """

    summary: str
    remaining_steps: RemainingSteps
