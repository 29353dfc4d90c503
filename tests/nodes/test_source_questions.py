"""Asking where a memory came from (issue 34, item 2), through the real ChatOpenAI client against the stub: a turn
that asks "why do you think …?" carries the source of each memory shown (the date and the user's words) in its
prompt, so the answer quotes them; a turn that asks what held before ("where did I live before?") carries the past
facts; any other turn's prompt carries neither, so its length does not grow."""

import re

from langchain_core.messages import HumanMessage

from graph import build_graph, close_graph
from graph.memory.source_lines import asks_about_past, asks_for_source
from testing.helpers import config, profile_of
from testing.openai_stub import system_text, text_reply, tool_calls_reply
from testing.stub_script import kind_of, update

SAID = "I moved to Oakland last week."
SOURCE_LINE = re.compile(r'- profile\.location: on (\d{4}-\d\d-\d\d) the user said: "([^"]*)"')


def answer_from_sources(request: dict) -> dict:
    """A model that answers from the sources in its prompt, or says it has none."""
    found = SOURCE_LINE.search(system_text(request))
    if found is None:
        return text_reply("I have no record of where that came from.")
    return text_reply(f'On {found[1]} you told me: "{found[2]}"')


def test_a_why_question_is_answered_from_the_source_and_other_turns_carry_none(stub, script, tmp_path, monkeypatch):
    monkeypatch.setenv("MAISTRO_CALL_MODE", "tools")
    agent = build_graph(tmp_path)
    script.add("chat", update("user", content="Noted the move."))
    script.add("profile", tool_calls_reply(("Profile", {"name": "Lance", "location": "Oakland"})))
    agent.invoke({"messages": [HumanMessage(SAID)]}, config(thread_id="1"))
    assert profile_of(agent)["location"] == "Oakland"
    script.keep("chat", answer_from_sources)

    other = agent.invoke({"messages": [HumanMessage("What's the weather like there?")]}, config(thread_id="2"))
    asked = agent.invoke({"messages": [HumanMessage("Why do you think I live in Oakland?")]}, config(thread_id="2"))

    chats = [request for request in stub.requests if kind_of(request) == "chat"]
    assert "<sources>" not in system_text(chats[-2]), "a turn that does not ask carries no source"
    assert other["messages"][-1].content == "I have no record of where that came from."
    date = SOURCE_LINE.search(system_text(chats[-1]))[1]
    assert asked["messages"][-1].content == f'On {date} you told me: "{SAID}"'
    close_graph(agent)


def test_the_questions_that_ask_for_a_source_are_recognised():
    for question in ("Why do you think I live in Oakland?", "where did you get that?", "How do you know my job?",
                     "Who told you I have a dog?", "Where's that from?"):
        assert asks_for_source(question), question
    for other in ("Why is the sky blue?", "Where do you think I should go?", "I know how you work."):
        assert not asks_for_source(other), other


def test_the_chinese_questions_that_ask_for_a_source_or_the_past_are_recognised():
    for question in ("你为什么觉得我住在奥克兰?", "你怎么知道我养狗?", "谁告诉你我换工作了?", "这是从哪里来的?",
                     "我什么时候说过要去看牙医?"):
        assert asks_for_source(question), question
    for other in ("为什么天是蓝的?", "你觉得我应该去哪里?", "我知道你怎么工作。"):
        assert not asks_for_source(other), other
    for question in ("我以前住在哪里?", "我之前的工作是什么?", "我原来叫什么名字?"):
        assert asks_about_past(question), question
    for other in ("明天要做什么?", "我住在上海。"):
        assert not asks_about_past(other), other


PAST_LINE = re.compile(r"- profile\.location: (\w+) \(from (\d{4}-\d\d-\d\d) to (\d{4}-\d\d-\d\d)\)")


def answer_from_past(request: dict) -> dict:
    """A model that answers from the past facts in its prompt, or says it does not know."""
    found = PAST_LINE.search(system_text(request))
    return text_reply(f"Before that you lived in {found[1]}." if found else "I don't know where you lived before.")


def test_a_question_about_before_is_answered_from_the_past_facts_and_others_carry_none(stub, script, tmp_path, monkeypatch):
    monkeypatch.setenv("MAISTRO_CALL_MODE", "tools")
    agent = build_graph(tmp_path)
    script.add("chat", update("user", content="Hi!"), update("user", content="Noted the move."))
    script.add("profile", tool_calls_reply(("Profile", {"location": "Austin"})),
               lambda request: tool_calls_reply(("PatchDoc", {"json_doc_id": "user_profile", "planned_edits": "Move.",
                                                              "patches": [{"op": "replace", "path": "/location", "value": "Denver"}]})))
    agent.invoke({"messages": [HumanMessage("My home is in Austin.")]}, config(thread_id="1"))
    agent.invoke({"messages": [HumanMessage("I relocated to Denver this week.")]}, config(thread_id="1"))
    assert profile_of(agent)["location"] == "Denver"
    script.keep("chat", answer_from_past)

    other = agent.invoke({"messages": [HumanMessage("Where do I live?")]}, config(thread_id="2"))
    asked = agent.invoke({"messages": [HumanMessage("Where did I live before?")]}, config(thread_id="2"))

    chats = [request for request in stub.requests if kind_of(request) == "chat"]
    assert "<past_facts>" not in system_text(chats[-2]) and "Austin" not in system_text(chats[-2])
    assert other["messages"][-1].content == "I don't know where you lived before."
    assert asked["messages"][-1].content == "Before that you lived in Austin."
    close_graph(agent)
