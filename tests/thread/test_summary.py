"""Bounded short-term memory: CJK-aware token counts and the rolling summary."""

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from graph.nodes.summary import fold_point
from graph.text_tokens import count_text_tokens
from graph.thread.tokens import count_tokens
from testing.bookkeeping import assert_tool_calls_answered
from testing.helpers import config, todos, turn
from testing.scripted_model import calls, route, say, todo

SUMMARIZER = "You keep a running summary"


def test_chinese_counts_about_one_token_per_character():
    chinese = "我需要在十一月底之前给女儿报名游泳课" * 5
    english = "I need to book swim lessons for my daughter by the end of November. " * 5
    assert len(chinese) * 0.9 <= count_text_tokens(chinese) <= len(chinese) * 1.1
    assert len(english) / 5 <= count_text_tokens(english) <= len(english) / 3
    assert count_tokens([HumanMessage(chinese)]) >= len(chinese)


def test_fold_point_keeps_tool_calls_with_their_answers():
    thread = [
        HumanMessage("a", id="1"),
        AIMessage("", id="2", tool_calls=[{"name": "UpdateMemory", "args": {"update_type": "todo"}, "id": "c"}]),
        ToolMessage("done", tool_call_id="c", id="3"),
        AIMessage("ok", id="4"),
        HumanMessage("b", id="5"),
        AIMessage("ok", id="6"),
    ]
    assert fold_point(thread, keep=3) == 4
    assert fold_point(thread, keep=5) == 4
    assert fold_point(thread, keep=1) == 4, "the tail starts at the last user message"
    assert fold_point(thread[:4], keep=2) == 0, "nothing to fold before the only user message"


def summarizing_chat(messages, tools):
    """Summaries mention how many folds happened; chat turns add a ToDo and confirm."""
    system = messages[0].text
    if system.startswith(SUMMARIZER):
        return say(f"summary #{system.count('summary #') + 1}: the user keeps adding chores.")
    return route("todo") if messages[-1].type == "human" else say("Added that chore. " + "Noted. " * 20)


def chore_extraction(messages, tools):
    request = next(m.text for m in reversed(messages) if m.type == "human")
    return calls(todo(request.split(":")[0], solutions=["Do it"]))


def test_long_thread_folds_into_one_summary_and_the_checkpoint_stops_growing(agent, model):
    model.standing.update({"task_maistro": summarizing_chat, "update_todos": chore_extraction})
    settings = {"summary_trigger_tokens": 400, "messages_kept": 4}
    sizes = []
    for n in range(12):
        turn(agent, f"Chore {n}: " + "please remember this chore in detail. " * 8, **settings)
        state = agent.get_state(config())
        sizes.append(len(state.values["messages"]))

    values = agent.get_state(config()).values
    assert values["summary"].startswith("summary #"), "one summary string in the state"
    summaries = [c for c in model.calls_in("task_maistro") if c.system.startswith(SUMMARIZER)]
    assert len(summaries) >= 3
    assert all("summary #" in c.system for c in summaries[1:]), "each new summary absorbs the previous one"
    assert max(sizes[4:]) <= 8, f"checkpointed messages stay bounded: {sizes}"
    assert values["messages"][0].type == "human"
    assert_tool_calls_answered(values["messages"])
    assert len(todos(agent)) == 12, "folding loses no memory"

    extraction = model.calls_in("update_todos")[-1]
    assert values["summary"] in extraction.system
    assert "Chore 0:" not in " ".join(m.text for m in extraction.messages)


def test_chinese_thread_reaches_the_budget_sooner(agent, model):
    model.standing.update({"task_maistro": summarizing_chat, "update_todos": chore_extraction})
    settings = {"summary_trigger_tokens": 400, "messages_kept": 4}
    for n in range(3):
        turn(agent, f"家务{n}:" + "请详细记住这件家务事。" * 12, **settings)
    assert agent.get_state(config()).values["summary"], "132 Chinese characters a turn pass 400 tokens by the third turn"


def test_ended_turns_reach_the_chat_prompt_without_their_bookkeeping(agent, model):
    model.standing.update({"task_maistro": summarizing_chat, "update_todos": chore_extraction})
    for n in range(3):
        turn(agent, f"Chore {n}: water the plants")

    first_call_of_last_turn = model.calls_in("task_maistro")[-2]
    types = [m.type for m in first_call_of_last_turn.messages]
    assert types == ["system", "human", "ai", "human", "ai", "system", "human"], types
    assert not any(m.type == "ai" and m.tool_calls for m in first_call_of_last_turn.messages)
    answer = model.calls_in("task_maistro")[-1]
    assert [m.type for m in answer.messages][-3:] == ["human", "ai", "tool"], "the current turn keeps its own"
    assert len(agent.get_state(config()).values["messages"]) == 12, "the thread itself keeps everything"


def test_the_summary_also_triggers_on_message_count(agent, model):
    model.standing.update({"task_maistro": summarizing_chat, "update_todos": chore_extraction})
    settings = {"summary_trigger_tokens": 20000, "summary_trigger_messages": 6, "messages_kept": 4}
    for n in range(8):
        turn(agent, f"Chore {n}: call grandma", **settings)

    assert agent.get_state(config()).values["summary"].startswith("summary #")
    chat_prompts = [c for c in model.calls_in("task_maistro") if not c.system.startswith(SUMMARIZER)]
    assert max(len(c.messages) for c in chat_prompts) <= 1 + 6 + 4, "system, past turns, the current turn"
    assert len(todos(agent)) == 8
