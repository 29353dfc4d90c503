"""The tutorial's conversation (the script the demo plays), with the exact store state checked after every turn."""

from datetime import datetime

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from graph.app.tutorial import LANCE, LOCAL_VENDORS, LOCK, SWIM, TOYOTA, end_of_november, tutorial_turns
from graph.run_context import RunContext
from testing.helpers import instructions_of, profile_of, todos, turn

# What the update node answers the routing call with, by turn.
TOOL_ANSWERS = {
    "swim": f"ToDo list changes:\ncreated: {SWIM}",
    "lock": f"ToDo list changes:\ncreated: {LOCK}\nupdated: {SWIM} (solutions)",
    "remove toyota": f"ToDo list changes:\ndeleted: {TOYOTA}",
    "lock done": f"ToDo list changes:\nupdated: {LOCK} (status, completed_at)",
}


@pytest.mark.parametrize("reply_timing", ["first", "after_updates"])
def test_tutorial_conversation(agent, model, reply_timing):
    turns = tutorial_turns(end_of_november(RunContext()), reply_timing)
    # Either way a memory turn ends with its reply (given first, it moves after the update's answer: no second
    # chat call).
    shape = [HumanMessage, AIMessage, ToolMessage, AIMessage]
    for played in turns:
        for node, replies in played.replies.items():
            model.add(node, *replies)
        thread = turn(agent, played.message, thread_id="2" if played.new_thread else "1", reply_timing=reply_timing)

        stored = todos(agent)
        finished = {task: todo.pop("completed_at") for task, todo in stored.items() if "completed_at" in todo}
        assert stored == played.todos, played.key
        assert set(finished) == {task for task, todo in stored.items() if todo["status"] == "done"}, "done ones say when"
        assert profile_of(agent) == LANCE
        if played.key in TOOL_ANSWERS:
            assert thread[2 - len(shape)].content == TOOL_ANSWERS[played.key]
        if played.key == "profile":
            assert [type(m) for m in thread] == shape
            assert thread[2].tool_call_id == thread[1].tool_calls[0]["id"]
            assert instructions_of(agent) is None
        if played.key == "instructions":
            # Rewritten with one model call.
            assert instructions_of(agent) == LOCAL_VENDORS and len(model.calls_in("update_instructions")) == 1
        if played.key == "lock":
            # The instructions shape the ToDo extraction.
            assert LOCAL_VENDORS in model.calls_in("update_todos")[-1].system
        if played.key == "deadline":
            # "End of November" became a real date: the prompt carries today's date, year and zone.
            prompt = model.calls_in("update_todos")[-1].system
            assert str(datetime.now().year) in prompt and ("PST" in prompt or "PDT" in prompt)
        if played.key == "recall":
            # A new thread recalls the list from the store.
            recall = model.calls_in("task_maistro")[-1].system
            assert all(text in recall for text in (SWIM, LOCK, "Lance"))
            assert [m.type for m in thread] == ["human", "ai"]
            assert "swim lessons" in thread[-1].text

    assert len(agent.get_state({"configurable": {"thread_id": "1"}}).values["messages"]) == 8 * len(shape)
    assert model.remaining() == {}
