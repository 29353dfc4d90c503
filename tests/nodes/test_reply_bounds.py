"""No runaway, no wedge (issue 32, item 3), and a prompt a local server can cache (item 4): through the real ChatOpenAI
client against the stub playing llama.cpp (`OpenAIStub(n_ctx=...)`), by `graph.stream` and by `maistro chat`.

- every request asks for at most MAISTRO_MAX_REPLY_TOKENS; a reply cut there (`finish_reason: "length"`) tells the
  user so, is not read for calls written as text, and later prompts carry only its beginning, marked as cut;
- the prompt is kept within the context window the server reports at `/props` (else MAISTRO_CONTEXT_TOKENS), and a
  refusal as too long (HTTP 400 `exceed_context_size_error`) is answered by one smaller prompt, never by the same
  again: a thread whose history is over the window keeps working;
- what stays the same comes first: the first system message is the same on every turn, and the time and the
  memories come in a system message right before the user's latest message.
"""

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from typer.testing import CliRunner

from graph import build_graph, close_graph
from graph.app.cli import app
from graph.backends.context_window import ESTIMATE_MARGIN, Window, read_props
from graph.settings import Settings, SettingsError
from graph.thread.cut_replies import CUT_REPLY_PROMPT_TOKENS, cut_notice
from graph.thread.tokens import count_text_tokens
from prompts import CUT_REPLY_NOTICE
from testing.helpers import config, todos
from testing.openai_stub import OpenAIStub, cut_reply, system_text, text_reply, tool_calls_reply
from testing.stub_script import Script, kind_of, update

RAMBLE = "I will tell you about the list again and again. " * 200
SMALL_WINDOW = 1500
# Long enough that four of them are over SMALL_WINDOW, short enough that one message fits.
LONG_MESSAGE = "Here is some background on my week, in detail. " * 60
WIDE_OPEN = {"summary_trigger_tokens": 20000, "summary_trigger_messages": 200}


@pytest.fixture
def llama(script: Script, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest):
    """The stub playing llama.cpp (its options from the test's `llama_options` marker-free param), set as the
    endpoint."""
    options = getattr(request, "param", {})
    with OpenAIStub(script, n_ctx=options.get("n_ctx", SMALL_WINDOW), props=options.get("props", True),
                    chars_per_token=options.get("chars_per_token", 4.0)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("MAISTRO_MODEL", "gpt-stub")
        yield server


def chat_requests(stub: OpenAIStub) -> list[dict]:
    return [body for body in stub.requests if kind_of(body) == "chat"]


def streamed_turn(agent, text: str, thread_id: str = "1", **settings) -> list:
    """One turn through `graph.stream` (messages and updates, as the CLI streams it); the thread afterwards."""
    for _ in agent.stream({"messages": [HumanMessage(text)]}, config(thread_id=thread_id, **settings),
                          stream_mode=["messages", "updates"]):
        pass
    return agent.get_state(config(thread_id=thread_id)).values["messages"]


def test_the_settings_are_checked_and_every_request_asks_for_at_most_the_reply_limit(stub, script, tmp_path, monkeypatch):
    assert Settings.from_environ({}).max_reply_tokens == 1024
    with pytest.raises(SettingsError, match=r"^MAISTRO_MAX_REPLY_TOKENS='0' is invalid"):
        Settings.from_environ({"MAISTRO_MAX_REPLY_TOKENS": "0"})
    with pytest.raises(SettingsError, match=r"^MAISTRO_CONTEXT_TOKENS='100' is invalid"):
        Settings.from_environ({"MAISTRO_CONTEXT_TOKENS": "100"})
    monkeypatch.setenv("MAISTRO_MAX_REPLY_TOKENS", "300")
    script.add("chat", update("todo"))
    script.add("todo", tool_calls_reply(("ToDo", {"task": "Book swim lessons", "solutions": ["SF swim schools"]})))
    script.add("chat", text_reply("Added the swim lessons."))
    agent = build_graph(tmp_path)

    streamed_turn(agent, "Remind me to book swim lessons.")

    close_graph(agent)
    assert [body.get("max_completion_tokens") for body in stub.requests] == [300] * len(stub.requests)


def test_a_cut_reply_is_told_and_later_prompts_carry_only_its_beginning(llama, script, tmp_path, monkeypatch):
    monkeypatch.setenv("MAISTRO_MAX_REPLY_TOKENS", "64")
    script.add("chat", text_reply(RAMBLE), text_reply("Your list is empty."))
    agent = build_graph(tmp_path)

    thread = streamed_turn(agent, "What is on my list?")
    reply = thread[-1]
    thread = streamed_turn(agent, "Thanks. Anything else?")

    close_graph(agent)
    notice = CUT_REPLY_NOTICE.format(limit=64)
    assert reply.text.endswith("\n\n" + notice) and cut_notice(reply) == notice
    assert reply.text.startswith(RAMBLE[: 64 * 4].rstrip()), "the user keeps what was streamed"
    assert thread[-1].text == "Your list is empty."
    carried = [m["content"] for m in chat_requests(llama)[-1]["messages"] if m["role"] == "assistant"]
    assert len(carried) == 1 and carried[0].endswith("[…]\n(This reply was cut off at the length limit; the rest is left out.)")
    assert count_text_tokens(carried[0]) < CUT_REPLY_PROMPT_TOKENS + 30, "not the whole run-away text"
    assert notice not in carried[0]


def test_a_cut_reply_is_not_read_as_a_call_written_as_text(stub, script, tmp_path):
    written = '<tool_call>\n{"name": "UpdateMemory", "arguments": {"update_type": "todo"}}\n</tool_call>'
    script.add("chat", cut_reply(written))
    agent = build_graph(tmp_path)

    thread = streamed_turn(agent, "Remind me to book swim lessons.")

    saved = todos(agent)
    close_graph(agent)
    assert script.seen == ["chat"], "no update ran on a call the reply was cut in"
    assert thread[-1].text.startswith(written) and cut_notice(thread[-1])
    assert saved == {}


def test_a_thread_whose_history_is_over_the_window_keeps_working(llama, script, tmp_path):
    script.keep("chat", lambda body: text_reply("Noted."))
    agent = build_graph(tmp_path)
    for n in range(4):
        streamed_turn(agent, f"Day {n}. {LONG_MESSAGE}", **WIDE_OPEN)
    history = agent.get_state(config()).values["messages"]
    assert llama.prompt_tokens({"messages": [{"content": m.text} for m in history]}) > SMALL_WINDOW

    thread = streamed_turn(agent, "What did I tell you on day 3?", **WIDE_OPEN)

    close_graph(agent)
    assert llama.rejections == [], "every prompt fitted the window /props reported"
    last = chat_requests(llama)[-1]
    window = Window(SMALL_WINDOW, 1024)
    assert llama.prompt_tokens(last) <= window.tokens - window.tokens // 4
    assert last["messages"][-1]["content"] == "What did I tell you on day 3?", "the latest message kept whole"
    assert last["messages"][-2]["role"] == "system" and "Current date and time" in last["messages"][-2]["content"]
    assert thread[-1].text == "Noted." and thread[-2].text == "What did I tell you on day 3?"
    assert len(thread) == 10, "the thread keeps every message; only the prompt is shortened"


@pytest.mark.parametrize("llama", [{"props": False, "chars_per_token": 2.0}], indirect=True)
def test_a_refusal_as_too_long_is_answered_once_by_a_prompt_that_fits(llama, script, tmp_path, monkeypatch):
    script.keep("chat", lambda body: text_reply("Noted."))
    agent = build_graph(tmp_path)
    for n in range(3):
        streamed_turn(agent, f"Day {n}. {LONG_MESSAGE}", **WIDE_OPEN)
    refused = len(llama.rejections)

    thread = streamed_turn(agent, "And one more thing.", **WIDE_OPEN)
    again = streamed_turn(agent, "Last thing.", **WIDE_OPEN)

    close_graph(agent)
    assert refused >= 1, "without /props, the server's refusal taught the window"
    assert len(llama.rejections) == refused, "once learned, every prompt fits at once"
    assert all("exceeds the available context size" in problem for _, problem in llama.rejections)
    assert thread[-1].text == "Noted." and again[-1].text == "Noted."
    bodies = [body for body, _ in llama.rejections]
    answered = chat_requests(llama)[chat_requests(llama).index(bodies[0]) + 1]
    assert llama.prompt_tokens(answered) < SMALL_WINDOW, "the one retry sent a smaller prompt, not the same"


def test_a_window_set_for_an_endpoint_that_does_not_say_keeps_prompts_within_it(stub, script, tmp_path, monkeypatch):
    monkeypatch.setenv("MAISTRO_CONTEXT_TOKENS", str(SMALL_WINDOW))
    script.keep("chat", lambda body: text_reply("Noted."))
    agent = build_graph(tmp_path)
    for n in range(5):
        streamed_turn(agent, f"Day {n}. {LONG_MESSAGE}", **WIDE_OPEN)

    close_graph(agent)
    assert read_props(stub.base_url, "test-key") is None, "the stub plays OpenAI here: no /props"
    budget = Window(SMALL_WINDOW, 1024).prompt_tokens * ESTIMATE_MARGIN
    assert all(stub.prompt_tokens(body) <= budget for body in chat_requests(stub))


def test_the_prompt_keeps_what_stays_the_same_first_and_the_time_and_memories_last(stub, script, tmp_path):
    script.add("chat", update("todo"))
    script.add("todo", tool_calls_reply(("ToDo", {"task": "Book swim lessons", "solutions": ["SF swim schools"]})))
    script.add("chat", text_reply("Added."), text_reply("You have the swim lessons."), text_reply("Bye."))
    agent = build_graph(tmp_path)

    for text in ("Remind me to book swim lessons.", "What is on my list?", "Bye."):
        streamed_turn(agent, text)

    close_graph(agent)
    prompts = [body["messages"] for body in chat_requests(stub)]
    assert len({messages[0]["content"] for messages in prompts}) == 1, "the first system message never changes"
    assert "Current date and time" not in prompts[0][0]["content"]
    last = prompts[-1]
    assert [m["role"] for m in last[-2:]] == ["system", "user"]
    assert last[-2]["content"].startswith("Current date and time: ") and "Book swim lessons" in last[-2]["content"]
    earlier = prompts[-2]
    assert last[: len(earlier) - 2] == earlier[:-2], "each turn's prompt starts with the last one's, up to its context block"
    assert "Book swim lessons" in system_text(stub.requests[-1])


runner = CliRunner()


def test_maistro_chat_tells_a_cut_reply_and_a_thread_over_the_window_goes_on(llama, script, monkeypatch):
    monkeypatch.setenv("MAISTRO_MAX_REPLY_TOKENS", "64")
    monkeypatch.setenv("COLUMNS", "200")
    script.add("chat", text_reply(RAMBLE))
    script.keep("chat", lambda body: text_reply("Noted."))
    messages = [f"Day {n}. {LONG_MESSAGE}" for n in range(4)]

    result = runner.invoke(app, ["chat", "--user", "Lance"], input="Hello\n" + "\n".join(messages) + "\nStill there?\n")

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("I will tell you about the list again") and lines[1] == CUT_REPLY_NOTICE.format(limit=64)
    assert lines[2:] == ["Noted."] * 5, "every later turn answered, none refused"
    assert llama.rejections == []
    assert "HTTP 400" not in result.output and "send it again" not in result.output


def test_an_ai_message_without_finish_reason_is_not_cut():
    assert cut_notice(AIMessage(content="Fine.")) == ""
    assert cut_notice(AIMessage(content="Fine.", response_metadata={"finish_reason": "length"})) == ""


def test_a_prompt_over_its_budget_loses_the_oldest_turns_then_the_summary_then_is_cut_keeping_the_latest_message():
    from langchain_core.messages import SystemMessage

    from graph.nodes.window import PromptParts, fitted
    from graph.thread.tokens import count_tokens

    def head(summary: str) -> list:
        return [SystemMessage("Rules." + (f" Summary: {summary}" if summary else ""))]

    history = [HumanMessage("first question"), AIMessage("first answer"), HumanMessage("second question"),
               AIMessage("second answer"), HumanMessage("What now?")]
    parts = PromptParts.of(head, "an old summary", history, [SystemMessage("Context.")])

    assert fitted(parts, None) == parts.prompt()
    without_first = fitted(parts, count_tokens(parts.prompt()) - 3)
    assert [m.text for m in without_first][1:] == ["second question", "second answer", "Context.", "What now?"]
    assert "old summary" in without_first[0].text, "the summary goes after the earlier turns"
    oversized = PromptParts.of(head, "", [HumanMessage("first " * 400), AIMessage("ok"), HumanMessage("What now?")], [])
    assert fitted(oversized, 300)[1].text.endswith("[…]"), "an oversized earlier message is cut before turns go"
    bare = fitted(parts, count_tokens([*head(""), SystemMessage("Context."), HumanMessage("What now?")]))
    assert [m.type for m in bare] == ["system", "system", "human"] and bare[-1].text == "What now?"
    assert "old summary" not in bare[0].text
    long_message = PromptParts.of(head, "", [HumanMessage("word " * 2000)], [SystemMessage("Context.")])
    cut = fitted(long_message, 200)
    assert count_tokens(cut) <= 200 and cut[-1].text.startswith("word word") and cut[-1].text.endswith("[…]")
