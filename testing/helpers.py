"""Helpers shared by the tests: run configs and turns the tutorial's way, reads of the store, sample data."""

import socket

from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.store.base import PutOp

from graph.memory.admin import IMPORT_MESSAGE
from graph.memory.store import HISTORY, namespace, search_all
from testing.stored_names import INSTRUCTIONS, PROFILE, TODO


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ReservedPort:
    """A TCP port on 127.0.0.1 held for a server that is stopped, or not started yet.

    `free_port` only finds a port: left unbound while a test plays an outage, the port can be taken meanwhile by
    any socket on the machine (another test's server, or an outgoing connection's source port), and the server
    then fails to start again with "Address already in use". A reservation is a socket bound to the port that
    never listens: a connection to it is refused, as to a stopped server, no other socket gets the port, and a
    server that binds with SO_REUSEADDR (`http.server`'s servers do) still can, in this process or another.
    """

    def __init__(self) -> None:
        self._socket = socket.socket()
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.port: int = self._socket.getsockname()[1]

    def release(self) -> None:
        """Let the port go."""
        self._socket.close()

    def __enter__(self) -> "ReservedPort":
        """Hold the port for the duration of a `with` block."""
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Release it when the block ends."""
        self.release()


def config(user_id: str = "Lance", thread_id: str = "1", **extra) -> dict:
    """A run config as in the tutorial."""
    return {"configurable": {"thread_id": thread_id, "user_id": user_id, **extra}}


def turn(agent, text: str, user_id: str = "Lance", thread_id: str = "1", **extra) -> list[AnyMessage]:
    """Send one user message the tutorial's way (stream_mode="values") and return the thread afterwards."""
    chunks = list(
        agent.stream({"messages": [HumanMessage(content=text)]}, config(user_id, thread_id, **extra), stream_mode="values")
    )
    return chunks[-1]["messages"]


def before_import(exported: dict) -> dict:
    """An export without the history entries that an import recorded (one per document it created or replaced)."""
    history = {key: entry for key, entry in exported[HISTORY].items() if entry["message"] != IMPORT_MESSAGE}
    return {**exported, HISTORY: history}


def todos(agent, user_id: str = "Lance") -> dict[str, dict]:
    """The user's ToDo items, by task."""
    return {item.value["task"]: item.value for item in search_all(agent.store, namespace(TODO, user_id))}


def kept(store, user_id: str = "Lance") -> str:
    """What a failed update's note says of the pending change it left: the user's only one (`graph.memory.pending`)."""
    from graph.memory.pending import list_pending

    (pending,) = list_pending(store, user_id)
    return f" (kept as pending change {pending.id[:8]}, to retry or drop)"


def profile_of(agent, user_id: str = "Lance") -> dict | None:
    """The user's profile document."""
    items = search_all(agent.store, namespace(PROFILE, user_id))
    assert len(items) <= 1, "one profile document per user"
    return items[0].value if items else None


def instructions_of(agent, user_id: str = "Lance") -> str | None:
    """The user's instruction text."""
    item = agent.store.get(namespace(INSTRUCTIONS, user_id), "user_instructions")
    return item.value["memory"] if item else None


# A small set of memories written straight to the store (export, import, CLI tables).
SWIM_ITEM = {
    "task": "Book swim lessons",
    "time_to_complete": 30,
    "deadline": "2026-11-30T23:59:00-08:00",
    "solutions": ["La Petite Baleen"],
    "status": "not started",
}
LOCK_ITEM = {**SWIM_ITEM, "task": "Fix the Yale lock", "deadline": None, "status": "done"}
LANCE_PROFILE = {"name": "Lance", "location": "San Francisco", "job": None, "connections": ["Wife"], "interests": []}


def remember(store, user_id: str) -> None:
    """Write a profile, two ToDos (one done) and instructions for the user, straight to the store."""
    store.put(namespace(PROFILE, user_id), "user_profile", LANCE_PROFILE)
    store.put(namespace(TODO, user_id), "b-swim", SWIM_ITEM)
    store.put(namespace(TODO, user_id), "a-lock", LOCK_ITEM)
    store.put(namespace(INSTRUCTIONS, user_id), "user_instructions", {"memory": "Name local vendors."})


CHORES = ["Water the plants", "Pay the electricity bill", "Renew passport", "Call grandma", "Clean gutters"]


def fill(store, user_id: str, count: int, status: str = "not started") -> None:
    """Write `count` numbered chores for the user in one batch."""
    store.batch(
        [
            PutOp(namespace(TODO, user_id), f"item-{n:05d}", {
                "task": f"{CHORES[n % len(CHORES)]} (batch {n})", "time_to_complete": 15, "deadline": None,
                "solutions": ["Do it on Saturday"], "status": status,
            })
            for n in range(count)
        ]
    )


def chore(task: str) -> dict:
    """A ToDo document as the agent stores it: `task`, not started, nothing else filled in."""
    return {"task": task, "time_to_complete": 5, "deadline": None, "solutions": [], "status": "not started"}
