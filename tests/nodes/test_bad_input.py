"""Bad input gets a clear outcome and loses nothing: empty and huge messages, an endpoint that fails or hangs."""

import time

import pytest
from langchain_core.messages import HumanMessage

from graph import build_graph
from graph.backends.model import ModelUnavailableError
from graph.text_tokens import count_text_tokens
from graph.thread.tokens import MAX_MESSAGE_TOKENS
from prompts import EMPTY_MESSAGE_REPLY
from testing.helpers import config, todos, turn
from testing.openai_stub import StubError, text_reply, tool_calls_reply
from testing.scripted_model import calls, route, say, todo
from testing.stub_script import update


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_an_empty_message_is_answered_without_a_model(text, tmp_path):
    agent = build_graph(tmp_path)

    thread = turn(agent, text)

    assert [m.type for m in thread] == ["human", "ai"]
    assert thread[0].content == text and thread[1].content == EMPTY_MESSAGE_REPLY


def test_a_100_kb_message_is_cut_for_the_model_and_the_user_is_told(agent, model):
    huge = "Plan my week: " + "buy groceries, call the plumber, renew the car insurance; " * 1800
    assert len(huge.encode()) > 100_000
    model.add("task_maistro", route("todo"), say("Added your plan."))
    model.add("update_todos", calls(todo("Plan the week", solutions=["Groceries first"])))

    thread = turn(agent, huge)

    assert thread[0].content == huge, "the thread keeps the whole message"
    for call in model.calls:
        sent = next(m for m in call.messages if m.type == "human")
        assert count_text_tokens(sent.text) <= MAX_MESSAGE_TOKENS
    assert thread[-1].content.startswith(f"(Your message was {len(huge):,} characters long; I read only the first")
    assert thread[-1].content.endswith("Added your plan.")
    assert list(todos(agent)) == ["Plan the week"]


def test_a_failing_endpoint_is_a_clear_error_and_the_message_can_be_retried(stub, script, tmp_path, monkeypatch):
    agent = build_graph(tmp_path)
    script.add("chat", *[StubError(500, "overloaded")] * 3)

    with pytest.raises(ModelUnavailableError, match=r"HTTP 500\), also after retrying.*send it again"):
        agent.invoke({"messages": [HumanMessage("Remind me to call mum")]}, config())
    assert len(stub.requests) == 3, "the client retried twice with backoff"
    assert [m.content for m in agent.get_state(config()).values["messages"]] == ["Remind me to call mum"]

    script.add("chat", update("todo"), text_reply("Added."))
    script.add("todo", tool_calls_reply(("ToDo", {"task": "Call mum", "solutions": ["Sunday"]})))
    result = agent.invoke(None, config())

    assert result["messages"][-1].content == "Added." and list(todos(agent)) == ["Call mum"]


def test_a_hanging_endpoint_times_out(stub, script, tmp_path, monkeypatch):
    monkeypatch.setenv("MAISTRO_MODEL_TIMEOUT", "0.5")
    script.add("chat", *[lambda request: time.sleep(2) or text_reply("too late")] * 3)
    agent = build_graph(tmp_path)

    with pytest.raises(ModelUnavailableError, match="timed out"):
        agent.invoke({"messages": [HumanMessage("Hello?")]}, config())


def test_an_endpoint_failing_during_a_patch_fails_fast(stub, script, tmp_path):
    agent = build_graph(tmp_path)
    script.add("chat", update("todo"), text_reply("Added."), update("todo"))
    script.add("todo", tool_calls_reply(("ToDo", {"task": "Water plants", "solutions": ["Blue can"]})))
    agent.invoke({"messages": [HumanMessage("Remind me to water the plants")]}, config())
    script.add("todo", *[StubError(503, "maintenance")] * 40)
    before = len(stub.requests)

    with pytest.raises(ModelUnavailableError, match="HTTP 503"):
        agent.invoke({"messages": [HumanMessage("Watered them")]}, config())

    assert len(stub.requests) - before == 1 + 3, "one chat call, then one extraction with the client's retries"
    assert todos(agent)["Water plants"]["status"] == "not started"
