"""Run scripted turns in a separate process: `python -m testing.scripted_session TARGET TURNS USER [USER ...]`.

TARGET is a data directory or a postgresql:// URL. Each user plays TURNS turns at the same time as the
others (one thread per user, thread id "<USER>-thread"); turn i says "Remind me: <USER> task <i>" and the
model adds that ToDo through the real graph, trustcall and store. The replies derive from the prompt, so
any number of threads can share one model.
"""

import sys
from concurrent.futures import ThreadPoolExecutor

from langchain_core.messages import HumanMessage

from graph import build_graph
from graph.names import AGENT_NAME
from testing.scripted_model import ScriptedChatModel, calls, route, say, todo

REQUEST = "Remind me: "


def _chat(messages, tools):
    return route("todo") if messages[-1].type == "human" else say("Added.")


def _extract(messages, tools):
    request = next(m.text for m in reversed(messages) if m.type == "human")
    return calls(todo(request.rsplit(REQUEST, 1)[-1], solutions=["Just do it"]))


def task_keeper() -> ScriptedChatModel:
    """A scripted model that files every "Remind me: X" as the ToDo X."""
    return ScriptedChatModel(standing={AGENT_NAME: _chat, "update_todos": _extract})


def run_turns(agent, user_id: str, count: int) -> None:
    """Play `count` turns on the thread "<user_id>-thread" that each add the ToDo "<user_id> task <i>"."""
    for index in range(count):
        agent.invoke(
            {"messages": [HumanMessage(f"{REQUEST}{user_id} task {index}")]},
            {"configurable": {"thread_id": f"{user_id}-thread", "user_id": user_id}},
        )


def run_users(agent, users: list[str], count: int) -> None:
    """Play every user's turns at the same time, one thread per user."""
    with ThreadPoolExecutor(max_workers=len(users)) as pool:
        list(pool.map(lambda user: run_turns(agent, user, count), users))


def main(target: str, count: str, *users: str) -> None:
    """Entry point for the subprocess."""
    model = task_keeper()
    is_url = target.startswith("postgres")
    agent = build_graph(
        None if is_url else target, database_url=target if is_url else None, chat_model=lambda _settings: model
    )
    run_users(agent, list(users), int(count))
    print("ok")


if __name__ == "__main__":
    main(*sys.argv[1:])
