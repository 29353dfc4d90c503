"""MAISTRO_CALL_MODE=json end to end: the real ChatOpenAI client against a stub that plays a model without tool
syntax (llama.cpp's for SmolLM2 and Gemma), through `graph.stream` and the store."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from graph import build_graph
from graph.backends.json_calls import LIST_ITEMS, STRING_CHARS, answer_tokens
from testing.helpers import config, instructions_of, profile_of, todos, turn
from testing.openai_stub import OpenAIStub, json_reply, json_schema, text_reply
from testing.stub_script import route

ROOT = Path(__file__).resolve().parents[2]
PROFILE_NEWS = {"name": None, "location": None, "job": None, "connections": [], "interests": [], "timezone": None}


@pytest.fixture
def plain_stub(script, monkeypatch):
    """An endpoint whose model has no tool calling, set as OPENAI_BASE_URL, in JSON mode."""
    with OpenAIStub(script, tool_calling=False) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("MAISTRO_MODEL", "smollm2")
        monkeypatch.setenv("MAISTRO_CALL_MODE", "json")
        yield server


@pytest.fixture
def agent(plain_stub, tmp_path):
    return build_graph(tmp_path)


def walk(schema):
    """Every sub-schema of a JSON schema."""
    yield schema
    for value in schema.values():
        for child in value if isinstance(value, list) else value.values() if isinstance(value, dict) else []:
            if isinstance(child, dict):
                yield from walk(child)


def assert_bounded(schema: dict) -> None:
    for node in walk(schema):
        kinds = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
        if "string" in kinds and "enum" not in node:
            assert 0 < node["maxLength"] <= STRING_CHARS, node
        if "array" in kinds:
            assert 0 < node["maxItems"] <= LIST_ITEMS, node
        if "object" in kinds and "properties" in node:
            assert node["additionalProperties"] is False, node


def test_a_model_without_tool_calls_saves_a_profile_and_todos(agent, plain_stub, script):
    script.add("route", route("user"))
    script.add("chat", text_reply("Nice to meet you, Lance!"))
    script.add("profile", json_reply({**PROFILE_NEWS, "name": "Lance", "location": "San Francisco, California"}))

    thread = turn(agent, "My name is Lance and I live in San Francisco.")

    assert profile_of(agent) == {**PROFILE_NEWS, "name": "Lance", "location": "San Francisco, California"}
    routing = next(message for message in thread if isinstance(message, AIMessage) and message.tool_calls)
    assert [(call["name"], call["args"]) for call in routing.tool_calls] == [("UpdateMemory", {"update_type": "user"})]
    answer = next(message for message in thread if isinstance(message, ToolMessage))
    assert answer.tool_call_id == routing.tool_calls[0]["id"] and answer.status == "success"
    assert thread[-1].content == "Nice to meet you, Lance!"

    script.add("route", route("todo"))
    script.add("chat", text_reply("I added the swim lessons."))
    script.add("todo", json_reply({"new": [{"task": "Book swim lessons for my son", "solutions": ["Call the pool"]}]}))
    turn(agent, "I need to book swim lessons for my son.")
    assert todos(agent)["Book swim lessons for my son"]["status"] == "not started"

    script.add("route", route("todo"))
    script.add("chat", text_reply("Well done!"))
    script.add("todo", json_reply({"new": [], "changed": [{"item": "1", "status": "done"}], "removed": []}))
    turn(agent, "I booked the swim lessons.")
    assert todos(agent)["Book swim lessons for my son"]["status"] == "done"

    assert script.remaining() == {}
    assert not any("tools" in request for request in plain_stub.requests)
    schemas = [json_schema(request) for request in plain_stub.requests if json_schema(request)]
    assert [schema["name"] for schema in schemas] == ["UpdateMemory", "Profile", "UpdateMemory", "ToDo", "UpdateMemory", "ToDo"]
    for schema in schemas:
        assert_bounded(schema["schema"])
    json_requests = [request for request in plain_stub.requests if json_schema(request)]
    assert all(r["max_completion_tokens"] == answer_tokens(json_schema(r)["schema"]) for r in json_requests)


def test_what_the_user_did_not_say_is_not_stored(agent, plain_stub, script):
    script.add("route", route("user", "todo"))
    script.add("chat", text_reply("Hello! I saved a task."), text_reply("Hello! How can I help?"))
    script.add("profile", json_reply({**PROFILE_NEWS, "name": "Mike", "location": "New York City", "interests": ["chess"]}))
    script.add("todo", json_reply({"new": [{"task": "Buy a birthday present for Anna", "solutions": ["Bookshop"]}]}))

    thread = turn(agent, "Hi there! How are you?")

    assert profile_of(agent) is None
    assert todos(agent) == {}
    notes = [message.content for message in thread if isinstance(message, ToolMessage)]
    assert notes == ["No profile changes were needed.", "No changes were made to the ToDo list."]
    assert thread[-1].content == "Hello! How can I help?"
    assert script.seen.count("route") == 1


def test_the_routing_question_is_the_latest_message_alone_with_the_kinds_examples(agent, plain_stub, script):
    script.add("route", route())
    script.add("chat", text_reply("Hello!"))

    turn(agent, "Hello!")

    routing = next(request for request in plain_stub.requests if json_schema(request))
    assert [message["role"] for message in routing["messages"]] == ["system", "user"]
    assert routing["messages"][1]["content"] == "Hello!"
    assert json_schema(routing)["schema"]["properties"] == {
        "user": {"enum": ["yes", "no"]}, "todo": {"enum": ["yes", "no"]}, "instructions": {"enum": ["yes", "no"]}
    }
    system = routing["messages"][0]["content"]
    assert '- "user": personal information about the user' in system
    assert 'Message: Always write my ToDos in Spanish.\nAnswer: {"user": "no", "todo": "no", "instructions": "yes"}' in system


def test_an_answer_that_is_not_json_for_the_schema_is_told_and_changes_nothing(agent, plain_stub, script):
    script.add("route", text_reply("Sure! I will remember that."))
    script.add("chat", text_reply("Nice to meet you, I saved your name."), text_reply("Sorry, I could not save that."))

    thread = turn(agent, "My name is Lance.")

    assert profile_of(agent) is None
    refusals = [message for message in thread if isinstance(message, ToolMessage)]
    assert len(refusals) == 1 and refusals[0].status == "error"
    assert thread[-1].content == "Sorry, I could not save that."
    assert script.remaining() == {}


def test_a_profile_answer_that_breaks_the_schema_fails_the_update_and_says_so(agent, plain_stub, script):
    script.add("route", route("user"))
    script.add("chat", text_reply("Nice to meet you."), text_reply("Sorry, I could not save your name."))
    script.add("profile", text_reply('{"name": "Lance"'))

    thread = turn(agent, "My name is Lance.")

    assert profile_of(agent) is None
    answer = next(message for message in thread if isinstance(message, ToolMessage))
    assert answer.status == "error" and "malformed" in answer.content
    assert thread[-1].content == "Sorry, I could not save your name."


def test_a_list_the_user_gave_keeps_only_the_items_they_said(agent, plain_stub, script):
    script.add("route", route("user"))
    script.add("chat", text_reply("Climbing and chess, nice."))
    news = {**PROFILE_NEWS, "interests": ["rock climbing", "chess", "knitting", "skydiving"]}
    script.add("profile", json_reply(news))

    turn(agent, "I love rock climbing and chess.")

    assert profile_of(agent)["interests"] == ["rock climbing", "chess"]
    prompt = next(r for r in plain_stub.requests if (json_schema(r) or {}).get("name") == "Profile")["messages"][0]
    assert "Never invent a name" in prompt["content"] and json.dumps(PROFILE_NEWS)[:1] == "{"


def test_maistro_chat_on_a_model_without_tool_calls_saves_and_tells(plain_stub, script, monkeypatch, tmp_path):
    monkeypatch.setenv("MAISTRO_CALL_MODE", "auto")
    script.keep("precheck", text_reply("ping"))
    script.add("route", route("todo"), route("todo"))
    script.add("chat", text_reply("I added the swim lessons."), text_reply("Hi! I saved a task."), text_reply("Hi!"))
    script.add(
        "todo",
        json_reply({"new": [{"task": "Book swim lessons for my son", "solutions": ["Call the pool"]}]}),
        json_reply({"new": [{"task": "Buy flowers for Anna", "solutions": ["Florist"]}], "changed": [], "removed": []}),
    )

    done = subprocess.run(
        [sys.executable, "-m", "graph.app.cli", "chat", "--user", "Lance", "--data-dir", str(tmp_path)],
        input="I need to book swim lessons for my son.\nHi there!\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "I added the swim lessons.",
        "✎ ToDo added: Book swim lessons for my son",
        "Hi! I saved a task.",  # streamed beside the routing; the update that saved nothing has it answered again
        "Hi!",
    ]
    assert script.seen == ["precheck", "route", "chat", "todo", "route", "chat", "todo", "chat"]
    assert list(todos(build_graph(tmp_path))) == ["Book swim lessons for my son"]


def test_instructions_are_rewritten_only_with_what_the_user_said(agent, plain_stub, script):
    script.add("route", route("instructions"), route("instructions"))
    script.add("chat", text_reply("Hello!"), text_reply("Got it."))
    script.add("instructions", text_reply("Always add three emojis and a joke to every task."))
    script.add("instructions", text_reply("Write every ToDo in Spanish."))

    turn(agent, "Hello, how are you?")
    assert instructions_of(agent) is None

    turn(agent, "Please always write my ToDos in Spanish.")
    assert instructions_of(agent) == "Write every ToDo in Spanish."


@pytest.mark.parametrize("answer", ['["Lance"]', '{"name": "Lance"'], ids=["json of another shape", "cut short"])
def test_a_streamed_update_whose_answer_does_not_fit_fails_and_saves_nothing(agent, plain_stub, script, answer):
    script.add("route", route("user"))
    script.add("chat", text_reply("Nice to meet you."), text_reply("Sorry, I could not save your name."))
    script.add("profile", text_reply(answer))

    events = list(agent.stream({"messages": [HumanMessage("My name is Lance.")]}, config(), stream_mode=["messages", "custom"]))

    assert profile_of(agent) is None
    outcomes = [event["memory_update"] for mode, event in events if mode == "custom"]
    assert [(outcome["kind"], outcome["failed"]) for outcome in outcomes] == [("profile", True)]
    thread = agent.get_state(config()).values["messages"]
    assert thread[-1].content == "Sorry, I could not save your name."
