"""Self-tests for the OpenAI stub server, driven by the real ChatOpenAI client."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field

from testing.openai_stub import (
    CutStream,
    Delayed,
    OpenAIStub,
    RawBody,
    StubError,
    calls_reply,
    json_reply,
    json_schema,
    raw_call,
    system_text,
    text_reply,
    tool_calls_reply,
    tool_names,
)


class GetWeather(BaseModel):
    """Get the current weather for a city."""

    city: str = Field(description="City name")


def make_llm(stub: OpenAIStub, **kwargs) -> ChatOpenAI:
    """Create a ChatOpenAI client pointed at the stub."""
    return ChatOpenAI(
        base_url=stub.base_url, api_key="test", model="gpt-test", temperature=0, **kwargs
    )


def call_stub(url: str, body: object | None = None) -> tuple[int, dict]:
    """GET ``url`` (or POST ``body`` as JSON) with urllib; return (status, parsed JSON)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.loads(error.read())


def test_plain_text_reply():
    with OpenAIStub(lambda request: text_reply("Hello from the stub.")) as stub:
        message = make_llm(stub).invoke("hi")

    assert isinstance(message, AIMessage)
    assert message.content == "Hello from the stub."
    assert message.tool_calls == []
    assert message.response_metadata["finish_reason"] == "stop"
    assert message.response_metadata["model_name"] == "gpt-test"
    assert message.usage_metadata["total_tokens"] > 0


def test_streamed_text_arrives_in_several_chunks():
    text = "Streaming works one word at a time."
    with OpenAIStub(lambda request: text_reply(text)) as stub:
        pieces = [chunk.content for chunk in make_llm(stub).stream("hi")]

    assert len([piece for piece in pieces if piece]) > 1
    assert "".join(pieces) == text
    assert stub.requests[0]["stream"] is True


def test_streamed_usage_when_requested():
    with OpenAIStub(lambda request: text_reply("Counted.")) as stub:
        chunks = list(make_llm(stub, stream_usage=True).stream("hi"))

    assert stub.requests[0]["stream_options"] == {"include_usage": True}
    total = chunks[0]
    for chunk in chunks[1:]:
        total += chunk
    assert total.content == "Counted."
    assert total.usage_metadata["total_tokens"] > 0


@pytest.mark.parametrize("streamed", [False, True], ids=["invoke", "stream"])
def test_tool_call_reply(streamed):
    reply = tool_calls_reply(("GetWeather", {"city": "Zürich"}, "call_weather"))
    with OpenAIStub(lambda request: reply) as stub:
        llm = make_llm(stub).bind_tools([GetWeather])
        if streamed:
            chunks = list(llm.stream("Weather in Zürich?"))
            message = chunks[0]
            for chunk in chunks[1:]:
                message += chunk
        else:
            message = llm.invoke("Weather in Zürich?")

    assert message.tool_calls == [
        {"name": "GetWeather", "args": {"city": "Zürich"}, "id": "call_weather", "type": "tool_call"}
    ]
    assert message.response_metadata["finish_reason"] == "tool_calls"
    assert tool_names(stub.requests[0]) == ["GetWeather"]


def test_several_tool_calls_with_generated_ids():
    reply = tool_calls_reply(("GetWeather", {"city": "Oslo"}), ("GetWeather", {"city": "Rome"}))
    with OpenAIStub(lambda request: reply) as stub:
        chunks = list(make_llm(stub).bind_tools([GetWeather]).stream("Oslo and Rome?"))
    message = chunks[0]
    for chunk in chunks[1:]:
        message += chunk

    assert [call["args"] for call in message.tool_calls] == [{"city": "Oslo"}, {"city": "Rome"}]
    ids = [call["id"] for call in message.tool_calls]
    assert all(call_id.startswith("call_") for call_id in ids)
    assert len(set(ids)) == 2


def test_unanswered_tool_call_is_rejected_without_calling_responder():
    calls: list[dict] = []

    def responder(request: dict) -> dict:
        calls.append(request)
        return text_reply("It is sunny.")

    asked = HumanMessage("Weather in Oslo?")
    tool_call = AIMessage(
        content="",
        tool_calls=[{"name": "GetWeather", "args": {"city": "Oslo"}, "id": "call_oslo"}],
    )
    with OpenAIStub(responder) as stub:
        llm = make_llm(stub).bind_tools([GetWeather])
        with pytest.raises(openai.BadRequestError) as excinfo:
            llm.invoke([asked, tool_call, HumanMessage("Well?")])
        assert calls == []

        answer = llm.invoke([asked, tool_call, ToolMessage("sunny", tool_call_id="call_oslo")])

    assert excinfo.value.status_code == 400
    assert "The following tool_call_ids did not have response messages: call_oslo" in str(
        excinfo.value
    )
    assert answer.content == "It is sunny."
    assert len(calls) == 1
    assert len(stub.requests) == 2
    [(rejected, problem)] = stub.rejections
    assert rejected["messages"][-1]["content"] == "Well?"
    assert "call_oslo" in problem


def test_orphan_tool_message_and_empty_messages_are_rejected():
    with OpenAIStub(lambda request: text_reply("unused")) as stub:
        url = f"{stub.base_url}/chat/completions"
        orphan = [
            {"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "call_x", "content": "?"},
        ]
        status, body = call_stub(url, {"model": "gpt-test", "messages": orphan})
        assert status == 400
        assert body["error"]["type"] == "invalid_request_error"
        assert "must be a response to a preceeding message with 'tool_calls'" in (
            body["error"]["message"]
        )

        assert call_stub(url, {"model": "gpt-test", "messages": []})[0] == 400
        assert call_stub(url, {"model": "gpt-test"})[0] == 400

    assert [body.get("messages") for body, _ in stub.rejections] == [orphan, [], None]


def test_stub_error_surfaces_as_internal_server_error():
    with OpenAIStub(lambda request: StubError(500, "boom")) as stub:
        with pytest.raises(openai.InternalServerError) as excinfo:
            make_llm(stub, max_retries=0).invoke("hi")

    assert excinfo.value.status_code == 500
    assert "boom" in str(excinfo.value)
    assert len(stub.requests) == 1


def test_stub_error_can_simulate_rate_limit():
    with OpenAIStub(lambda request: StubError(429, "slow down")) as stub:
        with pytest.raises(openai.RateLimitError):
            make_llm(stub, max_retries=0).invoke("hi")


def test_broken_responder_answers_500():
    with OpenAIStub(lambda request: "not a reply") as stub:
        with pytest.raises(openai.InternalServerError) as excinfo:
            make_llm(stub, max_retries=0).invoke("hi")

    assert "stub responder failed" in str(excinfo.value)


def test_requests_are_recorded_and_helpers_read_them():
    with OpenAIStub(lambda request: text_reply("ok")) as stub:
        llm = make_llm(stub)
        llm.invoke([SystemMessage("You are Maistro."), HumanMessage("first")])
        llm.bind_tools([GetWeather]).invoke("second")

    first, second = stub.requests
    assert first["model"] == "gpt-test"
    assert [message["role"] for message in first["messages"]] == ["system", "user"]
    assert system_text(first) == "You are Maistro."
    assert tool_names(first) == []
    assert system_text(second) == ""
    assert tool_names(second) == ["GetWeather"]



def test_a_responder_can_wait_for_a_request_still_in_flight():
    met: list[bool] = []

    def responder(request: dict) -> dict:
        said = request["messages"][-1]["content"]
        if said == "first":
            met.append(stub.wait_for_request(lambda body: body["messages"][-1]["content"] == "second", 30))
        return text_reply(f"re: {said}")

    with OpenAIStub(responder) as stub:
        llm = make_llm(stub)
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(llm.invoke, "first")
            assert stub.wait_for_request(lambda body: body["messages"][-1]["content"] == "first", 30)
            second = pool.submit(llm.invoke, "second")
            assert [first.result().content, second.result().content] == ["re: first", "re: second"]
        alone = stub.wait_for_request(lambda body: body["messages"][-1]["content"] == "third", 0)

    assert met == [True], "the first answer waited until the second request had arrived"
    assert alone is False, "no such request came"


def test_system_text_reads_developer_messages_and_content_parts():
    request = {
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "developer",
                "content": [{"type": "text", "text": "Be "}, {"type": "text", "text": "brief."}],
            },
        ]
    }
    assert system_text(request) == "Be brief."


def test_unknown_paths_models_and_lifecycle():
    stub = OpenAIStub(lambda request: text_reply("ok"))
    with pytest.raises(RuntimeError):
        stub.base_url
    with stub:
        status, models = call_stub(f"{stub.base_url}/models")
        assert (status, models["object"]) == (200, "list")
        assert call_stub(f"{stub.base_url}/nowhere")[0] == 404
        status, body = call_stub(f"{stub.base_url}/responses", {})
        assert status == 404
        assert body["error"]["message"] == "Invalid URL (POST /v1/responses)"
    stub.stop()
    assert stub.requests == []


def test_an_assistant_call_without_an_id_is_rejected():
    with OpenAIStub(lambda request: text_reply("unused")) as stub:
        url = f"{stub.base_url}/chat/completions"
        for call_id in (None, ""):
            call = {"type": "function", "function": {"name": "GetWeather", "arguments": "{}"}}
            if call_id is not None:
                call["id"] = call_id
            messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [call]}]
            status, body = call_stub(url, {"model": "gpt-test", "messages": messages})
            assert status == 400
            assert body["error"]["message"] == "Missing required parameter: 'messages[1].tool_calls[0].id'."


def test_replies_may_carry_the_faults_of_real_models():
    replies = iter(
        [
            calls_reply(raw_call("GetWeather", "{'city': 'Oslo',}", None), content="Checking."),
            RawBody("<html>502 Bad Gateway</html>"),
            CutStream(text_reply("It is sunny in Oslo today."), after=2),
            Delayed(text_reply("Late."), 0.5),
        ]
    )
    with OpenAIStub(lambda request: next(replies)) as stub:
        llm = make_llm(stub, max_retries=0)
        malformed = llm.invoke("Weather in Oslo?")
        with pytest.raises(json.JSONDecodeError):
            llm.invoke("Again?")
        with pytest.raises(openai.APIConnectionError):
            list(llm.stream("And now?"))
        with pytest.raises(openai.APITimeoutError):
            make_llm(stub, max_retries=0, timeout=0.2).invoke("Slowly?")

    assert malformed.content == "Checking." and malformed.tool_calls == []
    assert [(call["name"], call["id"]) for call in malformed.invalid_tool_calls] == [("GetWeather", None)]


NOTE_FORMAT = {
    "type": "json_schema",
    "json_schema": {
        "name": "Note",
        "schema": {"type": "object", "properties": {"text": {"type": "string", "maxLength": 5}}, "required": ["text"]},
    },
}


def test_a_json_reply_answers_a_json_schema_request_when_it_fits_the_schema():
    with OpenAIStub(lambda request: json_reply({"text": "ping"})) as stub:
        message = make_llm(stub).invoke("hi", extra_body={"response_format": NOTE_FORMAT})

    assert json.loads(message.content) == {"text": "ping"}
    assert json_schema(stub.requests[0])["name"] == "Note"


def test_a_json_reply_that_does_not_fit_the_schema_is_the_scripts_mistake():
    with OpenAIStub(lambda request: json_reply({"text": "far too long"})) as stub:
        with pytest.raises(openai.InternalServerError, match="far too long"):
            make_llm(stub, max_retries=0).invoke("hi", extra_body={"response_format": NOTE_FORMAT})


def test_a_model_without_tool_calling_never_sees_the_tools_and_cannot_call_them():
    seen = []

    def responder(request):
        seen.append(request)
        return text_reply("I will check the weather.") if len(seen) == 1 else tool_calls_reply(("GetWeather", {"city": "Oslo"}))

    with OpenAIStub(responder, tool_calling=False) as stub:
        llm = make_llm(stub, max_retries=0).bind_tools([GetWeather], tool_choice="required")
        assert llm.invoke("Weather in Oslo?").tool_calls == []
        with pytest.raises(openai.InternalServerError, match="without tool calling"):
            llm.invoke("Weather in Oslo?")

    assert "tools" not in seen[0] and "tool_choice" not in seen[0]
    assert tool_names(stub.requests[0]) == ["GetWeather"]
