"""One chat turn as the CLI sees it: streamed tokens, memory-change notes, and resuming a failed turn."""

import pytest
from langchain_core.messages import HumanMessage

from graph import build_graph
from graph.app.session import ChatSession, Note, Notice, Progress, StoppedTurn, ThreadOwnerError, Token
from graph.backends.thread_locks import FileThreadLocks
from graph.memory.kinds import DEFAULT_MEMORY_KINDS
from graph.memory.notes import change_notes
from testing.helpers import todos
from testing.openai_stub import OpenAIStub, text_reply, tool_calls_reply
from testing.scripted_model import calls, patch_where, profile, remove_where, replace, route, say, todo
from testing.stub_script import Script, update

SWIM = {"task": "Book swim lessons", "status": "not started", "solutions": ["SF swim schools"]}


def change(action: str, before: dict | None, after: dict | None, key: str = "k1") -> dict:
    return {"action": action, "key": key, "before": before, "after": after}


@pytest.mark.parametrize(
    "artifact, notes",
    [
        ({"kind": "todo", "changes": [change("created", None, SWIM)]}, ["ToDo added: Book swim lessons"]),
        ({"kind": "todo", "changes": [change("deleted", SWIM, None)]}, ["ToDo removed: Book swim lessons"]),
        (
            {"kind": "todo", "changes": [change("updated", SWIM, {**SWIM, "status": "done"})]},
            ["ToDo done: Book swim lessons"],
        ),
        (
            {"kind": "todo", "changes": [change("updated", SWIM, {**SWIM, "deadline": "2026-11-30T23:59:00-08:00"})]},
            ["ToDo updated: Book swim lessons (deadline)"],
        ),
        (
            {"kind": "profile", "changes": [change("created", None, {"name": "Lance", "job": None, "interests": []})]},
            ["Profile updated (name)"],
        ),
        (
            {"kind": "instructions", "changes": [change("created", None, {"memory": "Be brief."})]},
            ["Instructions updated:\n  + Be brief."],
        ),
        (
            {"kind": "instructions", "changes": [change("updated", {"memory": "Be brief. Use 中文。"}, {"memory": "Be brief. Name local vendors."})]},
            ["Instructions updated:\n  - Use 中文。\n  + Name local vendors."],
        ),
        ({"kind": "profile", "changes": []}, []),
        (None, []),
    ],
)
def test_change_notes(artifact, notes):
    assert change_notes(artifact, DEFAULT_MEMORY_KINDS) == notes


def test_a_turn_yields_notes_then_the_reply(agent, model):
    model.add("task_maistro", route("user", "todo"), say("Hi Lance, I added the swim lessons."))
    model.add("update_profile", calls(profile(name="Lance")))
    model.add("update_todos", calls(todo("Book swim lessons", solutions=["SF swim schools"])))
    session = ChatSession(agent, "Lance")

    events = list(session.send("I'm Lance and need to book swim lessons."))

    assert sorted(e.text for e in events if isinstance(e, Note)) == ["Profile updated (name)", "ToDo added: Book swim lessons"]
    assert events[0] == Progress("Updating your profile and ToDo list…"), "shown while the memories are updated"
    assert isinstance(events[-1], Token) and events[-1].text == "Hi Lance, I added the swim lessons."
    assert [e for e in events if isinstance(e, Token)] == [events[-1]]


def test_every_change_kind_is_noted(agent, model):
    session = ChatSession(agent, "Lance")
    model.add("task_maistro", route("todo"), say("Added."))
    model.add("update_todos", calls(todo("Fix lock", solutions=["Locksmith"]), todo("Call Toyota", solutions=["Phone"])))
    list(session.send("Fix the lock and call Toyota."))
    model.add("task_maistro", route("todo"), say("Done and removed."))
    model.add(
        "update_todos",
        lambda messages, tools: calls(
            *patch_where("Fix lock", replace("/status", "done"))(messages, tools).tool_calls,
            *remove_where("Call Toyota")(messages, tools).tool_calls,
        ),
    )
    notes = [e.text for e in session.send("The lock is fixed; forget Toyota.") if isinstance(e, Note)]
    assert notes == ["ToDo done: Fix lock", "ToDo removed: Call Toyota"]


def test_sending_the_failed_message_again_resumes_the_turn_without_repeating_it(agent, model):
    def endpoint_down(_messages, _tools):
        raise ConnectionError("endpoint down")

    session = ChatSession(agent, "Lance", "t1")
    model.add("task_maistro", route("todo"), say("Added the dentist."))
    model.add("update_todos", endpoint_down)
    with pytest.raises(ConnectionError):
        list(session.send("Book a dentist."))

    model.add("update_todos", calls(todo("Book a dentist", solutions=["Dr. Lee"])))
    events = list(session.send("Book a dentist."))

    assert [e.text for e in events] == ["ToDo added: Book a dentist", "Added the dentist."]
    history = agent.get_state(session.config).values["messages"]
    assert [m.type for m in history] == ["human", "ai", "tool", "ai"]
    assert list(todos(agent)) == ["Book a dentist"]
    assert model.remaining() == {}


def test_a_different_message_after_a_failure_starts_a_new_turn(agent, model):
    def endpoint_down(_messages, _tools):
        raise ConnectionError("endpoint down")

    session = ChatSession(agent, "Lance", "t1")
    model.add("task_maistro", endpoint_down, say("Hello again."))
    with pytest.raises(ConnectionError):
        list(session.send("Hi."))

    assert [e.text for e in session.send("Are you there?")] == ["Hello again."]
    assert [m.content for m in agent.get_state(session.config).values["messages"] if isinstance(m, HumanMessage)] == [
        "Hi.",
        "Are you there?",
    ]


def test_tokens_stream_from_an_openai_compatible_endpoint(monkeypatch, tmp_path):
    script = Script()
    script.add("chat", update("todo"), text_reply("I added the dentist appointment to your ToDo list."))
    script.add("todo", tool_calls_reply(("ToDo", {"task": "Book a dentist", "solutions": ["Call Dr. Lee"]})))
    with OpenAIStub(script) as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        events = list(ChatSession(build_graph(tmp_path), "Lance").send("I need to book a dentist."))

    assert events[:2] == [Progress("Updating your ToDo list…"), Note("ToDo added: Book a dentist")]
    tokens = [e.text for e in events[2:]]
    assert len(tokens) > 5 and "".join(tokens) == "I added the dentist appointment to your ToDo list."


def test_a_reply_held_back_while_it_may_be_a_call_is_shown_once(monkeypatch, tmp_path):
    """A reply given beside its calls that starts like a call written as text is held back until it is stored;
    the chat node stores it again after the calls' answers (reply last), and it is still shown once."""
    reply = '{"task": "Book a dentist"} is going on your ToDo list.'
    script = Script()
    script.add("chat", update("todo", content=reply))
    script.add("todo", tool_calls_reply(("ToDo", {"task": "Book a dentist", "solutions": ["Call Dr. Lee"]})))
    with OpenAIStub(script) as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        events = list(ChatSession(build_graph(tmp_path), "Lance").send("I need to book a dentist."))

    assert [event.text for event in events if isinstance(event, Token)] == [reply]
    assert Note("ToDo added: Book a dentist") in events


@pytest.mark.parametrize("reply", ["Noted the dentist.", "Noted the dentist.\n", "Noted the dentist.  "])
@pytest.mark.parametrize("timing", ["first", "after_updates"])
def test_the_notice_that_a_message_was_cut_comes_once_on_a_memory_turn(monkeypatch, tmp_path, reply, timing):
    """Whether the reply ends in whitespace or not, and whichever message of the turn carries it, the sentence
    that the user's message was cut is shown exactly once, apart from the reply's words."""
    monkeypatch.setenv("MAISTRO_REPLY_TIMING", timing)
    script = Script()
    if timing == "first":
        script.add("chat", update("todo", content=reply))
    else:
        script.add("chat", update("todo"), text_reply(reply))
    script.add("todo", tool_calls_reply(("ToDo", {"task": "Book a dentist", "solutions": ["Call Dr. Lee"]})))
    with OpenAIStub(script) as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        events = list(ChatSession(build_graph(tmp_path), "Lance").send("I need a dentist. " + "word " * 40_000))

    notices = [event.text for event in events if isinstance(event, Notice)]
    assert len(notices) == 1 and notices[0].startswith("(Your message was 200,018 characters long")
    assert "".join(event.text for event in events if isinstance(event, Token)).strip() == "Noted the dentist."


def test_a_stopped_turn_reports_the_message_and_the_memory_changes_it_saved(agent, model):
    def endpoint_down(_messages, _tools):
        raise ConnectionError("endpoint down")

    session = ChatSession(agent, "Lance", "t1")
    model.add("task_maistro", say("Hello."))
    list(session.send("Hi."))
    model.add("task_maistro", route("todo"), endpoint_down)
    model.add("update_todos", calls(todo("Book a dentist", solutions=["Dr. Lee"])))
    with pytest.raises(ConnectionError):
        list(session.send("Book a dentist."))

    assert session.stopped_turn() == StoppedTurn(message_saved=True, notes=["ToDo added: Book a dentist"])


def test_another_users_thread_is_refused(agent, model):
    model.add("task_maistro", say("Hello Ann."))
    list(ChatSession(agent, "Ann", "ann-1").send("Hi."))

    with pytest.raises(ThreadOwnerError):
        ChatSession(agent, "Lance", "ann-1")
    assert ChatSession(agent, "Ann", "ann-1").thread_id == "ann-1"
    assert ChatSession(agent, "Lance", "new-thread").thread_id == "new-thread"


def test_a_thread_open_in_another_session_is_left_for_a_new_one(tmp_path, model):
    agent = build_graph(tmp_path, chat_model=lambda _settings: model)
    first = ChatSession(agent, "Lance", "t1", locks=FileThreadLocks(tmp_path))
    second = ChatSession(agent, "Lance", "t1", locks=FileThreadLocks(tmp_path))

    assert (first.thread_id, first.busy_thread) == ("t1", None)
    assert second.busy_thread == "t1" and second.thread_id != "t1"

    first.new_thread()
    third = ChatSession(agent, "Lance", "t1", locks=FileThreadLocks(tmp_path))
    assert (third.thread_id, third.busy_thread) == ("t1", None), "/new let go of the old thread"
