"""The graph state: the thread's messages (short-term memory) and LangGraph's step budget; and what a run takes."""

from langgraph.graph import MessagesState
from langgraph.managed import RemainingSteps


class InputState(MessagesState):
    """What a caller sends: the user's message, in plain language.

    The agent files what it learns under the caller's user (their profile, ToDo list and instructions for
    writing ToDos), keeps it across conversations, and answers with what it knows.
    """


class State(InputState):
    """The thread's recent messages and the summary of older ones.

    `remaining_steps` lets the chat node stop routing before the recursion limit. `resumed_calls` counts
    how often the graph re-ran the calls of a turn cut short (the routing message's id, then the count),
    so calls whose update fails every time are given up on instead of holding up every later message.
    """

    summary: str
    remaining_steps: RemainingSteps
    resumed_calls: list
