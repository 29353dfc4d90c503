"""Run scripted turns against a data directory in a separate process: `python -m tests.scripted_session DIR USER THREAD N`.

Each turn says "Remind me: <USER> task <i>" and the model adds that ToDo through the real graph, trustcall
and SQLite store. The replies derive from the prompt, so any number of threads can share one model.
"""

import sys

from langchain_core.messages import HumanMessage

from graph import build_graph
from graph.scripted_model import ScriptedChatModel, calls, route, say, todo

REQUEST = "Remind me: "


def _chat(messages, tools):
    return route("todo") if messages[-1].type == "human" else say("Added.")


def _extract(messages, tools):
    request = next(m.text for m in reversed(messages) if m.type == "human")
    return calls(todo(request.rsplit(REQUEST, 1)[-1], solutions=["Just do it"]))


def task_keeper() -> ScriptedChatModel:
    """A scripted model that files every "Remind me: X" as the ToDo X."""
    return ScriptedChatModel(standing={"task_maistro": _chat, "update_todos": _extract})


def run_turns(agent, user_id: str, thread_id: str, count: int) -> None:
    """Play `count` turns that each add the ToDo "<user_id> task <i>"."""
    for index in range(count):
        agent.invoke(
            {"messages": [HumanMessage(f"{REQUEST}{user_id} task {index}")]},
            {"configurable": {"thread_id": thread_id, "user_id": user_id}},
        )


def main(data_dir: str, user_id: str, thread_id: str, count: str) -> None:
    """Entry point for the subprocess."""
    model = task_keeper()
    run_turns(build_graph(data_dir, chat_model=lambda _settings: model), user_id, thread_id, int(count))
    print("ok")


if __name__ == "__main__":
    main(*sys.argv[1:])
