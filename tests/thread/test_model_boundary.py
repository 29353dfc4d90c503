"""The boundary where the model's reply enters the thread: the text-call parsers, the near-miss routing values,
the normaliser, old threads that already hold invalid calls, runs that bring no message, and the thread view."""

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from graph import build_graph
from graph.memory.kinds import DEFAULT_MEMORY_KINDS, MemoryKind
from graph.thread import bounded_json
from graph.thread.bounded_json import (
    MAX_JSON_CHARS,
    MAX_JSON_DEPTH,
    NOT_JSON,
    TOO_DEEP,
    TOO_LONG,
    read_json,
    spans,
    value_depth,
)
from graph.thread.model_message import normalise_reply, update_type_for
from graph.thread.text_calls import (
    NOT_A_CALL,
    NOT_AN_OBJECT,
    TEXT_CALL_FORMATS,
    TextCall,
    quoted_calls,
    speakable_prefix,
    text_call_format,
    written_calls,
)
from graph.thread.tool_calls import chat_history, repair_tool_answers
from graph.thread.view import ThreadView
from prompts import EMPTY_MESSAGE_REPLY, QUOTED_CALL_NOTE, REFUSED_MALFORMED_NOTE
from schemas import Profile
from testing.helpers import config, todos
from testing.openai_stub import text_reply, tool_calls_reply
from testing.stub_script import update

CALL = {"name": "UpdateMemory", "arguments": {"update_type": "todo"}}
WRITTEN = json.dumps(CALL)
TODO_CALL = ("UpdateMemory", {"update_type": "todo"})


def found(calls: list[TextCall] | None) -> list[tuple] | None:
    return None if calls is None else [(call.name, call.args) for call in calls]


@pytest.mark.parametrize(
    ("reply", "calls"),
    [
        (f"<tool_call>\n{WRITTEN}\n</tool_call>", [TODO_CALL]),
        (f"  \n<tool_call>{WRITTEN}</tool_call>\n\n", [TODO_CALL]),  # whitespace around the reply
        (f"<tool_call>{WRITTEN}", [TODO_CALL]),  # left open: runs to the end of the reply
        (f"<tool_call>{WRITTEN}</tool_call>\n<tool_call>{json.dumps({**CALL, 'arguments': {'update_type': 'user'}})}",
         [TODO_CALL, ("UpdateMemory", {"update_type": "user"})]),
        ("<tool_call>{'name': 'UpdateMemory', 'arguments': {'update_type': 'todo'},}</tool_call>", [TODO_CALL]),  # mended
        ('<tool_call>{"name": "UpdateMemory", "arguments": "{\\"update_type\\": \\"todo\\"}"}</tool_call>', [TODO_CALL]),
        (f"[TOOL_CALLS] [{WRITTEN}]", [TODO_CALL]),
        (f"[TOOL_CALLS]{WRITTEN}", [TODO_CALL]),
        (json.dumps({"name": "UpdateMemory", "parameters": {"update_type": "todo"}}), [TODO_CALL]),
        (json.dumps({"type": "function", "name": "UpdateMemory", "parameters": {"update_type": "todo"}}), [TODO_CALL]),
        (WRITTEN, [TODO_CALL]),
        ('<tool_call>{"name": "save_memory", "arguments": {"text": "x"}}</tool_call>', [("save_memory", {"text": "x"})]),
    ],
    ids=[
        "hermes", "hermes-spaced", "hermes-open", "hermes-two", "hermes-mended", "hermes-string-arguments",
        "mistral-list", "mistral-object", "json-parameters", "json-typed", "json-arguments", "hermes-unknown-tool",
    ],
)
def test_a_reply_that_is_a_call_in_a_known_format_is_read_as_its_calls(reply, calls):
    assert found(written_calls(reply)) == calls


QUOTING = {
    "hermes-after-text": f"I'll add that.\n<tool_call>{WRITTEN}</tool_call>",
    "hermes-then-text": f"<tool_call>{WRITTEN}</tool_call>\nThat is what the call looks like; I did not run it.",
    "hermes-open-then-text": f"<tool_call>{WRITTEN}\n\nThat is what the call looks like; I did not run it.",
    "hermes-in-prose": f"Qwen writes <tool_call>{WRITTEN}</tool_call> to save a ToDo.",
    "mistral-after-text": f"I'll add that. [TOOL_CALLS] [{WRITTEN}]",
    "mistral-then-text": f"[TOOL_CALLS] [{WRITTEN}] is how Mistral writes it.",
    "fence-json": f"Here it is:\n```json\n{WRITTEN}\n```",
    "fence-python": f"Here it is:\n```python\ncall = {WRITTEN}\n```",
    "fence-text": f"```text\n{WRITTEN}\n```",
    "fence-tool_call": f"```tool_call\n{WRITTEN}\n```",
    "fence-only": f"```\n{WRITTEN}\n```",
    "inline-code": f"The call would be `{WRITTEN}`; I did not run it.",
    "json-in-a-sentence": f"The call would be {WRITTEN} and I did not run it.",
    "json-then-text": f"{WRITTEN}\nThat is the call; I did not run it.",
    "openai-shape": json.dumps({"type": "function", "function": {**CALL, "arguments": json.dumps(CALL["arguments"])}}),
    "json-list": f"[{WRITTEN}]",
}


@pytest.mark.parametrize("reply", list(QUOTING.values()), ids=list(QUOTING))
def test_a_call_quoted_in_a_reply_is_text_and_is_found_only_to_tell_the_user(reply):
    assert written_calls(reply) is None
    assert found(list(quoted_calls(reply))) == [TODO_CALL]


@pytest.mark.parametrize(
    "reply",
    [
        'Here is your list as JSON: {"task": "Book swim lessons"}',
        '{"task": "Book swim lessons", "name": "swim"}',  # a JSON object that names no call
        '{"name": "Lance"}',  # a name without arguments
        "Use {braces} and [brackets] freely; Qwen writes <tool_call> tags and Mistral [TOOL_CALLS].",
        "[Note] nothing to save",
        "<tool_call> is how Qwen starts a call.",
        "[TOOL_CALLS] is how Mistral starts its calls.",
        "",
    ],
)
def test_text_without_a_call_stays_text(reply):
    assert written_calls(reply) is None and list(quoted_calls(reply)) == []


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("<tool_call>update_type=todo</tool_call>", NOT_JSON),
        ("<tool_call>[1, 2]</tool_call>", NOT_A_CALL),
        ('<tool_call>{"name": "UpdateMemory", "arguments": [1]}</tool_call>', NOT_AN_OBJECT),
        ("[TOOL_CALLS] {}", NOT_A_CALL),
        (f'<tool_call>{{"name": "UpdateMemory", "arguments": {{"x": {"[" * 15 + "]" * 15}}}}}</tool_call>', TOO_DEEP),
        ("<tool_call>" + "[" * 3000 + "]" * 3000 + "</tool_call>", TOO_LONG),
        ("<tool_call>" + "{" * 200_000, TOO_LONG),
    ],
)
def test_a_reply_in_a_call_format_that_cannot_be_read_is_one_call_and_its_problem(reply, problem):
    assert [(call.args, call.problem) for call in written_calls(reply)] == [(None, problem)]


def test_model_json_is_read_within_its_size_bound_at_the_edge():
    def call_of_length(length: int) -> str:
        padding = length - len(json.dumps({**CALL, "arguments": {"update_type": "todo", "x": ""}}))
        return json.dumps({**CALL, "arguments": {"update_type": "todo", "x": "a" * padding}})

    assert len(call_of_length(MAX_JSON_CHARS)) == MAX_JSON_CHARS
    assert written_calls(call_of_length(MAX_JSON_CHARS))[0].args["update_type"] == "todo"
    assert written_calls(call_of_length(MAX_JSON_CHARS + 1)) is None  # a JSON reply that long is text
    hermes = f"<tool_call>{call_of_length(MAX_JSON_CHARS - len('<tool_call>'))}"
    assert written_calls(hermes)[0].args is not None
    assert written_calls(hermes + " ")[0].args is not None, "whitespace around a reply is not counted"
    assert written_calls(f"<tool_call> {call_of_length(MAX_JSON_CHARS - len('<tool_call>'))}")[0].problem == TOO_LONG


def nested(depth: int) -> str:
    """A call whose JSON nests `depth` deep: the call and its arguments are 2 levels, then lists."""
    lists = depth - 2
    return json.dumps({**CALL, "arguments": {"update_type": "todo", "x": "LISTS"}}).replace('"LISTS"', "[" * lists + "]" * lists)


def test_model_json_is_read_within_its_depth_bound_at_the_edge():
    assert max(span.depth for span in spans(nested(MAX_JSON_DEPTH))) == MAX_JSON_DEPTH
    assert written_calls(nested(MAX_JSON_DEPTH))[0].args["update_type"] == "todo"
    assert written_calls(nested(MAX_JSON_DEPTH + 1)) is None
    assert written_calls(f"<tool_call>{nested(MAX_JSON_DEPTH)}</tool_call>")[0].args is not None
    assert written_calls(f"<tool_call>{nested(MAX_JSON_DEPTH + 1)}</tool_call>")[0].problem == TOO_DEEP
    assert read_json("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH, mend=False).value is not None
    assert read_json("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), mend=False).problem == TOO_DEEP


def test_brackets_inside_strings_do_not_count_as_depth_but_do_bound_mending():
    quoted_brackets = json.dumps({**CALL, "arguments": {"update_type": "todo", "x": "[" * 100}})
    assert written_calls(quoted_brackets)[0].args["x"] == "[" * 100
    # Broken JSON is mended only when it holds at most MAX_JSON_DEPTH brackets, so json-repair never nests deeper.
    assert read_json("{'a': [" + "1], [" * (MAX_JSON_DEPTH - 2) + "1],}", mend=True).value is not None
    assert read_json("{'a': [" + "1], [" * (MAX_JSON_DEPTH - 1) + "1],}", mend=True).problem == NOT_JSON


def test_nothing_a_parser_or_json_repair_raises_leaves_the_reading(monkeypatch):
    def give_up(text):
        raise RecursionError("json-repair gave up")

    monkeypatch.setattr(bounded_json.json_repair, "loads", give_up)
    assert read_json("{'update_type': 'todo',}", mend=True).problem == NOT_JSON

    @text_call_format("test_raises", start="CALL:")
    def raises(text):
        raise RecursionError("a parser's own fault")

    try:
        assert written_calls("CALL: todo") is None
    finally:
        del TEXT_CALL_FORMATS["test_raises"]


def test_a_format_is_registered_by_name():
    @text_call_format("test_format", start="CALL:")
    def test_calls(text):
        return [TextCall("UpdateMemory", {"update_type": text.removeprefix("CALL:")})] if text != "CALL:" else None

    try:
        assert found(written_calls("CALL:todo")) == [TODO_CALL]
        assert written_calls("CALL:") is None
        assert speakable_prefix("CAL") == "" and speakable_prefix("Sure. CALL:todo") == "Sure. CALL:todo"
    finally:
        del TEXT_CALL_FORMATS["test_format"]


@pytest.mark.parametrize(
    ("streamed", "shown"),
    [
        ("<tool_", ""),
        ("  <tool_call>{", ""),
        ("[TOOL", ""),
        ('{"name": "UpdateMemory"', ""),
        ("\n", ""),
        ("[Note", "[Note"),
        ("<b>Hi", "<b>Hi"),
        ("I'll add that.\n<tool_call>{", "I'll add that.\n<tool_call>{"),  # a tag in prose is never a call
        ("Qwen writes <tool_call> tags. ", "Qwen writes <tool_call> tags."),
        ("Nothing to hide.", "Nothing to hide."),
    ],
)
def test_a_streaming_reply_is_held_back_only_while_it_may_still_become_a_call(streamed, shown):
    assert speakable_prefix(streamed) == shown


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


def test_a_reply_that_is_a_call_becomes_the_call_and_no_text():
    reply = AIMessage(content=f"<tool_call>{WRITTEN}</tool_call>", id="a1")

    normalised = normalise_reply(reply, DEFAULT_MEMORY_KINDS, taken_ids=())

    assert normalised.message.content == "" and normalised.refusals == [] and normalised.notes == []
    assert [(call["name"], call["args"]) for call in normalised.message.tool_calls] == [TODO_CALL]


def test_a_reply_that_quotes_a_call_keeps_its_text_and_tells_the_user_nothing_ran():
    profile_call = json.dumps({**CALL, "arguments": {"update_type": "profile"}})
    reply = AIMessage(content=f"Like this:\n```json\n{WRITTEN}\n```\nor `{profile_call}`; and `{WRITTEN}`.", id="a1")

    normalised = normalise_reply(reply, DEFAULT_MEMORY_KINDS, taken_ids=())

    assert normalised.message is reply and normalised.refusals == []
    assert normalised.notes == [QUOTED_CALL_NOTE.format(memory="ToDo list and profile")]


def test_a_quoted_call_is_not_mentioned_when_the_message_itself_updates_that_memory():
    profile_call = json.dumps({**CALL, "arguments": {"update_type": "user"}})
    reply = AIMessage(
        content=f"I'll add it; the call is `{WRITTEN}`, and `{profile_call}` would save your name.",
        tool_calls=[{"name": "UpdateMemory", "args": {"update_type": "todo"}, "id": "c1"}],
        id="a1",
    )

    normalised = normalise_reply(reply, DEFAULT_MEMORY_KINDS, taken_ids=())

    assert normalised.message is reply and normalised.notes == [QUOTED_CALL_NOTE.format(memory="profile")]


@pytest.mark.parametrize(
    "content",
    [
        'Tools look like `{"name": "save_memory", "arguments": {"text": "x"}}`.',  # a tool never offered
        f"`{json.dumps({**CALL, 'arguments': {'update_type': 'calendar'}})}`",  # a memory that does not exist
        "Nothing quoted here.",
    ],
)
def test_a_quoted_call_that_would_name_no_memory_is_not_mentioned(content):
    reply = AIMessage(content=content, id="a1")
    assert normalise_reply(reply, DEFAULT_MEMORY_KINDS, taken_ids=()).notes == []


def test_a_reply_in_a_call_format_that_cannot_be_read_is_refused_once_with_its_problem():
    reply = AIMessage(content="<tool_call>" + '{"name": "UpdateMemory", "arguments": ' * 20, id="a1")

    normalised = normalise_reply(reply, DEFAULT_MEMORY_KINDS, taken_ids=())

    assert normalised.message.content == "" and normalised.message.tool_calls[0]["args"] == {}
    assert [refusal.note for refusal in normalised.refusals] == [REFUSED_MALFORMED_NOTE.format(problem=TOO_DEEP)]


def test_call_arguments_are_read_within_the_depth_bound_at_the_edge():
    def arguments(depth: int) -> dict:  # the arguments object is one level, then lists
        return {"update_type": "todo", "x": json.loads("[" * (depth - 1) + "]" * (depth - 1))}

    assert value_depth(arguments(MAX_JSON_DEPTH)) == MAX_JSON_DEPTH
    reply = AIMessage(
        content="",
        tool_calls=[
            {"name": "UpdateMemory", "args": arguments(MAX_JSON_DEPTH), "id": "edge"},
            {"name": "UpdateMemory", "args": arguments(MAX_JSON_DEPTH + 1), "id": "past"},
        ],
    )

    normalised = normalise_reply(reply, DEFAULT_MEMORY_KINDS, taken_ids=())

    assert [call["args"] for call in normalised.message.tool_calls] == [arguments(MAX_JSON_DEPTH), {}]
    assert [(r.answer.tool_call_id, r.note) for r in normalised.refusals] == [
        ("past", REFUSED_MALFORMED_NOTE.format(problem=TOO_DEEP))
    ]


def test_call_arguments_past_the_bounds_are_refused_not_stored():
    deep = {"update_type": "todo", "x": json.loads("[" * 500 + "]" * 500)}
    reply = AIMessage(
        content="On it.",
        tool_calls=[{"name": "UpdateMemory", "args": deep, "id": "deep"}],
        invalid_tool_calls=[
            {"name": "UpdateMemory", "args": "{'update_type': 'todo', 'x': '" + "a" * MAX_JSON_CHARS, "id": "long", "error": "x"},
            {"name": "UpdateMemory", "args": "[" * 1000 + "]" * 1000, "id": "recursion", "error": "x"},
        ],
    )

    normalised = normalise_reply(reply, DEFAULT_MEMORY_KINDS, taken_ids=())

    assert [(call["id"], call["args"]) for call in normalised.message.tool_calls] == [
        ("deep", {}), ("long", {}), ("recursion", {})
    ]
    problems = [TOO_DEEP, TOO_LONG, TOO_DEEP]
    assert [refusal.note for refusal in normalised.refusals] == [REFUSED_MALFORMED_NOTE.format(problem=p) for p in problems]


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
