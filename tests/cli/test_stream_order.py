"""What `maistro chat` sees of a memory turn, in order, through the real ChatOpenAI client and the OpenAI stub.

With `reply_timing="first"` (the default) the chat model answers in the message that calls UpdateMemory: the
reply's tokens come first, then the progress line and the memory notes as the updates land, and no second chat
request is made unless an update needs telling about. With "after_updates" (the tutorial's) the notes come
before a reply written by a second chat request.
"""

from collections.abc import Callable
from itertools import groupby

import pytest

from graph import build_graph, close_graph
from graph.app.session import ChatSession, Note, Progress, Token
from graph.memory.kinds import TODO
from graph.memory.store import namespace
from graph.nodes.extraction import EXTRACTION_STEP_LIMIT
from prompts import EXTRACTION_FAILED, GAVE_UP_PROBLEM, REPLY_AFTER_UPDATES_RULE, REPLY_FIRST_RULE, SECRETS_NOT_SAVED
from testing.helpers import SWIM_ITEM, kept, profile_of, todos
from testing.openai_stub import OpenAIStub, StubError, system_text, text_reply, tool_calls_reply
from testing.stub_script import kind_of, update

DENTIST = "Book a dentist appointment"
ADD_DENTIST = tool_calls_reply(("ToDo", {"task": DENTIST, "solutions": ["Call Oakland Dental"]}))
FIRST_REPLY = "Sure, I'm adding the dentist appointment to your list."
# How long an extraction reply waits for the other extraction to arrive; they arrive together when parallel.
MEETING_SECONDS = 30


@pytest.fixture
def agent(stub, tmp_path):
    agent = build_graph(tmp_path / "data")
    yield agent
    close_graph(agent)


def shape(events: list) -> list[str]:
    """The kinds of event in the order they came, runs of one kind as one: e.g. ["Token", "Progress", "Note"]."""
    return [kind for kind, _ in groupby(type(event).__name__ for event in events)]


def replies(events: list) -> list[str]:
    """The text of each streamed reply, in order."""
    tokens = [event for event in events if isinstance(event, Token)]
    return ["".join(token.text for token in run) for _, run in groupby(tokens, key=lambda token: token.message_id)]


def chat_requests(stub: OpenAIStub) -> list[dict]:
    return [request for request in stub.requests if kind_of(request) == "chat"]


def test_a_one_memory_turn_streams_the_reply_before_the_note_and_asks_the_model_once(agent, stub, script):
    script.add("chat", update("todo", content=FIRST_REPLY))
    script.add("todo", ADD_DENTIST)
    session = ChatSession(agent, "Lance")

    events = list(session.send("I need to book a dentist."))

    assert shape(events) == ["Token", "Progress", "Note"], events
    assert replies(events) == [FIRST_REPLY]
    assert events[-2:] == [Progress("Updating your ToDo list…"), Note(f"ToDo added: {DENTIST}")]
    assert script.seen == ["chat", "todo"], "no second chat request once the update succeeded"
    assert REPLY_FIRST_RULE in system_text(stub.requests[0])
    assert list(todos(agent)) == [DENTIST]
    thread = agent.get_state(session.config).values["messages"]
    assert [m.type for m in thread] == ["human", "ai", "tool", "ai"], "the turn ends with its reply"
    assert thread[2].tool_call_id == thread[1].tool_calls[0]["id"] and thread[-1].text == FIRST_REPLY


def meets(stub: OpenAIStub, other: str, reply: dict, met: list[bool]) -> Callable[[dict], dict]:
    """An extraction reply held back until a request of the `other` kind has reached the stub; `met` records
    whether it had, which it can only have while this request waits for its answer if the two run in parallel."""

    def respond(_request: dict) -> dict:
        met.append(stub.wait_for_request(lambda request: kind_of(request) == other, MEETING_SECONDS))
        return reply

    return respond


def test_a_two_memory_turn_streams_the_reply_first_and_extracts_both_memories_at_once(agent, stub, script):
    met: list[bool] = []
    script.add("chat", update("user", "todo", content="Welcome to Oakland! I'm adding the dentist too."))
    script.add("profile", meets(stub, "todo", tool_calls_reply(("Profile", {"location": "Oakland"})), met))
    script.add("todo", meets(stub, "profile", ADD_DENTIST, met))

    events = list(ChatSession(agent, "Lance").send("I moved to Oakland and need to book a dentist."))

    assert shape(events) == ["Token", "Progress", "Note"], events
    assert replies(events) == ["Welcome to Oakland! I'm adding the dentist too."]
    assert Progress("Updating your profile and ToDo list…") in events
    notes = [event.text for event in events if isinstance(event, Note)]
    assert sorted(notes) == ["Profile updated (location)", f"ToDo added: {DENTIST}"]
    assert met == [True, True], "each extraction request reached the stub before the other was answered"
    assert sorted(script.seen) == ["chat", "profile", "todo"]
    assert profile_of(agent)["location"] == "Oakland" and list(todos(agent)) == [DENTIST]


CONTENT_FILTERED = StubError(400, "The response was filtered due to the prompt triggering the content policy.")
SECRET_SOLUTION = "Log in to the portal: password is Swordfish42"


def extraction_fails(agent, script) -> tuple[str, list[str]]:
    """The ToDo extraction is refused every time (an existing item makes trustcall retry): the update fails."""
    agent.store.put(namespace(TODO, "Lance"), "swim", SWIM_ITEM)
    script.add("todo", *[CONTENT_FILTERED] * EXTRACTION_STEP_LIMIT)
    failure = EXTRACTION_FAILED.format(memory="ToDo list", problem=GAVE_UP_PROBLEM)
    return failure, ["ToDo list not updated: the update failed{kept}"]


def secret_withheld(agent, script) -> tuple[str, list[str]]:
    """The new ToDo carries a password, which is kept out of memory."""
    script.add("todo", tool_calls_reply(("ToDo", {"task": DENTIST, "solutions": [SECRET_SOLUTION]})))
    return SECRETS_NOT_SAVED.format(secrets="password"), [
        f"ToDo added: {DENTIST}",
        "Not saved (secrets are never stored): password",
    ]


@pytest.mark.parametrize("setup", [extraction_fails, secret_withheld])
def test_an_update_the_user_must_hear_about_brings_a_second_reply_in_the_same_turn(agent, stub, script, setup):
    told = "Sorry, I could not save that as asked: see above."
    answer, notes = setup(agent, script)
    script.add("chat", update("todo", content=FIRST_REPLY), text_reply(told))
    session = ChatSession(agent, "Lance")

    events = list(session.send("I need to book a dentist, the portal password is Swordfish42."))

    assert shape(events) == ["Token", "Progress", "Note", "Token"], events
    assert replies(events) == [FIRST_REPLY, told]
    pending = kept(agent.store) if "{kept}" in notes[0] else ""
    assert [event.text for event in events if isinstance(event, Note)] == [note.replace("{kept}", pending) for note in notes]
    follow_up = chat_requests(stub)
    assert len(follow_up) == 2, "the model is asked again, in the same turn"
    routing, tool_answer = follow_up[1]["messages"][-2:]
    assert routing["role"] == "assistant" and routing["content"] == FIRST_REPLY
    assert tool_answer["role"] == "tool" and tool_answer["tool_call_id"] == routing["tool_calls"][0]["id"]
    assert answer in tool_answer["content"]
    thread = agent.get_state(session.config).values["messages"]
    assert [m.type for m in thread] == ["human", "ai", "tool", "ai"] and thread[-1].text == told
    assert stub.rejections == []


def test_after_updates_mode_notes_the_change_before_a_reply_from_a_second_call(agent, stub, script, monkeypatch):
    monkeypatch.setenv("MAISTRO_REPLY_TIMING", "after_updates")
    script.add("chat", update("todo"), text_reply("I added the dentist appointment to your list."))
    script.add("todo", ADD_DENTIST)

    events = list(ChatSession(agent, "Lance").send("I need to book a dentist."))

    assert shape(events) == ["Progress", "Note", "Token"], events
    assert events[:2] == [Progress("Updating your ToDo list…"), Note(f"ToDo added: {DENTIST}")]
    assert replies(events) == ["I added the dentist appointment to your list."]
    assert script.seen == ["chat", "todo", "chat"]
    assert REPLY_AFTER_UPDATES_RULE in system_text(stub.requests[0])
