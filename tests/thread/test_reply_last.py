"""A finished turn ends with the assistant's reply, in both reply timings, with no extra model call.

With the reply given first, the chat node moves it after the calls' answers (`graph.thread.reply_last`): the
reply keeps the id its tokens streamed under, the calls keep a message of their own, and the ids a replay
uses stay those of the routing message.
"""

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage

from graph import build_graph, close_graph
from graph.memory.changes import committed_changes
from graph.memory.kinds import TODO
from graph.nodes.extraction import conversation, routing_seed
from graph.thread.reply_last import calls_message_id, rejoined, reply_first, reply_last
from graph.thread.tool_calls import turn_answered
from testing.bookkeeping import assert_tool_calls_answered
from testing.helpers import config, todos
from testing.openai_stub import text_reply, tool_calls_reply
from testing.scripted_model import calls, profile, route, say, todo
from testing.stub_script import update

DENTIST = "Book a dentist appointment"
REPLY = "I'll add the dentist to your list."


def script_memory_turn(model, reply_timing: str) -> None:
    """A turn that saves a ToDo: the reply given with the call, or (tutorial timing) after the update."""
    if reply_timing == "first":
        model.add("task_maistro", route("todo", content=REPLY))
    else:
        model.add("task_maistro", route("todo"), say(REPLY))
    model.add("update_todos", calls(todo(DENTIST, solutions=["Call Dr. Lee"])))


def test_invoke_returns_the_reply_last_in_both_reply_timings(agent, model):
    for thread_id, reply_timing in enumerate(["first", "after_updates"]):
        script_memory_turn(model, reply_timing)
        chat_calls = len(model.calls_in("task_maistro"))
        run = config(thread_id=str(thread_id), reply_timing=reply_timing)

        result = agent.invoke({"messages": [HumanMessage("Remind me to book a dentist.")]}, run)

        last = result["messages"][-1]
        assert isinstance(last, AIMessage) and last.text == REPLY and not last.tool_calls, reply_timing
        assert [m.type for m in result["messages"]] == ["human", "ai", "tool", "ai"]
        assert_tool_calls_answered(result["messages"])
        assert len(model.calls_in("task_maistro")) - chat_calls == (1 if reply_timing == "first" else 2)


def test_the_tutorials_values_loop_prints_no_message_twice_in_a_row(agent, model, capsys):
    model.add("task_maistro", route("user", "todo", content="Welcome to Oakland! I'll add the dentist."))
    model.add("update_profile", calls(profile(location="Oakland")))
    model.add("update_todos", calls(todo(DENTIST, solutions=["Call Dr. Lee"])))

    lasts = []
    for chunk in agent.stream(
        {"messages": [HumanMessage("I moved to Oakland and need a dentist.")]}, config(), stream_mode="values"
    ):
        chunk["messages"][-1].pretty_print()
        lasts.append(chunk["messages"][-1])

    printed = capsys.readouterr().out.split("================================")
    assert all(this != after for this, after in zip(printed, printed[1:])), "a message printed twice in a row"
    assert all((a.id, a.text) != (b.id, b.text) for a, b in zip(lasts, lasts[1:]))
    assert lasts[-1].type == "ai" and lasts[-1].text == "Welcome to Oakland! I'll add the dentist."


def test_the_reply_keeps_the_routing_id_that_replays_and_history_use_and_the_next_turn_reads_it(agent, model):
    script_memory_turn(model, "first")

    thread = agent.invoke({"messages": [HumanMessage("Remind me to book a dentist.")]}, config())["messages"]

    calling, answer, reply = thread[1:]
    assert calling.id == calls_message_id(reply.id) and calling.text == ""
    seed = f"{reply.id}/{calling.tool_calls[0]['id']}"
    (change,) = committed_changes(agent.store, "Lance", TODO, seed)
    assert change.action == "created" and change.after["task"] == DENTIST
    assert answer.tool_call_id == calling.tool_calls[0]["id"]

    def strict(messages, tools):
        assert_tool_calls_answered(messages)
        return say("You have the dentist on your list.")

    model.add("task_maistro", strict)
    agent.invoke({"messages": [HumanMessage("What is on my list?")]}, config())

    assert [(m.type, m.text) for m in model.calls[-1].messages[1:] if m.type != "system"] == [
        ("human", "Remind me to book a dentist."),
        ("ai", REPLY),
        ("human", "What is on my list?"),
    ], "the next turn's prompt carries the ended turn's words once"


@pytest.fixture
def served(stub, tmp_path):
    agent = build_graph(tmp_path)
    yield agent
    close_graph(agent)


def test_through_chat_openai_the_reply_streams_once_and_the_thread_ends_with_it(served, stub, script):
    script.add("chat", update("todo", content=REPLY))
    script.add("todo", tool_calls_reply(("ToDo", {"task": DENTIST, "solutions": ["Call Dr. Lee"]})))

    streamed = list(
        served.stream({"messages": [HumanMessage("Remind me to book a dentist.")]}, config(), stream_mode="messages")
    )

    chat = [message for message, meta in streamed if meta["langgraph_node"] == "task_maistro"]
    tokens = [m for m in chat if isinstance(m, AIMessageChunk)]
    assert "".join(m.text for m in tokens) == REPLY and len(tokens) > 3
    assert not [m for m in chat if not isinstance(m, AIMessageChunk) and m.text], "no whole copy of the reply"
    thread = served.get_state(config()).values["messages"]
    assert thread[-1].id == tokens[0].id and thread[-1].text == REPLY
    assert list(todos(served)) == [DENTIST]

    script.add("chat", text_reply("The dentist is on your list."))
    result = served.invoke({"messages": [HumanMessage("What is on my list?")]}, config())

    assert result["messages"][-1].text == "The dentist is on your list." and stub.rejections == []
    assert [m["role"] for m in stub.requests[-1]["messages"]] == ["system", "user", "assistant", "system", "user"]


@pytest.mark.parametrize("reply_timing", ["first", "after_updates"])
def test_the_tutorials_values_loop_prints_the_reply_once_after_its_tokens_streamed(
    served, stub, script, capsys, reply_timing
):
    """The tutorial's loop over `values` prints the reply once in both timings; given first, its tokens stream
    before the update's answer, the thread holds it while the update runs, and a client keying messages by id
    holds it under one id."""
    add_dentist = tool_calls_reply(("ToDo", {"task": DENTIST, "solutions": ["Call Dr. Lee"]}))
    if reply_timing == "first":
        script.add("chat", update("todo", content=REPLY))
        script.add("todo", add_dentist)
    else:
        script.add("chat", update("todo"))
        script.add("todo", add_dentist)
        script.add("chat", text_reply(REPLY))

    events, by_id, while_saving = [], {}, []
    for mode, payload in served.stream(
        {"messages": [HumanMessage("Remind me to book a dentist.")]},
        config(reply_timing=reply_timing),
        stream_mode=["messages", "values"],
    ):
        if mode == "values":
            payload["messages"][-1].pretty_print()
            by_id.update((message.id, message) for message in payload["messages"])
            events.append((mode, payload["messages"][-1]))
            while_saving += [m for m in payload["messages"] if payload["messages"][-1].type == "tool" and m.text == REPLY]
        elif payload[1]["langgraph_node"] == "task_maistro":
            events.append((mode, payload[0]))

    assert capsys.readouterr().out.count(REPLY) == 1, "the reply printed once"
    assert events[-1][0] == "values" and events[-1][1].text == REPLY and not events[-1][1].tool_calls
    assert [message.id for message in by_id.values() if REPLY in message.text] == [events[-1][1].id]
    first_token = next(i for i, (mode, m) in enumerate(events) if mode == "messages" and m.text)
    first_answer = next(i for i, (mode, m) in enumerate(events) if mode == "values" and m.type == "tool")
    assert (first_token < first_answer) == (reply_timing == "first"), "given first, the reply streams before the update"
    assert [m.id for m in while_saving] == ([events[-1][1].id] if reply_timing == "first" else []), (
        "given first, the reply is in the thread (saved, and shown by id) while the update runs"
    )
    assert list(todos(served)) == [DENTIST] and stub.rejections == []


def test_a_reply_given_first_is_written_before_its_calls_and_read_as_the_model_wrote_it():
    """Written apart, the reply and its calls keep the routing message's replay seed, the turn reads as answered,
    an extraction does not read the reply as the user's conversation, and a prompt gets the message back whole."""
    call = {"name": "UpdateMemory", "args": {"update_type": "todo"}, "id": "call_1", "type": "tool_call"}
    routing = AIMessage(content=REPLY, id="run-1", tool_calls=[call], response_metadata={"finish_reason": "length"})
    asked = HumanMessage("Remind me to book a dentist.", id="h1")
    answer = ToolMessage("ToDo added.", tool_call_id="call_1")

    reply, calling = reply_first([routing])
    written = [asked, reply, calling]

    assert (reply.id, reply.text, reply.tool_calls) == ("run-1", REPLY, [])
    assert (calling.id, calling.text, calling.tool_calls) == (calls_message_id("run-1"), "", [call])
    assert routing_seed(written, "call_1") == routing_seed([asked, routing], "call_1") == "run-1/call_1"
    assert conversation(written) == conversation([asked, routing]) == [asked]
    assert not turn_answered(written) and turn_answered([*written, answer])
    asked_again, joined = rejoined(written)
    assert asked_again is asked and (joined.id, joined.text, joined.tool_calls) == ("run-1", REPLY, [call])
    assert joined.response_metadata == routing.response_metadata, "a cut reply is prompted as cut"
    assert reply_last([*written, answer]) == [asked, calling, answer, reply]


def test_a_turn_stored_with_the_reply_beside_its_calls_still_ends_with_the_reply():
    """A thread stored before replies were written apart (the words and calls in one message) ends the same way."""
    call = {"name": "UpdateMemory", "args": {"update_type": "todo"}, "id": "call_1", "type": "tool_call"}
    routing = AIMessage(content=REPLY, id="run-1", tool_calls=[call])
    asked, answer = HumanMessage("Remind me."), ToolMessage("ToDo added.", tool_call_id="call_1")

    calling, answered, reply = reply_last([asked, routing, answer])[1:]

    assert (calling.id, calling.text, answered, reply.id, reply.text) == ("run-1-calls", "", answer, "run-1", REPLY)
