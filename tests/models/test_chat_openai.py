"""End to end through the real ChatOpenAI client against a local OpenAI-compatible stub server."""

import pytest
from langchain_core.messages import AIMessageChunk, HumanMessage

from graph import build_graph
from graph.backends.model import ModelUnavailableError
from testing.helpers import config, profile_of, todos
from testing.openai_stub import StubError, text_reply, tool_calls_reply
from testing.stub_script import kind_of, update


@pytest.fixture
def agent(stub, tmp_path):
    return build_graph(tmp_path)


def test_two_memories_and_recall_through_chat_openai(agent, stub, script):
    script.add("chat", update("user", "todo"), text_reply("Nice to meet you, Lance! I added the swim lessons."))
    script.add("profile", tool_calls_reply(("Profile", {"name": "Lance", "location": "San Francisco"})))
    script.add("todo", tool_calls_reply(("ToDo", {"task": "Book swim lessons", "solutions": ["SF swim schools"]})))

    agent.invoke({"messages": [HumanMessage("I'm Lance from SF and need to book swim lessons.")]}, config())

    assert profile_of(agent)["location"] == "San Francisco"
    assert list(todos(agent)) == ["Book swim lessons"]
    assert all(request["model"] == "gpt-stub" and request["temperature"] == 0 for request in stub.requests)
    assert script.seen.count("chat") == 2

    script.add("chat", text_reply("You need to book swim lessons."))
    agent.invoke({"messages": [HumanMessage("What's on my list?")]}, config(thread_id="2"))
    last_prompt = stub.requests[-1]["messages"]
    assert "Book swim lessons" in last_prompt[1]["content"], "the context block right before the message"
    assert [m["role"] for m in last_prompt] == ["system", "system", "user"]


def test_reply_streams_token_by_token_and_extraction_stays_quiet(agent, stub, script):
    script.add("chat", update("todo"), text_reply("I added the dentist appointment to your ToDo list."))
    script.add("todo", tool_calls_reply(("ToDo", {"task": "Book a dentist", "solutions": ["Call Dr. Lee"]})))

    chunks = [
        (message, metadata)
        for message, metadata in agent.stream(
            {"messages": [HumanMessage("I need to book a dentist.")]}, config(), stream_mode="messages"
        )
        if isinstance(message, AIMessageChunk)
    ]

    texts = [m.content for m, meta in chunks if meta["langgraph_node"] == "task_maistro" and m.content]
    assert len(texts) > 3 and "".join(texts) == "I added the dentist appointment to your ToDo list."
    assert all(meta["langgraph_node"] == "task_maistro" for _, meta in chunks)
    assert all(request.get("stream") for request in stub.requests if kind_of(request) == "chat")


def test_thread_recovers_after_a_turn_that_died_mid_update(agent, stub, script):
    script.add("chat", update("todo"))
    script.add("todo", *[StubError(500, "upstream exploded")] * 3)
    with pytest.raises(ModelUnavailableError, match="HTTP 500"):
        agent.invoke({"messages": [HumanMessage("Remind me to water the plants.")]}, config())

    script.add("todo", tool_calls_reply(("ToDo", {"task": "Water the plants", "solutions": ["Use the blue can"]})))
    script.add("chat", text_reply("Hello! I saved the plants too."))
    result = agent.invoke({"messages": [HumanMessage("Hello?")]}, config())

    assert result["messages"][-1].content == "Hello! I saved the plants too."
    extraction, chat = stub.requests[-2:]
    assert [m["role"] for m in extraction["messages"]] == ["system", "user"]
    assert extraction["messages"][1]["content"] == "Remind me to water the plants."
    assert [m["role"] for m in chat["messages"]] == ["system", "user", "assistant", "tool", "system", "user"]
    assert list(todos(agent)) == ["Water the plants"]

