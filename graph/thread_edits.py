"""State updates that rewrite the checkpointed thread (dropping folded messages, inserting repairs)."""

from collections.abc import Sequence

from langchain_core.messages import AnyMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES


def thread_update(original: Sequence[AnyMessage], thread: Sequence[AnyMessage]) -> list[AnyMessage]:
    """Messages for the `add_messages` reducer that turn `original` into `thread`.

    A thread that is a tail of the original only needs removals; anything else is written out whole.
    """
    dropped = len(original) - len(thread)
    if dropped >= 0 and all(kept is same for kept, same in zip(original[dropped:], thread, strict=True)):
        return [RemoveMessage(id=message.id) for message in original[:dropped]]
    return [RemoveMessage(id=REMOVE_ALL_MESSAGES), *thread]
