"""The model faults of testing/model_faults.py, one at a time, against the strict stub: through `graph.stream`
with the real ChatOpenAI (streamed and not), and through `maistro chat`.

For each fault: no exception reaches the caller (an endpoint that fails ends the turn with the one-sentence model
error, by design), the thread is not wedged (the next well-behaved turn saves its ToDo, no HTTP 400), nothing is
lost without the user being told, nothing is doubled, and the turn's model calls stay bounded.
"""

import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from typer.testing import CliRunner

from graph import build_graph
from graph.app.cli import app
from graph.backends.model import ModelUnavailableError
from graph.thread.bounded_json import TOO_DEEP, TOO_LONG
from graph.thread.turn_markers import first_marker
from prompts import QUOTED_CALL_NOTE, REFUSED_MALFORMED_NOTE
from testing.helpers import config, profile_of, todos
from testing.model_faults import (
    ADDED_SWIM,
    ALREADY_LISTED,
    FAULTS,
    GRANDMA,
    JSON_RECOVERY,
    NOTED,
    NOTHING_CHANGED,
    ON_THE_LIST,
    QUOTED_MARKER,
    RECOVERY,
    RECOVERY_REPLY,
    SAYS_SWIM,
    SWIM,
    SWIM_CALL,
    play_fault,
)
from testing.openai_stub import RawBody, calls_reply, raw_call, tool_calls_reply
from testing.thread_checks import doubled_todos

ROOT = Path(__file__).resolve().parents[2]
QUOTED_LINE = f"✗ {QUOTED_CALL_NOTE.format(memory='ToDo list')}"
SORRY_LINE = "Sorry, I could not save that; could you say it again?"


@pytest.mark.parametrize("streamed", [False, True], ids=["values", "messages"])
@pytest.mark.parametrize("name", list(FAULTS))
def test_fault_through_graph_stream(name, streamed, stub, script, tmp_path):
    fault = FAULTS[name]

    outcome = play_fault(fault, stub, script, tmp_path, streamed=streamed)

    assert outcome.exception == ""
    assert outcome.model_error == fault.model_error
    assert not outcome.wedged, [problem for _, problem in stub.rejections]
    assert outcome.lost_untold == []
    assert outcome.removed == [], "a memory the turn never asked to change is gone"
    assert outcome.doubled == []
    assert outcome.unasked_profile == [], "nothing the user did not say is stored"
    assert not outcome.invented_kept, "what a model made up after a turn marker is not its reply"
    assert first_marker(outcome.reply) is None, "a chat-template turn marker never reaches the user"
    assert outcome.model_calls <= fault.max_calls
    assert fault.model_error or outcome.reply.strip(), "the user never sees nothing"
    if fault.quoted:  # a reply that quotes a call is text: kept whole, nothing runs, the user told
        assert outcome.reply == fault.turn.chat[0]["content"] and outcome.model_calls == 1
        assert any(note.startswith("Not saved: the reply quotes an update of your ToDo list") for note in outcome.notes)
    else:  # a reply that is a call never reaches the user as text
        assert not outcome.reply.lstrip().startswith(("<tool_call>", "[TOOL_CALLS]")) and '"UpdateMemory"' not in outcome.reply


@pytest.mark.parametrize(
    "answer",
    [
        RawBody('{"hello": "world"}'),
        RawBody('{"id": "c", "object": "chat.completion", "created": 0, "model": "gpt-stub", "choices": []}'),
        calls_reply(raw_call("UpdateMemory", '"todo"', "call_s")),  # arguments that are JSON but not an object
    ],
    ids=["no-choices", "empty-choices", "string-arguments"],
)
def test_an_answer_that_is_not_a_chat_completion_is_the_one_sentence_model_error(answer, stub, script, tmp_path):
    agent = build_graph(tmp_path)
    script.add("chat", answer)

    with pytest.raises(ModelUnavailableError, match=r"^The model endpoint's answer could not be used \(the response"):
        agent.invoke({"messages": [HumanMessage("I need to book swim lessons.")]}, config())

    RECOVERY.queue(script)
    agent.invoke({"messages": [HumanMessage(RECOVERY.message)]}, config())
    assert GRANDMA in todos(agent) and stub.rejections == []


def queue_faults(names: list[str], script) -> list[list[str]]:
    """Queue the replies the faults' turns use, then the well-behaved turn's; the messages to send, per fault. A
    turn whose reply quotes a call gets no extraction reply: one asked for would fail the turn with HTTP 500. With
    several faults, each saves a ToDo of its own (the same one saved again would change nothing)."""
    messages = []
    for number, fault in enumerate(FAULTS[name] for name in names):
        for turn in fault.setup:
            turn.queue(script)
        if fault.quoted:
            script.add("chat", *fault.turn.chat)
        elif len(names) > 1 and "todo" in fault.turn.extraction:
            replace(fault.turn, extraction={"todo": (swim_todo(number),)}).queue(script)
        else:
            fault.turn.queue(script)
        messages.append([turn.message for turn in (*fault.setup, fault.turn)])
    RECOVERY.queue(script)
    return [*messages, [RECOVERY.message]]


def swim_todo(number: int) -> dict:
    """The extraction reply that saves the `number`th fault's swim-lessons ToDo."""
    return tool_calls_reply(("ToDo", {"task": f"{SWIM} {number}", "solutions": ["SF swim schools"]}))


def chat_in_process(fault_name: str, script) -> tuple:
    """Run `maistro chat` in this process on the fault's turns, then the well-behaved turn."""
    messages = [message for fault in queue_faults([fault_name], script) for message in fault]
    result = CliRunner().invoke(app, ["chat", "--user", "Lance", "--retries", "0"], input="\n".join(messages) + "\n")
    return result, result.stdout.splitlines()


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("hermes_text_call", ["✎ ToDo added: Book swim lessons", ADDED_SWIM]),
        ("fenced_json_call", [SAYS_SWIM, "```json", SWIM_CALL, "```", QUOTED_LINE]),
        ("openai_shape_call", [QUOTED_LINE, FAULTS["openai_shape_call"].turn.chat[0]["content"]]),
        ("tag_in_prose", [FAULTS["tag_in_prose"].turn.chat[0]["content"], "✎ ToDo added: Book swim lessons"]),
        ("brace_first_reply", [FAULTS["brace_first_reply"].turn.chat[0]["content"], "✎ ToDo added: Book swim lessons"]),
        ("call_without_id", ["I'll add the swim lessons to your ToDo list.", "✎ ToDo added: Book swim lessons"]),
        ("malformed_args", ["I'll add the swim lessons to your ToDo list.", "✎ ToDo added: Book swim lessons"]),
        (
            "unknown_update_type",
            [
                "I'll add the swim lessons to your ToDo list.",
                "✗ Not saved: the model asked to update a memory that does not exist here ('calendar')",
                "Sorry, I could not save that; could you say it again?",
            ],
        ),
        ("empty_reply", ["Sorry, I have no answer to that. Could you say it another way?"]),
        ("chatml_turn_markers", [SAYS_SWIM, "✎ ToDo added: Book swim lessons"]),
        ("gemma_turn_markers", ["Hello! How can I help?"]),
        ("only_turn_markers", ["Sorry, I have no answer to that. Could you say it another way?"]),
        ("turn_markers_to_the_limit", ["Hello! How can I help?"]),
        ("text_call_then_turn_markers", ["✎ ToDo added: Book swim lessons", ADDED_SWIM]),
        ("quoted_turn_marker", [QUOTED_MARKER]),
    ],
)
def test_fault_through_the_chat_command(name, shown, stub, script):
    result, lines = chat_in_process(name, script)

    assert result.exception is None and result.exit_code == 0, result.output
    assert lines == [*shown, RECOVERY_REPLY, "✎ ToDo added: Call grandma"], "each line shown once"
    assert stub.rejections == []


def test_an_unusable_answer_is_one_sentence_in_the_chat_command(stub, script):
    result, lines = chat_in_process("invalid_body", script)

    assert result.exit_code == 1, "the spoilt message is left without an answer"
    assert lines[0] == (
        "The model endpoint's answer could not be used (the response body is not valid JSON). Your message is kept "
        "in the thread: send it again to retry."
    )
    assert lines[-2:] == [RECOVERY_REPLY, "✎ ToDo added: Call grandma"] and "Traceback" not in result.output


def chat_process(messages: list[str]) -> subprocess.CompletedProcess:
    """Run `maistro chat` as a process reading `messages` from a pipe, one per line."""
    return subprocess.run(
        [sys.executable, "-m", "graph.app.cli", "chat", "--user", "Lance", "--retries", "0"],
        input="".join(f"{message}\n" for message in messages),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_faults_through_the_chat_process(stub, script, tmp_path):
    """A call written as text, an unusable answer, the same message sent again (answered with broken arguments,
    refused once), then a well-behaved turn: in one `maistro chat` process, without a traceback."""
    turns = [FAULTS["hermes_text_call"].turn, FAULTS["invalid_body"].turn, FAULTS["unmendable_args"].turn, RECOVERY]
    for turn in turns:
        turn.queue(script)

    done = chat_process([turn.message for turn in turns])

    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.splitlines() == [
        "✎ ToDo added: Book swim lessons",
        ADDED_SWIM,
        "The model endpoint's answer could not be used (the response body is not valid JSON). Your message is kept "
        "in the thread: send it again to retry.",
        SAYS_SWIM,
        "✗ Not saved: the model's memory update could not be read (it is not valid JSON)",
        "Sorry, I could not save that; could you say it again?",
        RECOVERY_REPLY,
        f"✎ ToDo added: {GRANDMA}",
    ]
    assert stub.rejections == [] and script.seen.count("chat") == 2 + 1 + 2 + 1



def refused_line(problem: str) -> str:
    return f"✗ {REFUSED_MALFORMED_NOTE.format(problem=problem)}"


def shown_in_chat(name: str, number: int) -> list[str]:
    """The lines `maistro chat` prints for a text-call fault's turns: a call runs and the model replies; a quoted
    call is the reply's text, whole, then the note that it was not run (before the text when the reply was held
    back, as one that may have been a call: it starts with "{"); a call that cannot be read is refused once."""
    fault, reply = FAULTS[name], FAULTS[name].turn.chat[0]["content"]
    if fault.quoted:
        shown = [QUOTED_LINE, reply] if reply.startswith("{") else [*reply.splitlines(), QUOTED_LINE]
        return ["I'll add the dentist.", "✎ ToDo added: Book the dentist", *shown] if fault.setup else shown
    if name in ("deep_hermes_call", "long_hermes_call"):
        return [refused_line(TOO_DEEP if name == "deep_hermes_call" else TOO_LONG), SORRY_LINE]
    if name == "deep_call_arguments":
        return [SAYS_SWIM, refused_line(TOO_DEEP), SORRY_LINE]
    if name in ("deep_brackets_reply", "long_brace_reply"):
        return [reply]
    saved = f"✎ ToDo added: {SWIM} {number}"
    return [reply, saved] if name in ("tag_in_prose", "brace_first_reply") else [saved, ADDED_SWIM]


TEXT_CALL_FAULTS = [
    "hermes_text_call", "hermes_open_call", "mistral_text_call", "bare_json_call",
    "hermes_after_text", "mistral_after_text", "fenced_json_call", "fenced_python_call", "fenced_only_call",
    "inline_code_call", "prose_json_call", "openai_shape_call", "json_list_call", "explained_call",
    "tag_in_prose", "brace_first_reply",
    "deep_brackets_reply", "long_brace_reply", "deep_hermes_call", "long_hermes_call", "deep_call_arguments",
]


def test_text_calls_through_the_chat_process(stub, script):
    """Each format of a call written as text, each way of quoting one, and replies past the bounds, in one
    `maistro chat` process reading from a pipe: a call runs only when the reply is one, a quoted call is shown
    whole, once, and never run (no extraction is asked for it), and nothing ends the chat."""
    # Each fault on a thread of its own, so that no thread grows long enough to be summarised (another model call).
    messages = [message for fault in queue_faults(TEXT_CALL_FAULTS, script) for message in ["/new", *fault]]

    done = chat_process(messages)

    assert done.returncode == 0 and done.stderr == ""
    expected = [line for number, name in enumerate(TEXT_CALL_FAULTS) for line in shown_in_chat(name, number)]
    shown = [line for line in done.stdout.splitlines() if not re.fullmatch(r"New thread [0-9a-f-]{36}\.", line)]
    assert shown == [*expected, RECOVERY_REPLY, f"✎ ToDo added: {GRANDMA}"]
    assert stub.rejections == [] and script.remaining() == {}
@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("json_same_task_twice", [SAYS_SWIM, "✎ ToDo added: Book swim lessons"]),
        (
            "json_listed_task_again",
            [SAYS_SWIM, "✎ ToDo added: Book swim lessons", ON_THE_LIST, ALREADY_LISTED],
        ),
        ("json_repeated_solutions", [SAYS_SWIM, "✎ ToDo added: Book swim lessons"]),
        ("json_placeholder_profile", ["Sure."]),
        (
            "json_renamed_like_another",
            ["I'll add both.", "✎ ToDo added: Book the dentist", "✎ ToDo added: Buy milk", NOTED, NOTHING_CHANGED],
        ),
    ],
)
def test_json_fault_through_the_chat_command(name, shown, stub, script, monkeypatch, tmp_path):
    """A model that answers in JSON doubles and invents nothing through `maistro chat` either: each ToDo is shown
    added once, a placeholder profile is not."""
    monkeypatch.setenv("MAISTRO_CALL_MODE", "json")
    turns = [*FAULTS[name].setup, FAULTS[name].turn, JSON_RECOVERY]
    for turn in turns:
        turn.queue(script)

    result = CliRunner().invoke(app, ["chat", "--user", "Lance", "--retries", "0"], input="".join(f"{t.message}\n" for t in turns))

    assert result.exception is None and result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [*shown, RECOVERY_REPLY, "✎ ToDo added: Call grandma"], "each ToDo added once"
    agent = build_graph(tmp_path / "default-data")
    assert doubled_todos(agent.store, "Lance") == [] and profile_of(agent) is None
    assert all(len(todo["solutions"]) == len(set(todo["solutions"])) for todo in todos(agent).values())
