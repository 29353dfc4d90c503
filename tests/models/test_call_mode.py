"""MAISTRO_CALL_MODE=auto: the pre-check decides once per endpoint and model whether tool calls are asked as such
or as JSON, through the real ChatOpenAI client against the strict stub."""

import pytest
from langchain_core.messages import AIMessage
from langchain_openai import ChatOpenAI

from graph import build_graph
from graph.backends import call_mode
from graph.backends.call_mode import endpoint_call_mode
from graph.backends.json_calls import JsonCallModel
from graph.backends.model import load_chat_model
from graph.run_context import RunContext
from graph.settings import SettingsError, current_settings
from testing.helpers import profile_of, turn
from testing.openai_stub import OpenAIStub, StubError, json_reply, text_reply, tool_calls_reply, tool_names
from testing.stub_script import route, update

PROFILE_NEWS = {"name": "Lance", "location": None, "job": None, "connections": [], "interests": [], "timezone": None}


def client(stub: OpenAIStub, model: str = "smollm2") -> ChatOpenAI:
    return ChatOpenAI(model=model, base_url=stub.base_url, api_key="test", temperature=0)


def endpoint(monkeypatch, stub: OpenAIStub, mode: str = "auto") -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("MAISTRO_MODEL", "smollm2")
    monkeypatch.setenv("MAISTRO_CALL_MODE", mode)


def test_a_model_that_answers_the_pre_check_in_text_gets_json_once_per_endpoint_and_model(script):
    script.keep("precheck", text_reply("ping"))
    with OpenAIStub(script, tool_calling=False) as stub:
        assert endpoint_call_mode(client(stub)) == "json"
        assert endpoint_call_mode(client(stub)) == "json"
        assert script.seen == ["precheck"]
        assert endpoint_call_mode(client(stub, "another-model")) == "json"
    assert script.seen == ["precheck", "precheck"]
    assert stub.requests[0]["tools"][0]["function"]["name"] == "SaveNote"


@pytest.mark.parametrize(
    "answer",
    [
        tool_calls_reply(("SaveNote", {"text": "ping"})),
        text_reply('<tool_call>{"name": "SaveNote", "arguments": {"text": "ping"}}</tool_call>'),
    ],
    ids=["native", "written as text"],
)
def test_a_model_that_calls_the_pre_check_tool_stays_on_tools(script, answer):
    script.keep("precheck", answer)
    with OpenAIStub(script) as stub:
        assert endpoint_call_mode(client(stub)) == "tools"


def test_an_endpoint_that_refuses_tools_gets_json(script):
    script.keep("precheck", StubError(400, "This model does not support tools."))
    with OpenAIStub(script) as stub:
        assert endpoint_call_mode(client(stub)) == "json"


def test_an_endpoint_that_does_not_answer_is_taken_at_its_tools_and_asked_again_later(script, monkeypatch):
    script.keep("precheck", StubError(503, "loading model"))
    with OpenAIStub(script) as stub:
        assert endpoint_call_mode(client(stub)) == "tools"
        assert endpoint_call_mode(client(stub)) == "tools"
        assert script.seen == ["precheck"] * 2  # one request and its one retry; the failure is remembered
    with OpenAIStub(script) as stub:
        monkeypatch.setattr(call_mode, "RECHECK_SECONDS", 0.0)
        assert endpoint_call_mode(client(stub)) == "tools"
        script.keep("precheck", text_reply("ping"))
        assert endpoint_call_mode(client(stub)) == "json"
        assert endpoint_call_mode(client(stub)) == "json"
    assert script.seen == ["precheck"] * 5


def test_the_factory_follows_the_setting(script, monkeypatch):
    script.keep("precheck", text_reply("ping"))
    with OpenAIStub(script, tool_calling=False) as stub:
        endpoint(monkeypatch, stub, "tools")
        assert isinstance(load_chat_model(RunContext()), ChatOpenAI)
        monkeypatch.setenv("MAISTRO_CALL_MODE", "json")
        assert isinstance(load_chat_model(RunContext()), JsonCallModel)
        assert script.seen == []
        monkeypatch.setenv("MAISTRO_CALL_MODE", "auto")
        model = load_chat_model(RunContext())
        assert isinstance(model, JsonCallModel) and model is load_chat_model(RunContext())
        assert script.seen == ["precheck"]


def test_an_unknown_call_mode_is_refused_in_one_sentence(monkeypatch):
    monkeypatch.setenv("MAISTRO_CALL_MODE", "functions")
    with pytest.raises(SettingsError, match=r"^MAISTRO_CALL_MODE='functions' is invalid: .*'auto', 'tools' or 'json'\.$"):
        current_settings()


def test_auto_switches_a_model_without_tool_calls_to_json_and_saves(script, monkeypatch, tmp_path):
    script.keep("precheck", text_reply("I cannot call tools, but: ping"))
    with OpenAIStub(script, tool_calling=False) as stub:
        endpoint(monkeypatch, stub)
        agent = build_graph(tmp_path)
        script.add("route", route("user"), route())
        script.add("chat", text_reply("Nice to meet you, Lance!"), text_reply("Hello again!"))
        script.add("profile", json_reply(PROFILE_NEWS))

        turn(agent, "My name is Lance.")
        turn(agent, "Hello!")

    assert profile_of(agent) == PROFILE_NEWS
    assert script.seen == ["precheck", "route", "chat", "profile", "route", "chat"]


def test_auto_keeps_a_tool_calling_model_on_tools(script, monkeypatch, tmp_path):
    script.keep("precheck", tool_calls_reply(("SaveNote", {"text": "ping"})))
    with OpenAIStub(script) as stub:
        endpoint(monkeypatch, stub)
        agent = build_graph(tmp_path)
        script.add("chat", update("user", content="Nice to meet you, Lance!"))
        script.add("profile", tool_calls_reply(("Profile", {"name": "Lance"})))

        thread = turn(agent, "My name is Lance.")

    assert profile_of(agent)["name"] == "Lance"
    assert script.seen == ["precheck", "chat", "profile"]
    assert tool_names(stub.requests[1]) == ["UpdateMemory", "Remind"]
    assert "response_format" not in stub.requests[1]
    assert isinstance(thread[-1], AIMessage) and thread[-1].content == "Nice to meet you, Lance!"
