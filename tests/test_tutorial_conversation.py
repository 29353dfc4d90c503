"""The tutorial's conversation, turn by turn, with the exact store state checked after every turn."""

from datetime import datetime

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from tests.conftest import instructions_of, profile_of, todos, turn
from graph.scripted_model import add, calls, patch_where, profile, remove_where, replace, route, say, todo

SWIM = "Book swim lessons for 1-year-old daughter."
LOCK = "Fix the jammed electric Yale lock on the door."
TOYOTA = "Call back City Toyota to schedule car service."
LANCE = {
    "name": "Lance",
    "location": "San Francisco",
    "job": None,
    "connections": ["Wife", "1-year-old daughter"],
    "interests": [],
}
LOCAL_VENDORS = (
    "When creating or updating ToDo list items for Lance, include specific local businesses or vendors "
    "in San Francisco."
)


def item(task: str, minutes: int, solutions: list[str], deadline=None, status="not started") -> dict:
    return {"task": task, "time_to_complete": minutes, "deadline": deadline, "solutions": solutions, "status": status}


def test_tutorial_conversation(agent, model):
    # Turn 1: profile.
    model.add("task_maistro", route("user"), say("Got it! How can I assist you today, Lance?"))
    model.add("update_profile", calls(profile(name="Lance", location="San Francisco", connections=LANCE["connections"])))
    thread = turn(agent, "My name is Lance. I live in SF with my wife. I have a 1 year old daughter.")
    assert [type(m) for m in thread] == [HumanMessage, AIMessage, ToolMessage, AIMessage]
    assert thread[2].tool_call_id == thread[1].tool_calls[0]["id"]
    assert profile_of(agent) == LANCE
    assert todos(agent) == {} and instructions_of(agent) is None

    # Turn 2: a first ToDo.
    swim = item(SWIM, 30, ["Check local swim schools in SF", "Look for baby swim classes online"])
    model.add("task_maistro", route("todo"), say(f'I\'ve added "{SWIM}" to your ToDo list.'))
    model.add("update_todos", calls(todo(SWIM, time_to_complete=30, solutions=swim["solutions"])))
    thread = turn(agent, "My wife asked me to book swim lessons for the baby.")
    assert thread[-2].content == f"ToDo list changes:\ncreated: {SWIM}"
    assert todos(agent) == {SWIM: swim}
    assert profile_of(agent) == LANCE

    # Turn 3: instructions, rewritten with one model call.
    model.add("task_maistro", route("instructions"), say("Got it! I'll include local businesses."))
    model.add("update_instructions", say(LOCAL_VENDORS))
    turn(agent, "When creating or updating ToDo items, include specific local businesses / vendors.")
    assert instructions_of(agent) == LOCAL_VENDORS
    assert len(model.calls_in("update_instructions")) == 1
    assert todos(agent) == {SWIM: swim}

    # Turn 4: the Yale lock, plus an update of the swim item; the instructions shape the extraction.
    lock = item(LOCK, 60, ["Contact a local locksmith in SF", "Check Yale's customer support for troubleshooting"])
    swim["solutions"] = [*swim["solutions"], "Contact La Petite Baleen Swim School"]

    def lock_and_swim(messages, tools):
        assert LOCAL_VENDORS in messages[0].text
        swim_update = patch_where("swim", add("/solutions/-", "Contact La Petite Baleen Swim School"))
        return calls(todo(LOCK, time_to_complete=60, solutions=lock["solutions"]), *swim_update(messages, tools).tool_calls)

    model.add("task_maistro", route("todo"), say(f'I\'ve added "{LOCK}" to your ToDo list.'))
    model.add("update_todos", lock_and_swim)
    thread = turn(agent, "I need to fix the jammed electric Yale lock on the door.")
    assert thread[-2].content == f"ToDo list changes:\ncreated: {LOCK}\nupdated: {SWIM} (solutions)"
    assert todos(agent) == {SWIM: swim, LOCK: lock}

    # Turn 5: "end of November" becomes a real date; the prompt carries today's date, year and zone.
    deadline = f"{datetime.now().year}-11-30T23:59:00-08:00"
    swim["deadline"] = deadline
    model.add("task_maistro", route("todo"), say("I've updated the swim lessons task with a deadline."))
    model.add("update_todos", patch_where("swim", replace("/deadline", deadline)))
    turn(agent, "For the swim lessons, I need to get that done by end of November.")
    extraction_prompt = model.calls_in("update_todos")[-1].system
    assert str(datetime.now().year) in extraction_prompt and ("PST" in extraction_prompt or "PDT" in extraction_prompt)
    assert todos(agent) == {SWIM: swim, LOCK: lock}

    # Turn 6: City Toyota.
    toyota = item(TOYOTA, 10, ["Find City Toyota's contact number", "Check car service availability"])
    model.add("task_maistro", route("todo"), say(f'I\'ve added "{TOYOTA}" to your ToDo list.'))
    model.add("update_todos", calls(todo(TOYOTA, time_to_complete=10, solutions=toyota["solutions"])))
    turn(agent, "Need to call back City Toyota to schedule car service.")
    assert todos(agent) == {SWIM: swim, LOCK: lock, TOYOTA: toyota}

    # Turn 7: deletion through trustcall's RemoveDoc; the report names the deleted task.
    model.add("task_maistro", route("todo"), say("Removed the City Toyota task."))
    model.add("update_todos", remove_where("City Toyota"))
    thread = turn(agent, "I already called City Toyota, remove that task.")
    assert thread[-2].content == f"ToDo list changes:\ndeleted: {TOYOTA}"
    assert todos(agent) == {SWIM: swim, LOCK: lock}

    # Turn 8: "it's done" sets the status.
    lock["status"] = "done"
    model.add("task_maistro", route("todo"), say("Marked the Yale lock as done."))
    model.add("update_todos", patch_where("Yale", replace("/status", "done")))
    thread = turn(agent, "The Yale lock is fixed, it's done.")
    assert thread[-2].content == f"ToDo list changes:\nupdated: {LOCK} (status)"
    assert todos(agent) == {SWIM: swim, LOCK: lock}

    # A new thread recalls the list from the store.
    def recall(messages, tools):
        assert SWIM in messages[0].text and LOCK in messages[0].text and "Lance" in messages[0].text
        return say("You could book the swim lessons: it takes about 30 minutes.")

    model.add("task_maistro", recall)
    second = turn(agent, "I have 30 minutes, what tasks can I get done?", thread_id="2")
    assert [m.type for m in second] == ["human", "ai"]
    assert len(agent.get_state({"configurable": {"thread_id": "1"}}).values["messages"]) == 8 * 4
    assert model.remaining() == {}
