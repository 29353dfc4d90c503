"""A short real conversation with SmolLM2-135M through `graph.stream` and through `maistro chat`: introduce, add
ToDos, complete one, recall on a new thread, restart. What the model says, saves or forgets is its own affair; what
is held here is the agent's part: no exception reaches the caller, every turn is answered, no tool call is left
unanswered (a thread a strict server would refuse: wedged), nothing is stored twice, every failed update is told,
and the thread goes on after a restart."""

import subprocess
import sys
from collections.abc import Sequence

from langchain_core.messages import HumanMessage, ToolMessage

from graph import build_graph, close_graph
from graph.memory.admin import last_thread, user_threads
from graph.nodes.update import MEMORY_UPDATE_EVENT
from testing.helpers import config
from testing.langgraph_server import ROOT
from testing.thread_checks import doubled_todos, turns_without_reply, unanswered_calls

FIRST_THREAD = (
    "Hi, I'm Lance and I live in San Francisco.",
    "Please add two ToDos: book swim lessons for Sam, and buy milk.",
    "I bought the milk, so that one is done.",
)
NEW_THREAD = ("What is on my ToDo list?",)
AFTER_RESTART = ("Thanks. Which of them is still open?",)
CHAT_PROCESS_TIMEOUT_SECONDS = 1800


def assert_thread_sound(agent, thread_id: str, said: Sequence[str]) -> None:
    """Every message the user said is in the thread and answered, no call is left unanswered, nothing is doubled."""
    messages = agent.get_state(config(thread_id=thread_id)).values["messages"]
    assert [m.text for m in messages if isinstance(m, HumanMessage)] == list(said), "every user message is kept"
    assert turns_without_reply(messages) == [], "every turn is answered"
    assert unanswered_calls(messages) == [], "no tool call is left unanswered"
    assert doubled_todos(agent.store, "Lance") == [], "nothing is stored twice"


def streamed_turn(agent, text: str, thread_id: str) -> None:
    """One turn through `graph.stream` as a caller runs it: it must not raise, and every failed update is told."""
    messages, failed_notes = [], []
    for mode, payload in agent.stream(
        {"messages": [HumanMessage(text)]}, config(thread_id=thread_id), stream_mode=["values", "custom"]
    ):
        if mode == "values":
            messages = payload["messages"]
        elif isinstance(payload, dict) and MEMORY_UPDATE_EVENT in payload and payload[MEMORY_UPDATE_EVENT].get("failed"):
            failed_notes += payload[MEMORY_UPDATE_EVENT].get("notes", [])
    turn = messages[max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage)) :]
    failed = [m for m in turn if isinstance(m, ToolMessage) and m.status == "error"]
    assert not failed or failed_notes, f"a failed update was not told: {[m.content for m in failed]}"


def test_a_real_model_conversation_through_graph_stream_keeps_the_agent_sound(real_model, tmp_path):
    agent = build_graph(tmp_path / "data")
    try:
        for text in FIRST_THREAD:
            streamed_turn(agent, text, "first")
        assert_thread_sound(agent, "first", FIRST_THREAD)
        for text in NEW_THREAD:
            streamed_turn(agent, text, "second")
        assert_thread_sound(agent, "second", NEW_THREAD)
    finally:
        close_graph(agent)

    restarted = build_graph(tmp_path / "data")
    try:
        for text in AFTER_RESTART:
            streamed_turn(restarted, text, "second")
        assert_thread_sound(restarted, "second", NEW_THREAD + AFTER_RESTART)
    finally:
        close_graph(restarted)


def chat_process(data_dir: str, *lines: str, thread: str | None = None) -> subprocess.CompletedProcess:
    """`maistro chat` as a user pipes messages to it, one per line."""
    arguments = ["--user", "Lance", "--data-dir", data_dir, *(["--thread", thread] if thread else [])]
    return subprocess.run(
        [sys.executable, "-m", "graph.app.cli", "chat", *arguments],
        input="".join(f"{line}\n" for line in lines),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=CHAT_PROCESS_TIMEOUT_SECONDS,
    )


def test_a_real_model_conversation_through_maistro_chat_answers_every_message_and_survives_a_restart(real_model, tmp_path):
    data_dir = str(tmp_path / "data")

    first = chat_process(data_dir, *FIRST_THREAD)
    assert first.returncode == 0 and "Traceback" not in first.stderr, first.stderr
    second = chat_process(data_dir, *NEW_THREAD, thread="recall")
    assert second.returncode == 0 and "Traceback" not in second.stderr, second.stderr
    restarted = chat_process(data_dir, *AFTER_RESTART)
    assert restarted.returncode == 0 and "Traceback" not in restarted.stderr, restarted.stderr

    agent = build_graph(data_dir)
    try:
        first_thread = next(thread for thread in user_threads(agent.checkpointer, "Lance") if thread != "recall")
        assert last_thread(agent.checkpointer, "Lance") == "recall", "the restarted chat went on with the last thread"
        assert_thread_sound(agent, first_thread, FIRST_THREAD)
        assert_thread_sound(agent, "recall", NEW_THREAD + AFTER_RESTART)
    finally:
        close_graph(agent)
