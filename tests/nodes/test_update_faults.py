"""Memory updates from models that misbehave: nothing doubles, and nothing is lost without the user being told.

Graph-level with the scripted model, then end to end through ChatOpenAI against the strict stub (which, like
Ollama, answers an extraction in text when told to, whatever its `tool_choice`).
"""

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from typer.testing import CliRunner

from graph import DEFAULT_MEMORY_KINDS, build_graph, close_graph
from graph.app.cli import app
from graph.app.session import ChatSession, Note
from graph.memory.kinds import TODO as TODO_KIND
from graph.memory.pending import list_pending
from graph.memory.store import namespace, read_kind
from graph.nodes.update import MEMORY_UPDATE_EVENT
from prompts import (
    DOCUMENT_UNCHANGED,
    EMPTY_TEXT_PROBLEM,
    EXTRACTION_FAILED,
    MALFORMED_PROBLEM,
    TEXT_ANSWER_PROBLEM,
)
from testing.bookkeeping import assert_tool_calls_answered
from testing.custom_kinds import CONTACT
from testing.helpers import config, instructions_of, kept, profile_of, todos, turn
from testing.openai_stub import text_reply, tool_calls_reply
from testing.scripted_model import calls, document, existing_ids, patch, route, say, todo
from testing.stored_names import PROFILE, TODO
from testing.stub_script import update

DENTIST = "Book a dentist appointment"
MILK = {"task": "Buy milk", "time_to_complete": None, "deadline": None, "solutions": [], "status": "not started"}


def custom_events(agent, text: str) -> list[dict]:
    """The `memory_update` events of one turn streamed with `stream_mode="custom"`."""
    parts = agent.stream({"messages": [HumanMessage(text)]}, config(), stream_mode="custom")
    return [part[MEMORY_UPDATE_EVENT] for part in parts]


# Nothing doubles.


def stored_todos(agent) -> list[dict]:
    """Every ToDo document stored for Lance (`todos` keys them by task, which would hide a double)."""
    return [item.value for item in read_kind(agent.store, TODO_KIND, "Lance")]


def test_the_same_insert_twice_in_one_extraction_is_stored_once(agent, model):
    model.add("task_maistro", route("todo", content="Added the dentist and both calls."))
    twice = [todo(DENTIST, solutions=["Call Dr. Lee"]), todo(f"  {DENTIST.lower()} ", solutions=["call  Dr. Lee"])]
    monday = todo("Call mom", deadline="2025-06-02T10:00:00-07:00")
    friday = todo("Call mom", deadline="2025-06-06T10:00:00-07:00")
    model.add("update_todos", calls(*twice, monday, friday))

    thread = turn(agent, "Remind me to book a dentist, and to call mom on Monday and again on Friday.")

    stored = stored_todos(agent)
    assert [item["task"] for item in stored].count(DENTIST) == 1 and len(stored) == 3
    assert sorted(item["deadline"] for item in stored if item["task"] == "Call mom") == [
        "2025-06-02T10:00:00-07:00",
        "2025-06-06T10:00:00-07:00",
    ], "the same summary with another deadline is another task"
    assert thread[-2].text == f"ToDo list changes:\ncreated: {DENTIST}\ncreated: Call mom\ncreated: Call mom"


def test_an_insert_of_a_document_already_stored_adds_nothing(agent, model):
    agent.store.put(namespace(TODO, "Lance"), "milk", MILK)
    model.add("task_maistro", route("todo", content="Added milk."), say("Milk was on your list already."))
    model.add("update_todos", calls(todo("Buy milk")))

    thread = turn(agent, "Add milk to my list.")

    assert stored_todos(agent) == [MILK]
    assert thread[-1].text == "Milk was on your list already.", "a collection update that changed nothing is told"


def test_duplicate_routing_calls_of_one_kind_run_one_update_and_store_once(agent, model):
    model.add("task_maistro", route("todo", "todo", content="Added the dentist."))
    model.add("update_todos", calls(todo(DENTIST), todo(DENTIST)))

    thread = turn(agent, "Remind me to book a dentist, the dentist!")

    assert_tool_calls_answered(thread)
    assert [item["task"] for item in stored_todos(agent)] == [DENTIST] and len(model.calls_in("update_todos")) == 1


def test_every_collection_kind_stores_a_repeated_insert_once(model, tmp_path):
    agent = build_graph(tmp_path, chat_model=lambda _: model, memory_kinds=[*DEFAULT_MEMORY_KINDS, CONTACT])
    try:
        ada = {"name": "Ada", "phone": "555-0100"}
        model.add("task_maistro", route("contact", content="Saved Ada."))
        model.add("update_contact", calls(document("Contact", **ada), document("Contact", **ada)))

        turn(agent, "My sister Ada's number is 555-0100.")

        assert [item.value["name"] for item in read_kind(agent.store, CONTACT, "Lance")] == ["Ada"]
    finally:
        close_graph(agent)


# Never silent.


def test_a_profile_extraction_answered_in_text_is_a_failed_update_the_user_hears(agent, model):
    model.add("task_maistro", route("user", content="Nice to meet you, Lance!"), say("Sorry, I could not save your profile."))
    model.add("update_profile", say("The user is called Lance and lives in Oakland."))

    events = custom_events(agent, "I'm Lance from Oakland.")

    thread = agent.get_state(config()).values["messages"]
    assert thread[2].status == "error"
    assert thread[2].text == EXTRACTION_FAILED.format(memory="profile", problem=TEXT_ANSWER_PROBLEM)
    assert events == [
        {
            "kind": "profile",
            "tool_call_id": thread[1].tool_calls[0]["id"],
            "notes": [f"Profile not updated: the update failed{kept(agent.store)}"],
            "failed": True,
            "changes": [],
            "pending": list_pending(agent.store, "Lance")[0].id,
        }
    ]
    assert thread[-1].text == "Sorry, I could not save your profile." and profile_of(agent) is None
    assert len(model.calls_in("task_maistro")) == 2, "the follow-up reply says so"


def test_an_extraction_answered_in_text_fails_where_a_patch_without_patches_changes_nothing(agent, model):
    agent.store.put(namespace(TODO, "Lance"), "milk", MILK)
    agent.store.put(namespace(PROFILE, "Lance"), "user_profile", {"name": "Lance"})
    model.add("task_maistro", route("todo", content="Marked the milk done."), say("Sorry, that did not save."))
    model.add("update_todos", say("I would mark the milk as done."))

    thread = turn(agent, "The milk is done.")

    assert thread[2].status == "error" and TEXT_ANSWER_PROBLEM in thread[2].text
    assert todos(agent)["Buy milk"]["status"] == "not started" and thread[-1].text == "Sorry, that did not save."

    model.add("task_maistro", route("user", content="Good to hear from you, Lance."))
    model.add("update_profile", lambda messages, tools: calls(patch(next(iter(existing_ids(messages))))))
    chat_calls = len(model.calls_in("task_maistro"))

    thread = turn(agent, "Lance here again.")

    assert thread[-2].status == "success" and thread[-2].text == DOCUMENT_UNCHANGED.format(memory="profile")
    assert thread[-1].text == "Good to hear from you, Lance." and len(model.calls_in("task_maistro")) == chat_calls + 1


def test_a_malformed_extraction_call_is_a_failed_update(agent, model):
    malformed = AIMessage(
        content="",
        invalid_tool_calls=[{"name": "ToDo", "args": '{"task": "Book a dentist", ', "id": "bad", "error": "cut short"}],
    )
    model.add("task_maistro", route("todo", content="Added the dentist."), say("Sorry, the dentist did not save."))
    model.add("update_todos", malformed)

    thread = turn(agent, "Remind me to book a dentist.")

    assert thread[2].status == "error" and MALFORMED_PROBLEM in thread[2].text and todos(agent) == {}
    assert thread[-1].text == "Sorry, the dentist did not save."


def test_an_empty_text_rewrite_is_a_failed_update(agent, model):
    model.add("task_maistro", route("instructions", content="Noted."), say("Sorry, I could not save that preference."))
    model.add("update_instructions", say(""))

    thread = turn(agent, "Always add a local shop to my ToDos.")

    assert thread[2].status == "error" and EMPTY_TEXT_PROBLEM in thread[2].text and instructions_of(agent) is None
    assert thread[-1].text == "Sorry, I could not save that preference."


def test_a_refused_call_sends_a_failed_memory_update_event(agent, model):
    calendar = AIMessage(content="", tool_calls=[{"name": "UpdateMemory", "args": {"update_type": "calendar"}, "id": "cal"}])
    model.add("task_maistro", calendar, say("I keep no calendar, sorry."))

    events = custom_events(agent, "Put the dentist in my calendar.")

    assert [(event["kind"], event["tool_call_id"], event["failed"]) for event in events] == [(None, "cal", True)]
    assert "calendar" in events[0]["notes"][0]
    assert agent.get_state(config()).values["messages"][-1].text == "I keep no calendar, sorry."


# End to end through ChatOpenAI and the strict stub.


@pytest.fixture
def served(stub, tmp_path):
    agent = build_graph(tmp_path)
    yield agent
    close_graph(agent)


def test_an_extraction_answered_in_text_through_chat_openai_is_told_in_the_chat(served, stub, script):
    script.add("chat", update("todo", content="I'll add the dentist."), text_reply("Sorry, the dentist did not save."))
    script.add("todo", text_reply("Sure! I have added 'Book a dentist' to the list."))

    events = list(ChatSession(served, "Lance").send("I need to book a dentist."))

    notes = [event for event in events if isinstance(event, Note)]
    assert notes == [Note(f"ToDo list not updated: the update failed{kept(served.store)}", failed=True)]
    tokens = "".join(event.text for event in events if hasattr(event, "message_id"))
    assert tokens == "I'll add the dentist.Sorry, the dentist did not save."
    assert todos(served) == {} and script.seen == ["chat", "todo", "chat"] and stub.rejections == []


def test_a_repeated_insert_with_a_repeated_id_through_chat_openai_is_stored_once(served, stub, script):
    script.add("chat", update("todo", content="Added the dentist."))
    ada = ("ToDo", {"task": DENTIST, "solutions": ["Call Dr. Lee"]}, "call_same")
    script.add("todo", tool_calls_reply(ada, ada))

    result = served.invoke({"messages": [HumanMessage("Remind me to book a dentist.")]}, config())

    assert [item["task"] for item in stored_todos(served)] == [DENTIST]
    assert result["messages"][-1].text == "Added the dentist."
    assert stub.rejections == []


def test_maistro_chat_prints_a_failed_update_on_its_own_line_and_the_reply_that_says_so(stub, script):
    script.add("chat", update("user", content="Nice to meet you, Lance!"), text_reply("Sorry, your profile did not save."))
    script.add("profile", text_reply("The user's name is Lance."))

    result = CliRunner().invoke(app, ["chat", "--user", "Lance"], input="I'm Lance.\n")

    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[::2] == ["Nice to meet you, Lance!", "Sorry, your profile did not save."] and len(lines) == 3
    assert lines[1].startswith("✗ Profile not updated: the update failed (kept as pending change ")
