"""Answer first (`reply_timing="first"`, the default): a memory turn's reply comes with its UpdateMemory calls, in
one model call, and a second chat call happens only when the reply cannot stand; "after_updates" keeps the
tutorial's flow. Graph-level, with the scripted model."""

import pytest
from langchain_core.messages import AIMessage

from graph.memory.store import namespace
from graph.nodes.update import MEMORY_UPDATE_EVENT
from graph.thread.reply_last import calls_message_id
from prompts import DROPPED_PATCH_PROBLEM, EXTRACTION_FAILED, REPLY_AFTER_UPDATES_RULE, REPLY_FIRST_RULE
from testing.bookkeeping import assert_tool_calls_answered
from testing.helpers import config, kept, profile_of, todos, turn
from testing.scripted_model import calls, document, patch, profile, replace, route, say, sequential_calls, todo
from testing.stored_names import TODO

DENTIST = "Book a dentist appointment"
CARD = "4111 1111 1111 1111"
MILK_KEY = "milk"


def unusable(messages, tools):
    """An extraction whose output can never be used (trustcall retries it until it gives up)."""
    raise ValueError("model returned garbage")


def with_milk(agent) -> None:
    """Give the user one ToDo, so a ToDo update has a document to work on (and to fail on)."""
    milk = {"task": "Buy milk", "time_to_complete": None, "deadline": None, "solutions": [], "status": "not started"}
    agent.store.put(namespace(TODO, "Lance"), MILK_KEY, milk)


def test_a_reply_beside_its_calls_ends_the_turn_without_a_second_chat_call(agent, model):
    model.add("task_maistro", route("todo", content="I'll add the dentist to your list."))
    model.add("update_todos", calls(todo(DENTIST, solutions=["Call Oakland Dental"])))

    thread = turn(agent, "Remind me to book a dentist.")

    assert [m.type for m in thread] == ["human", "ai", "tool", "ai"], "the turn ends with its reply"
    assert thread[1].tool_calls and thread[1].text == "" and thread[2].status == "success"
    assert thread[-1].text == "I'll add the dentist to your list." and not thread[-1].tool_calls
    assert list(todos(agent)) == [DENTIST]
    assert [call.node for call in model.calls] == ["task_maistro", "update_todos"]
    assert REPLY_FIRST_RULE in model.calls[0].system
    assert sequential_calls(model.calls) == 2

    def sees_the_new_todo(messages, tools):
        assert_tool_calls_answered(messages)
        return say("Your list has the dentist." if DENTIST in messages[-2].text else "Your list is empty.")

    model.add("task_maistro", sees_the_new_todo)
    thread = turn(agent, "What is on my list?")

    assert thread[-1].text == "Your list has the dentist."
    history = [m for m in model.calls[-1].messages[1:] if m.type != "system"]
    assert [(m.type, m.text) for m in history] == [
        ("human", "Remind me to book a dentist."),
        ("ai", "I'll add the dentist to your list."),
        ("human", "What is on my list?"),
    ], "the ended turn reaches the prompt without its tool-call bookkeeping"


def test_two_memories_update_in_parallel_after_one_chat_call(agent, model):
    model.add("task_maistro", route("user", "todo", content="Welcome to Oakland! I'll add the dentist."))
    model.add("update_profile", calls(profile(location="Oakland")))
    model.add("update_todos", calls(todo(DENTIST, solutions=["Call Oakland Dental"])))

    thread = turn(agent, "I moved to Oakland and need to book a dentist.")

    assert [m.type for m in thread] == ["human", "ai", "tool", "tool", "ai"]
    assert profile_of(agent)["location"] == "Oakland" and list(todos(agent)) == [DENTIST]
    assert "Profile updated: location." in [m.text for m in thread[2:]], "the report names only what was filled in"
    assert len(model.calls_in("task_maistro")) == 1 and len(model.calls) == 3
    assert sequential_calls(model.calls) == 2, "the two extractions wait only for the chat call, not for each other"


def test_calls_without_text_get_their_reply_after_the_updates(agent, model):
    model.add("task_maistro", route("todo"), say("Your list now has the dentist, and nothing else."))
    model.add("update_todos", calls(todo(DENTIST, solutions=["Call Oakland Dental"])))

    thread = turn(agent, "Add the dentist and show me my list.")

    assert [m.type for m in thread] == ["human", "ai", "tool", "ai"]
    assert [call.node for call in model.calls] == ["task_maistro", "update_todos", "task_maistro"]
    answers = [m.text for m in model.calls[-1].messages if m.type == "tool"]
    assert answers == [f"ToDo list changes:\ncreated: {DENTIST}"], "the reply after the update hears what it changed"


def test_a_failed_update_is_told_in_the_same_turn(agent, model):
    with_milk(agent)
    model.add("task_maistro", route("todo", content="Added the dentist."))
    model.add("update_todos", *([unusable] * 40))

    def corrects_itself(messages, tools):
        assert_tool_calls_answered(messages)
        failed = [m for m in messages if m.type == "tool" and "update failed" in m.text]
        return say("Sorry, I could not save the dentist after all." if failed else "All saved.")

    model.add("task_maistro", corrects_itself)

    thread = turn(agent, "Remind me to book a dentist.")

    assert [m.type for m in thread] == ["human", "ai", "tool", "ai"]
    assert thread[2].status == "error"
    assert thread[-1].text == "Sorry, I could not save the dentist after all."
    assert list(todos(agent)) == ["Buy milk"]


def never_valid(messages, tools):
    """Extraction output that never validates: a ToDo without its task, and a repair of nothing."""
    if "ToDo" in tools:
        return calls(document("ToDo", solutions=["Call Oakland Dental"]))
    return calls({"name": tools[0], "args": {"json_doc_id": "nothing"}, "id": "repair", "type": "tool_call"})


def test_calls_that_never_validate_are_a_failed_update_told_in_the_same_turn(agent, model):
    model.add("task_maistro", route("todo", content="Adding the dentist."), say("Sorry, the dentist did not save."))
    model.standing["update_todos"] = never_valid

    thread = turn(agent, "Remind me to book a dentist.")

    assert [m.type for m in thread] == ["human", "ai", "tool", "ai"]
    assert thread[2].status == "error" and "update failed" in thread[2].text
    assert thread[-1].text == "Sorry, the dentist did not save." and todos(agent) == {}


def test_a_todo_update_that_changes_nothing_is_told_in_the_same_turn(agent, model):
    with_milk(agent)
    model.add("task_maistro", route("todo", content="Marked the milk done."), say("Hm, the milk is done already."))
    model.add("update_todos", calls(patch(MILK_KEY)))

    thread = turn(agent, "The milk is done.")

    assert [m.type for m in thread] == ["human", "ai", "tool", "ai"]
    assert thread[2].text == "No changes were made to the ToDo list." and thread[2].status == "success"
    assert thread[-1].text == "Hm, the milk is done already."


def test_a_patch_of_a_todo_that_does_not_exist_is_a_failed_update_told_in_the_same_turn(agent, model):
    with_milk(agent)
    model.add("task_maistro", route("todo", content="Marked the milk done."), say("Hm, I could not find that task."))
    model.add("update_todos", calls(patch("no-such-id", replace("/status", "done"))))

    thread = turn(agent, "The milk is done.")

    assert [m.type for m in thread] == ["human", "ai", "tool", "ai"]
    assert thread[2].status == "error" and thread[2].text == EXTRACTION_FAILED.format(
        memory="ToDo list", problem=DROPPED_PATCH_PROBLEM
    )
    assert thread[-1].text == "Hm, I could not find that task." and todos(agent)["Buy milk"]["status"] == "not started"


def test_a_secret_kept_out_of_memory_is_told_in_the_same_turn(agent, model):
    model.add("task_maistro", route("todo", content="Saved, card and all."))
    model.add("update_todos", calls(todo(f"Pay the dentist with card {CARD}", solutions=["Online"])))
    model.add("task_maistro", say("I saved the task, but never card numbers."))

    thread = turn(agent, f"Pay the dentist with my card {CARD}.")

    assert [m.type for m in thread] == ["human", "ai", "tool", "ai"]
    assert "Not saved: card number." in thread[2].text and thread[2].artifact["secrets"] == ["card number"]
    assert thread[-1].text == "I saved the task, but never card numbers."


def test_an_invalid_call_beside_the_reply_is_told_in_the_same_turn(agent, model):
    mixed = AIMessage(
        content="Added milk and put it in your calendar.",
        tool_calls=[
            {"name": "UpdateMemory", "args": {"update_type": "todo"}, "id": "good"},
            {"name": "UpdateMemory", "args": {"update_type": "calendar"}, "id": "bad"},
        ],
    )
    model.add("task_maistro", mixed, say("Milk is on your list; I keep no calendar, though."))
    model.add("update_todos", calls(todo("Buy milk", solutions=["Corner shop"])))

    thread = turn(agent, "Add milk and put it in my calendar.")

    assert_tool_calls_answered(thread)
    assert thread[-1].text == "Milk is on your list; I keep no calendar, though."
    assert list(todos(agent)) == ["Buy milk"] and len(model.calls_in("task_maistro")) == 2


def test_the_loop_breaker_holds_when_every_reply_given_first_is_followed_by_a_failure(agent, model):
    model.standing["task_maistro"] = lambda messages, tools: (
        route("todo", content="Trying to save it.") if "UpdateMemory" in tools else say("I could not save it, sorry.")
    )
    model.standing["update_todos"] = never_valid

    thread = turn(agent, "Remind me to book a dentist.")

    assert_tool_calls_answered(thread)
    assert [bool(call.tool_names) for call in model.calls_in("task_maistro")] == [True, True, True, False]
    assert thread[-1].text == "I could not save it, sorry." and todos(agent) == {}


def test_the_tutorial_timing_replies_after_the_updates(agent, model):
    model.add("task_maistro", route("todo", content="Let me save that."), say("Added the dentist."))
    model.add("update_todos", calls(todo(DENTIST, solutions=["Call Oakland Dental"])))

    thread = turn(agent, "Remind me to book a dentist.", reply_timing="after_updates")

    assert [m.type for m in thread] == ["human", "ai", "tool", "ai"] and thread[-1].text == "Added the dentist."
    assert REPLY_AFTER_UPDATES_RULE in model.calls[0].system and REPLY_FIRST_RULE not in model.calls[0].system
    assert sequential_calls(model.calls) == 3


def test_a_kill_between_the_reply_and_the_commit_saves_once_before_the_next_message(agent, model):
    def killed(messages, tools):
        raise RuntimeError("process died before the update committed")

    model.add("task_maistro", route("todo", content="I'll remember the plants."))
    model.add("update_todos", killed)
    with pytest.raises(RuntimeError, match="died"):
        turn(agent, "Remind me to water the plants.")
    cut_short = agent.get_state(config()).values["messages"]
    reply, calling = cut_short[-2:]
    assert reply.text == "I'll remember the plants." and calling.tool_calls and calling.id == calls_message_id(reply.id)
    assert todos(agent) == {}

    def strict_reply(messages, tools):
        assert_tool_calls_answered(messages)
        return say("Hello!")

    model.add("update_todos", calls(todo("Water the plants")))
    model.add("task_maistro", strict_reply)
    chat_calls = len(model.calls_in("task_maistro"))
    thread = turn(agent, "Hello?")

    assert list(todos(agent)) == ["Water the plants"]
    assert [m.type for m in thread] == ["human", "ai", "tool", "human", "ai"]
    assert len(model.calls_in("task_maistro")) == chat_calls + 1, "the resumed update needs no chat model call"
    assert [(m.type, m.text) for m in model.calls[-1].messages[1:] if m.type != "system"] == [
        ("human", "Remind me to water the plants."),
        ("ai", "I'll remember the plants."),
        ("human", "Hello?"),
    ]


def test_the_updates_stream_their_notes_as_custom_events(agent, model):
    with_milk(agent)
    model.add("task_maistro", route("user", "todo", content="Noted."))
    model.add("update_profile", calls(profile(location="Oakland")))
    model.add("update_todos", *([unusable] * 40))
    model.add("task_maistro", say("The dentist did not save, sorry."))

    events = [
        payload[MEMORY_UPDATE_EVENT]
        for payload in agent.stream(
            {"messages": [("user", "I moved to Oakland; remind me about the dentist.")]}, config(), stream_mode="custom"
        )
    ]

    by_kind = {event["kind"]: event for event in events}
    assert by_kind["profile"]["notes"] == ["Profile updated (location)"] and not by_kind["profile"]["failed"]
    assert by_kind["todo"] == {**by_kind["todo"], "notes": [f"ToDo list not updated: the update failed{kept(agent.store)}"], "failed": True}
    routing = agent.get_state(config()).values["messages"][1]
    assert {event["tool_call_id"] for event in events} == {call["id"] for call in routing.tool_calls}


def test_a_cut_message_gets_its_notice_on_the_reply_given_first(agent, model):
    huge = "Plan my week: " + "buy groceries, call the plumber, renew the car insurance; " * 1800
    model.add("task_maistro", route("todo", content="Added your plan."))
    model.add("update_todos", calls(todo("Plan the week", solutions=["Groceries first"])))

    thread = turn(agent, huge)

    assert thread[-1].text.startswith(f"(Your message was {len(huge):,} characters long; I read only the first")
    assert thread[-1].text.endswith("Added your plan.") and len(model.calls_in("task_maistro")) == 1
