"""Graph-level behaviour with a scripted model: routing, bookkeeping, limits, replays and bad model output."""

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.base import PutOp

from graph.memory.changes import HISTORY
from graph.memory.store import SOURCES, namespace
from graph.nodes.chat import MAX_RESUME_ATTEMPTS
from testing.bookkeeping import assert_tool_calls_answered
from testing.helpers import config, profile_of, todos, turn
from testing.scripted_model import (
    calls,
    patch,
    patch_where,
    profile,
    replace,
    route,
    say,
    sequential_calls,
    todo,
)
from testing.stored_names import TODO

DENTIST = "Book a dentist appointment"


def test_two_memories_in_one_message_update_in_parallel(agent, model):
    model.add("task_maistro", route("user", "todo"), say("Noted the move, and I added the dentist."))
    model.add("update_profile", calls(profile(location="Oakland")))
    model.add("update_todos", calls(todo(DENTIST, solutions=["Call Oakland Dental"])))

    thread = turn(agent, "I moved to Oakland and need to book a dentist.")

    assert [m.type for m in thread] == ["human", "ai", "tool", "tool", "ai"]
    assert {m.tool_call_id for m in thread[2:4]} == {c["id"] for c in thread[1].tool_calls}
    assert profile_of(agent)["location"] == "Oakland"
    assert list(todos(agent)) == [DENTIST]
    assert len(model.calls_in("task_maistro")) == 2
    assert len(model.calls) == 4
    assert sequential_calls(model.calls) == 3


def test_loop_breaker_answers_without_tools_after_the_limit(agent, model):
    model.add("task_maistro", route("todo"), route("todo"), route("todo"), say("All saved."))
    model.add("update_todos", *(calls(todo(f"Task {n}", solutions=["Do it"])) for n in range(3)))

    thread = turn(agent, "Add three tasks, one at a time.")

    chat_calls = model.calls_in("task_maistro")
    assert [bool(c.tool_names) for c in chat_calls] == [True, True, True, False]
    assert thread[-1].content == "All saved."
    assert len(todos(agent)) == 3


def route_todo_while_allowed(messages, tools):
    """What a real model does: call UpdateMemory when it is offered, otherwise answer."""
    return route("todo") if "UpdateMemory" in tools else say("Saved what I could.")


def test_loop_limit_is_configurable(agent, model):
    model.add("task_maistro", route_todo_while_allowed, route_todo_while_allowed)
    model.add("update_todos", calls(todo("Only task", solutions=["Do it"])))

    thread = turn(agent, "Add a task.", max_memory_rounds=1)

    assert thread[-1].content == "Saved what I could."
    assert list(todos(agent)) == ["Only task"]


def test_a_small_recursion_limit_never_surfaces_as_an_error(agent, model):
    model.add("task_maistro", route_todo_while_allowed, route_todo_while_allowed)
    model.add("update_todos", calls(todo("First", solutions=["Do it"])))
    run_config = {**config(max_memory_rounds=10), "recursion_limit": 6}

    chunks = list(agent.stream({"messages": [HumanMessage("Add tasks forever")]}, run_config, stream_mode="values"))

    assert chunks[-1]["messages"][-1].content == "Saved what I could."
    assert list(todos(agent)) == ["First"]


def test_tool_calls_made_after_the_limit_are_dropped(agent, model):
    model.add("task_maistro", route("todo"), route("todo"))
    model.add("update_todos", calls(todo("Only task", solutions=["Do it"])))

    thread = turn(agent, "Add a task.", max_memory_rounds=1)

    assert not thread[-1].tool_calls and "limit of memory updates" in thread[-1].content
    assert_tool_calls_answered(thread)
    assert list(todos(agent)) == ["Only task"]


def _cut_short_todo_turn(agent, model) -> list:
    """A ToDo turn whose update node failed: the thread ends with the unanswered routing call."""
    def crash(messages, tools):
        raise RuntimeError("process died mid-update")

    model.add("task_maistro", route("todo"))
    model.add("update_todos", crash)
    with pytest.raises(RuntimeError, match="died"):
        turn(agent, "Remind me to water the plants.")
    broken = agent.get_state(config()).values["messages"]
    assert broken[-1].tool_calls, "the thread ends with an unanswered tool call"
    return broken


def test_a_turn_cut_short_is_finished_before_the_next_message(agent, model):
    routing = _cut_short_todo_turn(agent, model)[-1]
    seen_by_update = []

    def save_the_plants(messages, tools):
        seen_by_update.append([m.content for m in messages[1:]])
        return calls(todo("Water the plants"))

    def strict_reply(messages, tools):
        assert_tool_calls_answered(messages)
        return say("Hello! I saved the plants earlier.")

    model.add("update_todos", save_the_plants)
    model.add("task_maistro", strict_reply)
    thread = turn(agent, "Hello?")

    assert seen_by_update == [["Remind me to water the plants."]], "the update read only the turn it finishes"
    assert [m.type for m in thread] == ["human", "ai", "tool", "human", "ai"]
    assert thread[1].tool_calls == routing.tool_calls and thread[2].tool_call_id == routing.tool_calls[0]["id"]
    assert thread[2].status == "success"
    assert list(todos(agent)) == ["Water the plants"]
    assert len(model.calls_in("task_maistro")) == 2, "finishing the cut-short turn needs no chat model call"


def test_a_turn_cut_short_after_its_update_is_not_extracted_again(agent, model):
    def crash(messages, tools):
        raise RuntimeError("process died before the reply")

    model.add("task_maistro", route("todo"), crash)
    model.add("update_todos", calls(todo("Water the plants")))
    with pytest.raises(RuntimeError, match="died"):
        turn(agent, "Remind me to water the plants.")
    seen_by_update = []

    def call_mom(messages, tools):
        seen_by_update.append([(m.type, m.content) for m in messages[1:]])
        return calls(todo("Call mom"))

    model.add("task_maistro", route("todo"), say("Added."))
    model.add("update_todos", call_mom)
    turn(agent, "Also remind me to call mom.")

    [(first, report, latest)] = seen_by_update
    assert first == ("human", "Remind me to water the plants.") and latest == ("human", "Also remind me to call mom.")
    assert report[0] == "ai" and "Water the plants" in report[1], "the earlier turn reads as answered by its report"
    assert sorted(todos(agent)) == ["Call mom", "Water the plants"]


def test_calls_that_fail_every_time_are_given_up_after_a_few_attempts(agent, model):
    _cut_short_todo_turn(agent, model)

    def crash(messages, tools):
        raise RuntimeError("fails every time")

    for _attempt in range(MAX_RESUME_ATTEMPTS):
        model.add("update_todos", crash)
        with pytest.raises(RuntimeError, match="every time"):
            turn(agent, "Hello?")

    def strict_reply(messages, tools):
        assert_tool_calls_answered(messages)
        return say("Sorry, that did not save. Shall I try again?")

    model.add("task_maistro", strict_reply)
    thread = turn(agent, "Hello?")

    assert_tool_calls_answered(thread)
    assert [m.type for m in thread] == ["human", "ai", "tool", *["human"] * (MAX_RESUME_ATTEMPTS + 1), "ai"]
    assert thread[2].status == "error" and thread[0].content == "Remind me to water the plants."
    assert todos(agent) == {}


def test_update_node_replayed_from_its_checkpoint_writes_once(agent, model):
    model.add("task_maistro", route("todo"), say("Added."), say("Added."))
    model.add("update_todos", *(calls(todo("Water the plants", solutions=["Use the blue can"])) for _ in range(2)))
    turn(agent, "Remind me to water the plants.")
    before_update = next(
        s for s in agent.get_state_history(config()) if s.next == ("update_todos",)
    )

    agent.invoke(None, before_update.config)

    assert list(todos(agent)) == ["Water the plants"]
    assert len(model.calls_in("update_todos")) == 2


def test_unknown_update_type_gets_a_clear_answer_and_changes_nothing(agent, model):
    bad = AIMessage(content="", tool_calls=[{"name": "UpdateMemory", "args": {"update_type": "calendar"}, "id": "c1"}])
    model.add("task_maistro", bad, say("I can only remember your profile, ToDos and instructions."))

    thread = turn(agent, "Put this in my calendar.")

    assert [m.type for m in thread] == ["human", "ai", "tool", "ai"]
    assert thread[2].status == "error" and "update_type must be one of" in thread[2].content
    assert list(agent.store.list_namespaces()) == []


def test_malformed_arguments_get_a_clear_answer(agent, model):
    malformed = AIMessage(
        content="",
        invalid_tool_calls=[{"name": "UpdateMemory", "args": "update_type todo", "id": "c1", "error": "bad JSON"}],
    )
    model.add("task_maistro", malformed, say("Could you say that again?"))

    thread = turn(agent, "Add milk.")

    assert thread[2].tool_call_id == "c1" and "Malformed" in thread[2].content
    assert thread[-1].content == "Could you say that again?"
    assert list(agent.store.list_namespaces()) == []


def test_valid_and_invalid_calls_in_one_message(agent, model):
    mixed = AIMessage(
        content="",
        tool_calls=[
            {"name": "UpdateMemory", "args": {"update_type": "todo"}, "id": "good"},
            {"name": "UpdateMemory", "args": {}, "id": "bad"},
        ],
    )
    model.add("task_maistro", mixed, say("Added milk."))
    model.add("update_todos", calls(todo("Buy milk", solutions=["Corner shop"])))

    thread = turn(agent, "Add milk.")

    assert_tool_calls_answered(thread)
    assert list(todos(agent)) == ["Buy milk"]


def test_patch_for_a_missing_document_changes_nothing_and_fails(agent, model):
    model.add("task_maistro", route("todo"), say("Added."), route("todo"), say("Hmm, nothing changed."))
    model.add("update_todos", calls(todo("Buy milk", solutions=["Corner shop"])))
    turn(agent, "Add milk.")
    before = todos(agent)
    model.add("update_todos", calls(patch("no-such-id", replace("/status", "done"))))

    thread = turn(agent, "Milk is done.")

    assert thread[-2].status == "error" and "update failed" in thread[-2].content
    assert todos(agent) == before


def test_extraction_that_keeps_failing_leaves_the_store_unchanged(agent, model):
    def unusable(messages, tools):
        raise ValueError("model returned garbage")

    model.add("task_maistro", route("todo"), say("Added."), route("todo"), say("Sorry, I could not save that."))
    model.add("update_todos", calls(todo("Buy milk", solutions=["Corner shop"])))
    turn(agent, "Add milk.")
    before = todos(agent)
    model.add("update_todos", *([unusable] * 40))

    thread = turn(agent, "Milk is done.")

    assert "update failed" in thread[-2].content
    assert thread[-1].content == "Sorry, I could not save that."
    assert todos(agent) == before


def test_every_item_is_reachable_in_a_list_of_500(agent, model):
    ns = namespace(TODO, "Lance")
    agent.store.batch(
        [
            PutOp(ns, f"todo-{n:03d}", {"task": f"Task number {n}", "time_to_complete": 5, "deadline": None,
                                        "solutions": ["Just do it"], "status": "not started"})
            for n in range(1, 501)
        ]
    )

    def sees_the_last_item(messages, tools):
        assert "Task number 500" in messages[-2].text, "the context block before the message lists it"
        return route("todo")

    model.add("task_maistro", sees_the_last_item, say("Marked task 500 as done."))
    model.add("update_todos", patch_where("Task number 500", replace("/status", "done")))

    turn(agent, "Task number 500 is done.")

    items = todos(agent)
    assert len(items) == 500
    assert items["Task number 500"]["status"] == "done"
    assert [t for t, v in items.items() if v["status"] == "done"] == ["Task number 500"]


def test_users_are_isolated_and_threads_share_memories(agent, model):
    model.add("task_maistro", route("todo"), say("Added."))
    model.add("update_todos", calls(todo("Lance's secret task", solutions=["Hide it"])))
    turn(agent, "Add my secret task.", user_id="Lance", thread_id="lance-1")

    def bob_sees_nothing(messages, tools):
        assert "secret" not in messages[-2].text
        return say("Your list is empty.")

    def lance_recalls(messages, tools):
        assert "Lance's secret task" in messages[-2].text
        return say("You have one task.")

    model.add("task_maistro", bob_sees_nothing, lance_recalls)
    turn(agent, "What is on my list?", user_id="Bob", thread_id="bob-1")
    lance_new_thread = turn(agent, "What is on my list?", user_id="Lance", thread_id="lance-2")

    assert todos(agent, "Bob") == {}
    assert [m.type for m in lance_new_thread] == ["human", "ai"]


@pytest.mark.parametrize("user_id", ["lance.martin@example.com", "Lance Martin", "张伟", "🦊 fox", "100% sure"])
def test_any_user_id_round_trips(agent, model, user_id):
    model.add("task_maistro", route("todo"), say("Added."), say("You have one task."))
    model.add("update_todos", calls(todo("整理房间", solutions=["周六上午"])))

    turn(agent, "提醒我整理房间", user_id=user_id)

    assert list(todos(agent, user_id)) == ["整理房间"]
    assert set(agent.store.list_namespaces()) == {namespace(TODO, user_id), namespace(HISTORY, user_id), namespace(SOURCES, user_id)}
    turn(agent, "我有什么任务?", user_id=user_id, thread_id="2")
    assert "整理房间" in model.calls_in("task_maistro")[-1].system


def test_missing_or_empty_user_id_uses_the_default_user(agent, model, monkeypatch):
    monkeypatch.setenv("MAISTRO_DEFAULT_USER", "me")
    model.add("task_maistro", route("todo"), say("Added."))
    model.add("update_todos", calls(todo("Stretch", solutions=["Five minutes"])))

    agent.invoke({"messages": [HumanMessage("Remind me to stretch")]}, {"configurable": {"thread_id": "t", "user_id": ""}})

    assert list(todos(agent, "me")) == ["Stretch"]
