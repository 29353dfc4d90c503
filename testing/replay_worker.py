"""A process that dies right after an update commits: `python -m testing.replay_worker TARGET`.

TARGET is a data directory or a postgresql:// URL. The worker plays two turns on THREAD for USER with a
scripted model. The first adds WATER. The second (SECOND_MESSAGE) makes three changes in one update: it
creates SOIL and FERN and appends a solution to WATER (`second_update`); the process SIGKILLs itself as soon
as that update's store batch has committed, before the checkpoint records the update's answer.
"""

import os
import signal
import sys

from langchain_core.messages import HumanMessage
from langgraph.store.base import PutOp

from graph import build_graph
from graph.names import AGENT_NAME
from testing.scripted_model import ScriptedChatModel, add, calls, doc_id_of, patch, route, say, todo
from testing.stored_names import TODO

USER = "replay-user"
THREAD = "replay-thread"
CONFIG = {"configurable": {"thread_id": THREAD, "user_id": USER}}
WATER, SOIL, FERN, BARREL = "Water the plants", "Buy potting soil", "Repot the fern", "Rain barrel"
SECOND_MESSAGE = "Also buy potting soil and repot the fern, and a rain barrel would help with the watering."


def second_update(messages, _tools):
    """What a naive model extracts from SECOND_MESSAGE, whatever the list holds: both tasks, and the solution."""
    water = doc_id_of(messages, WATER)
    return calls(todo(SOIL, solutions=["Garden centre"]), todo(FERN, solutions=["Bigger pot"]), patch(water, add("/solutions/-", BARREL)))


def main(target: str) -> None:
    """Play the first turn, then the second until its ToDo batch commits, and die there."""
    model = ScriptedChatModel()
    model.add(AGENT_NAME, route("todo"), say("Added."), route("todo"))
    model.add("update_todos", calls(todo(WATER, solutions=["Blue can"])), second_update)
    is_url = target.startswith("postgres")
    agent = build_graph(
        None if is_url else target, database_url=target if is_url else None, chat_model=lambda _settings: model
    )
    agent.invoke({"messages": [HumanMessage("Remind me to water the plants.")]}, CONFIG)
    batch = agent.store.batch

    def batch_then_die(ops):
        results = batch(ops)
        if any(isinstance(op, PutOp) and op.namespace[0] == TODO for op in ops):
            os.kill(os.getpid(), signal.SIGKILL)
        return results

    agent.store.batch = batch_then_die
    agent.invoke({"messages": [HumanMessage(SECOND_MESSAGE)]}, CONFIG)


if __name__ == "__main__":
    main(sys.argv[1])
