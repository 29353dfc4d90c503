"""The model faults of tests/support/model_faults.py, one at a time, against the strict stub: through `graph.stream`
with the real ChatOpenAI (streamed and not), and through `maistro chat`.

For each fault: no exception reaches the caller (an endpoint that fails ends the turn with the one-sentence model
error, by design), the thread is not wedged (the next well-behaved turn saves its ToDo, no HTTP 400), nothing is
lost without the user being told, nothing is doubled, and the turn's model calls stay bounded.
"""

import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from typer.testing import CliRunner

from bench.model_faults import print_table, row, run_fault
from graph import build_graph
from graph.app.cli import app
from graph.backends.model import ModelUnavailableError
from tests.support.helpers import config, todos
from tests.support.model_faults import FAULTS, GRANDMA, RECOVERY, RECOVERY_REPLY, play_fault
from tests.support.openai_stub import RawBody, calls_reply, raw_call

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("streamed", [False, True], ids=["values", "messages"])
@pytest.mark.parametrize("name", list(FAULTS))
def test_fault_through_graph_stream(name, streamed, stub, script, tmp_path):
    fault = FAULTS[name]

    outcome = play_fault(fault, stub, script, tmp_path, streamed=streamed)

    assert outcome.exception == ""
    assert outcome.model_error == fault.model_error
    assert not outcome.wedged, [problem for _, problem in stub.rejections]
    assert outcome.lost_untold == []
    assert outcome.doubled == []
    assert outcome.model_calls <= fault.max_calls
    assert fault.model_error or outcome.reply.strip(), "the user never sees nothing"
    assert "<tool_call>" not in outcome.reply and "```" not in outcome.reply and '"UpdateMemory"' not in outcome.reply


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


def chat_in_process(fault_name: str, script) -> tuple:
    """Run `maistro chat` in this process on the fault's turns, then the well-behaved turn."""
    fault = FAULTS[fault_name]
    for turn in (*fault.setup, fault.turn, RECOVERY):
        turn.queue(script)
    messages = [turn.message for turn in (*fault.setup, fault.turn, RECOVERY)]
    result = CliRunner().invoke(app, ["chat", "--user", "Lance", "--retries", "0"], input="\n".join(messages) + "\n")
    return result, result.stdout.splitlines()


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("hermes_text_call", ["I'll add the swim lessons to your ToDo list.", "✎ ToDo added: Book swim lessons"]),
        ("fenced_json_call", ["I'll add the swim lessons to your ToDo list.", "✎ ToDo added: Book swim lessons"]),
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
    ],
)
def test_fault_through_the_chat_command(name, shown, stub, script):
    result, lines = chat_in_process(name, script)

    assert result.exception is None and result.exit_code == 0, result.output
    assert lines[: len(shown)] == shown
    assert lines[-2:] == [RECOVERY_REPLY, "✎ ToDo added: Call grandma"]
    assert stub.rejections == []


def test_an_unusable_answer_is_one_sentence_in_the_chat_command(stub, script):
    result, lines = chat_in_process("invalid_body", script)

    assert result.exit_code == 1, "the spoilt message is left without an answer"
    assert lines[0] == (
        "The model endpoint's answer could not be used (the response body is not valid JSON). Your message is kept "
        "in the thread: send it again to retry."
    )
    assert lines[-2:] == [RECOVERY_REPLY, "✎ ToDo added: Call grandma"] and "Traceback" not in result.output


def test_faults_through_the_chat_process(stub, script, tmp_path):
    """A call written as text, an unusable answer, the same message sent again (answered with broken arguments,
    refused once), then a well-behaved turn: in one `maistro chat` process, without a traceback."""
    turns = [FAULTS["hermes_text_call"].turn, FAULTS["invalid_body"].turn, FAULTS["unmendable_args"].turn, RECOVERY]
    for turn in turns:
        turn.queue(script)

    done = subprocess.run(
        [sys.executable, "-m", "graph.app.cli", "chat", "--user", "Lance", "--retries", "0"],
        input="".join(f"{turn.message}\n" for turn in turns),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )

    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.splitlines() == [
        "I'll add the swim lessons to your ToDo list.",
        "✎ ToDo added: Book swim lessons",
        "The model endpoint's answer could not be used (the response body is not valid JSON). Your message is kept "
        "in the thread: send it again to retry.",
        "I'll add the swim lessons to your ToDo list.",
        "✗ Not saved: the model's memory update could not be read (its arguments were not valid JSON)",
        "Sorry, I could not save that; could you say it again?",
        RECOVERY_REPLY,
        f"✎ ToDo added: {GRANDMA}",
    ]
    assert stub.rejections == [] and script.seen.count("chat") == 1 + 1 + 2 + 1


def test_the_benchmark_prints_a_row_per_fault(capsys):
    outcome = run_fault("hermes_text_call", streamed=False)
    print_table([row(outcome)])

    header, rule, line = capsys.readouterr().out.splitlines()
    assert header.split() == ["fault", "exception?", "wedged?", "lost", "untold?", "doubled?", "model", "calls", "outcome"]
    assert line.split()[:6] == ["hermes_text_call", "no", "no", "no", "no", "2"]
