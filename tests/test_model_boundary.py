"""The boundary where the model's reply enters the thread: the text-call parsers, the near-miss routing values,
the normaliser, old threads that already hold invalid calls, runs that bring no message, and the thread view."""

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from graph import build_graph
from graph.memory.kinds import DEFAULT_MEMORY_KINDS, MemoryKind
from graph.thread.model_message import normalise_reply, update_type_for
from graph.thread.text_calls import TEXT_CALL_PARSERS, TextCall, find_text_calls, speakable_prefix, text_call_parser
from graph.thread.tool_calls import chat_history, repair_tool_answers
from graph.thread.view import ThreadView
from prompts import EMPTY_MESSAGE_REPLY
from schemas import Profile
from tests.support.helpers import config, todos
from tests.support.openai_stub import text_reply, tool_calls_reply
from tests.support.stub_script import update

CALL = {"name": "UpdateMemory", "arguments": {"update_type": "todo"}}


def accept_update(call: TextCall) -> TextCall | None:
    return call if call.name == "UpdateMemory" and call.args.get("update_type") == "todo" else None


@pytest.mark.parametrize(
    "written",
    [
        f"<tool_call>\n{json.dumps(CALL)}\n</tool_call>",
        "<tool_call>{'name': 'UpdateMemory', 'arguments': {'update_type': 'todo'},}</tool_call>",  # mended
        f"[TOOL_CALLS] [{json.dumps(CALL)}]",
        f"```json\n{json.dumps(CALL)}\n```",
        f"```\n{json.dumps({'type': 'function', 'function': {**CALL, 'arguments': json.dumps(CALL['arguments'])}})}\n```",
        json.dumps({"name": "UpdateMemory", "parameters": {"update_type": "todo"}}),
    ],
)
def test_each_format_of_a_call_written_as_text_is_found_and_cut_out(written):
    calls, text = find_text_calls(f"I'll add that.\n\n{written}\n\nAnything else?", accept_update)

    assert [(call.name, call.args) for call in calls] == [("UpdateMemory", {"update_type": "todo"})]
    assert text == "I'll add that.\n\nAnything else?"


def test_an_unclosed_tool_call_tag_runs_to_the_end_of_the_reply():
    calls, text = find_text_calls(f"I'll add that.\n<tool_call>{json.dumps(CALL)}", accept_update)
    assert [call.args for call in calls] == [{"update_type": "todo"}] and text == "I'll add that."


@pytest.mark.parametrize(
    "reply",
    [
        'Here is your list as JSON: {"task": "Book swim lessons"}',
        '<tool_call>{"name": "save_memory", "arguments": {"text": "x"}}</tool_call>',  # a tool never offered
        '```json\n{"name": "UpdateMemory", "arguments": {"update_type": "calendar"}}\n```',  # arguments invalid
        "Use {braces} and [brackets] freely.",
    ],
)
def test_anything_else_stays_text(reply):
    assert find_text_calls(reply, accept_update) == ([], reply)


def test_a_format_is_registered_by_name():
    @text_call_parser("test_format", starts=("CALL:",))
    def test_calls(text):
        if text.startswith("CALL:"):
            yield TextCall("UpdateMemory", {"update_type": "todo"}, (0, len(text)))

    try:
        assert find_text_calls("CALL:todo", accept_update)[0][0].name == "UpdateMemory"
        assert speakable_prefix("Sure. CALL:todo") == "Sure."
    finally:
        del TEXT_CALL_PARSERS["test_format"]


def test_a_streaming_reply_is_shown_up_to_where_a_call_may_start():
    assert speakable_prefix("I'll add that.\n<tool_call>{") == "I'll add that."
    assert speakable_prefix("I'll add that.\n<tool_") == "I'll add that."
    assert speakable_prefix("Nothing to hide. ") == "Nothing to hide."
    assert speakable_prefix("Nothing to hide.") == "Nothing to hide."


NOTES = MemoryKind(name="note", schema=Profile, collection=True, description="notes", label="Note")


@pytest.mark.parametrize(
    ("value", "update_type"),
    [
        ("user", "user"),
        ("profile", "user"),
        ("Profile", "user"),
        ("user_profile", None),
        ("todo", "todo"),
        ("todos", "todo"),
        ("ToDo", "todo"),
        ("TODO list", "todo"),
        ("to-do", "todo"),
        ("instruction", "instructions"),
        ("Instructions", "instructions"),
        ("notes", "note"),
        ("calendar", None),
        ("", None),
        (["todo"], None),
    ],
)
def test_near_miss_routing_values_name_the_kind_they_obviously_mean(value, update_type):
    assert update_type_for((*DEFAULT_MEMORY_KINDS, NOTES), value) == update_type


def test_a_value_naming_two_kinds_names_none():
    twin = MemoryKind(name="todos", schema=Profile, collection=True, description="other tasks", label="Task")
    assert update_type_for((*DEFAULT_MEMORY_KINDS, twin), "todos") == "todos"
    assert update_type_for((*DEFAULT_MEMORY_KINDS, twin), "TODOS") is None


def test_ids_are_made_unique_in_the_message_and_the_thread():
    reply = AIMessage(
        content="",
        tool_calls=[
            {"name": "UpdateMemory", "args": {"update_type": "user"}, "id": None},
            {"name": "UpdateMemory", "args": {"update_type": "todo"}, "id": ""},
            {"name": "UpdateMemory", "args": {"update_type": "instructions"}, "id": "call_0"},
            {"name": "UpdateMemory", "args": {"update_type": "todo"}, "id": "call_1"},
            {"name": "UpdateMemory", "args": {"update_type": "user"}, "id": "call_1"},
        ],
    )

    normalised = normalise_reply(reply, DEFAULT_MEMORY_KINDS, taken_ids={"call_0"})

    ids = [call["id"] for call in normalised.message.tool_calls]
    assert len(set(ids)) == 5 and all(ids) and "call_0" not in ids and ids[3] == "call_1"
    assert normalised.refusals == []


def test_malformed_arguments_are_mended_or_refused_with_an_answer():
    reply = AIMessage(
        content="Saved.",
        invalid_tool_calls=[
            {"name": "UpdateMemory", "args": "{'update_type': 'todo',}", "id": "mendable", "error": "bad"},
            {"name": "UpdateMemory", "args": "update_type=todo", "id": "broken", "error": "bad"},
            {"name": "UpdateMemory", "args": '{"update_type": "calendar"', "id": "nowhere", "error": "bad"},
        ],
    )

    normalised = normalise_reply(reply, DEFAULT_MEMORY_KINDS, taken_ids=())

    message = normalised.message
    assert message.invalid_tool_calls == [] and [call["id"] for call in message.tool_calls] == ["mendable", "broken", "nowhere"]
    assert message.tool_calls[0]["args"] == {"update_type": "todo"}
    assert [(r.answer.tool_call_id, r.answer.status) for r in normalised.refusals] == [("broken", "error"), ("nowhere", "error")]
    assert "Malformed" in normalised.refusals[0].answer.content and "calendar" in normalised.refusals[1].note


def test_unknown_tools_are_refused_and_misspelt_update_memory_is_not():
    reply = AIMessage(
        content="",
        tool_calls=[
            {"name": "save_memory", "args": {"text": "x"}, "id": "a"},
            {"name": "update_memory", "args": {"update_type": "ToDo"}, "id": "b"},
        ],
    )

    normalised = normalise_reply(reply, DEFAULT_MEMORY_KINDS, taken_ids=())

    assert normalised.message.tool_calls[1] == {"name": "UpdateMemory", "args": {"update_type": "todo"}, "id": "b", "type": "tool_call"}
    assert [r.answer.tool_call_id for r in normalised.refusals] == ["a"] and "save_memory" in normalised.refusals[0].note


def test_a_well_behaved_reply_passes_unchanged():
    reply = AIMessage(content="Hi!", tool_calls=[{"name": "UpdateMemory", "args": {"update_type": "todo"}, "id": "c1"}])
    assert normalise_reply(reply, DEFAULT_MEMORY_KINDS, taken_ids={"c0"}).message is reply


OLD_TURN = [
    HumanMessage("Add milk.", id="h1"),
    AIMessage(
        content="On it.",
        id="a1",
        invalid_tool_calls=[
            {"name": "UpdateMemory", "args": "{update_type: todo", "id": "bad", "error": "x"},
            {"name": "UpdateMemory", "args": "{", "id": None, "error": "x"},
        ],
    ),
    ToolMessage(content="Malformed tool call arguments (x). No memory was changed.", tool_call_id="bad", status="error"),
    AIMessage(content="Sorry, say it again?", id="a2"),
]


def test_an_old_thread_with_invalid_calls_puts_no_unanswered_call_in_a_prompt():
    repaired = repair_tool_answers(OLD_TURN)

    assert repaired is not None and repaired[1].invalid_tool_calls == []
    ids = [call["id"] for call in repaired[1].tool_calls]
    assert len(ids) == 2 and all(ids)
    assert {m.tool_call_id for m in repaired if isinstance(m, ToolMessage)} == set(ids)
    history = chat_history([*OLD_TURN, HumanMessage("Hello?", id="h2")])
    assert [(m.type, getattr(m, "tool_calls", []), getattr(m, "invalid_tool_calls", [])) for m in history[:3]] == [
        ("human", [], []),
        ("ai", [], []),
        ("ai", [], []),
    ]


def test_a_thread_wedged_by_an_old_invalid_call_works_again(stub, script, tmp_path):
    agent = build_graph(tmp_path)
    agent.update_state(config(), {"messages": OLD_TURN}, as_node="task_maistro")
    script.add("chat", update("todo", content="I'll add the milk."), text_reply("unused"))
    script.add("todo", tool_calls_reply(("ToDo", {"task": "Buy milk", "solutions": ["Corner shop"]})))

    result = agent.invoke({"messages": [HumanMessage("Add milk, please.")]}, config())

    assert stub.rejections == [] and list(todos(agent)) == ["Buy milk"]
    assert result["messages"][-1].type in ("ai", "tool")


def test_a_run_without_a_message_is_answered_and_never_raises(stub, script, tmp_path):
    agent = build_graph(tmp_path)

    first = agent.invoke({"messages": []}, config(thread_id="empty"))

    assert [(m.type, m.content) for m in first["messages"]] == [("ai", EMPTY_MESSAGE_REPLY)]
    script.add("chat", text_reply("Hello Lance."))
    agent.invoke({"messages": [HumanMessage("Hi")]}, config())
    calls = len(stub.requests)
    again = agent.invoke({"messages": []}, config())
    assert len(stub.requests) == calls and again["messages"][-1].content == "Hello Lance."


def test_a_thread_left_with_a_call_without_id_resumes_it_and_works_again(stub, script, tmp_path):
    """What an earlier version stored before its update node crashed on a call without an id."""
    agent = build_graph(tmp_path)
    crashed = [
        HumanMessage("Add milk.", id="h1"),
        AIMessage(content="On it.", id="a1", tool_calls=[{"name": "UpdateMemory", "args": {"update_type": "todo"}, "id": None}]),
    ]
    agent.update_state(config(), {"messages": crashed}, as_node="__start__")
    script.add("todo", tool_calls_reply(("ToDo", {"task": "Buy milk", "solutions": ["Corner shop"]})))
    script.add("chat", text_reply("Hello! The milk is on your list."))

    result = agent.invoke({"messages": [HumanMessage("Hello?")]}, config())

    assert list(todos(agent)) == ["Buy milk"] and stub.rejections == []
    assert result["messages"][-1].content == "Hello! The milk is on your list."


def test_a_thread_is_read_once_into_a_view():
    thread = [
        HumanMessage("Add milk.", id="h1"),
        AIMessage(content="", id="a1", tool_calls=[{"name": "UpdateMemory", "args": {"update_type": "todo"}, "id": "c1"}]),
        ToolMessage(content="ToDo added", tool_call_id="c1"),
        AIMessage(content="Added.", id="a2"),
        HumanMessage("And eggs.", id="h2"),
        AIMessage(content="On it.", id="a3", tool_calls=[{"name": "UpdateMemory", "args": {"update_type": "todo"}, "id": "c2"}]),
    ]

    view = ThreadView.of(thread)

    assert (view.latest_user.id, view.latest_ai.id, view.rounds) == ("h2", "a3", 1)
    assert [call["id"] for call in view.pending_calls] == ["c2"] and view.taken_ids == {"c1", "c2"}
    assert [len(turn) for turn in view.turns] == [4, 2] and not view.starts_turn and not view.idle
    assert ThreadView.of([*thread, HumanMessage("Hi", id="h3")]).interrupted
    assert ThreadView.of([]).idle and ThreadView.of(thread[:4]).idle
