"""bench.real_models' census without a model: how a raw answer is classed, what counts as invented, and what the
agent is said to have done with a turn."""

import httpx
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from bench.real_models import Census, JsonAnswer, ModelCall, agent_outcome, invented_values, sent_shape
from graph.eval.runner import TurnRecord
from graph.thread.turn_markers import first_marker


def answer(**fields) -> ModelCall:
    return ModelCall(node="task_maistro", user="I need to buy milk.", offered_tools=True, json_mode=False, **fields)


def test_each_raw_answer_is_classed_by_its_form():
    assert sent_shape(answer(native_calls=1)) == "native tool call"
    assert sent_shape(ModelCall("task_maistro", "I need milk.", True, True, native_calls=1)) == "calls asked as JSON"
    assert sent_shape(answer(content='{"update_type": "todo"}')) == "JSON"
    assert sent_shape(answer(content='Sure! <tool_call>{"name": "UpdateMemory"}</tool_call>')) == "call written as text"
    assert sent_shape(answer(content="I'll call update_memory with update_type todo.")) == "call written as text"
    assert sent_shape(answer(content="Milk is on your list.")) == "plain reply"
    assert sent_shape(answer(content="  ")) == "empty reply"
    assert sent_shape(answer(error="APITimeoutError: timed out")) == "request failed"


def test_a_stored_value_is_invented_when_the_user_said_none_of_its_words():
    memory = {"profile": {"name": "Mike", "location": "New York City", "interests": ["swimming lessons"]},
              "todos": [{"task": "Buy milk"}]}

    said = "hi there, i need to buy some milk and book swimming lessons."

    assert invented_values(memory, said) == ["Mike", "New York City"]


def record(**fields) -> TurnRecord:
    return TurnRecord(0, "I need to buy milk.", **fields)


def test_a_memory_turn_that_saved_nothing_and_said_nothing_is_counted_as_such():
    before = {"profile": None, "todos": [], "instructions": ""}
    thread = [HumanMessage("I need to buy milk."), AIMessage("Milk is great.")]

    assert agent_outcome(record(reply="Milk is great."), before, before, thread, 0, 0, asked=True) == ["not saved, not told"]
    assert agent_outcome(record(reply="Milk is great."), before, before, thread, 0, 0, asked=False) == []


def test_saved_told_wedged_raised_and_doubled_are_each_reported():
    before = {"profile": None, "todos": [], "instructions": ""}
    after = {**before, "todos": [{"task": "Buy milk"}, {"task": "Buy milk"}]}
    routed = AIMessage("", tool_calls=[{"name": "UpdateMemory", "args": {"update_type": "todo"}, "id": "call_1"}])
    answered = [HumanMessage("I need to buy milk."), routed, ToolMessage("saved", tool_call_id="call_1"), AIMessage("Added.")]

    assert agent_outcome(record(reply="Added."), before, after, answered, 0, 1, asked=True) == ["saved", "doubled"]
    assert agent_outcome(record(reply="Added.", failed_updates=1), before, before, answered, 0, 0, asked=True) == [
        "told: not saved"]
    assert agent_outcome(record(reply=""), before, before, [HumanMessage("I need to buy milk."), routed], 0, 0,
                         asked=True) == ["wedged", "not saved, not told", "no reply"]
    assert agent_outcome(record(error="ModelUnavailableError: The model endpoint did not answer (timed out)"), before,
                         before, answered, 0, 0, asked=True) == ["told: endpoint error"]
    assert agent_outcome(record(error="BadRequestError: Error code: 400 - exceed_context_size_error"), before, before,
                         answered, 0, 0, asked=True) == ["raised", "wedged"]


def test_a_base_model_going_on_as_the_user_is_recognised_by_its_turn_markers():
    gemma = "I have to send the invoice by tomorrow.<|im_end|>\n<|im_start|>user\nI have to send the invoice"

    assert first_marker(gemma) is not None and first_marker("Sure, the invoice is on your list.") is None


def test_the_json_a_schema_constrained_request_got_is_kept_as_the_server_sent_it():
    census = Census(json_mode=True)
    request = httpx.Request("POST", "http://127.0.0.1:1/v1/chat/completions", json={
        "messages": [{"role": "system", "content": "Choose."}, {"role": "user", "content": "I need to buy milk."}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "UpdateMemory", "schema": {}}},
    })
    answer = {"choices": [{"message": {"content": '{"update_type": "none"}'}, "finish_reason": "stop"}]}
    streamed = httpx.Request("POST", "http://127.0.0.1:1/v1/chat/completions", json={"stream": True, "messages": []})

    census.on_response(httpx.Response(200, json=answer, request=request))
    census.on_response(httpx.Response(200, text="data: {}", request=streamed))

    assert census.json_answers == [JsonAnswer("I need to buy milk.", "UpdateMemory", '{"update_type": "none"}', "stop")]
