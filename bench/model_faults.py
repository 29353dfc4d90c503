"""Model faults: what each fault of the models users bring does to a turn, as a table.

`python -m bench.model_faults [--streamed] [--json FILE]`

Every fault of the catalogue (testing/model_faults.py: malformed arguments, calls without ids or with empty
or repeated ids, unknown tools, calls written as text in each format and calls quoted in each style, replies and
calls past the size and depth bounds, near-miss and unknown routing values, chat-template turn markers written
out, an invalid response body, empty replies, HTTP 429 and 500, a cut stream, a slow answer) is played once,
alone, by the strict local OpenAI-compatible stub (HTTP 400 for any unanswered tool call), through `build_graph`
on SQLite in a temporary directory and the default model factory's real `langchain_openai.ChatOpenAI` client, with
`graph.stream` (stream_mode "values", or also "messages" with `--streamed`, so the chat model streams), then a
well-behaved turn that saves a ToDo. Per fault it prints: whether an exception other than the one-sentence model
error reached the caller, whether the thread is wedged (the next turn failed, lost its ToDo, or a request got HTTP
400), whether something the turn asked to save was lost without the user being told (no failed memory_update note,
no model error), whether a ToDo the turn never asked to change was removed (a quoted example run), whether a ToDo
was stored twice, whether what a model made up after a chat-template turn marker (a base model going on as the
user) reached the reply or the thread, the model calls of the fault turn, and how the turn ended: the reply, or
the model error ("model error" is the designed outcome of an endpoint that fails: the user reads one sentence and
the message stays to be sent again).

What it leaves out: a real model's own mix of faults (each is played alone, once, on a fresh thread), and
faults in the extraction calls beyond what the catalogue holds.
"""

import argparse
import json
import tempfile
from dataclasses import asdict
from pathlib import Path

from testing.chore_endpoint import model_environment
from testing.model_faults import CATALOGUE, FaultOutcome, play_fault
from testing.openai_stub import OpenAIStub
from testing.stub_script import Script

COLUMNS = (
    "fault", "exception?", "wedged?", "lost untold?", "removed?", "doubled?", "invented kept?", "model calls", "outcome"
)


def run_fault(name: str, *, streamed: bool) -> FaultOutcome:
    """Play one fault of the catalogue on a fresh stub and data directory."""
    fault = next(fault for fault in CATALOGUE if fault.name == name)
    script = Script()
    with OpenAIStub(script) as stub, model_environment(stub.base_url), tempfile.TemporaryDirectory() as data_dir:
        return play_fault(fault, stub, script, Path(data_dir), streamed=streamed)


def row(outcome: FaultOutcome) -> tuple[str, ...]:
    """One line of the table."""
    ended = "model error (one sentence)" if outcome.model_error else f"reply: {outcome.reply[:48]!r}"
    return (
        outcome.fault,
        outcome.exception[:40] or "no",
        "yes" if outcome.wedged else "no",
        ", ".join(outcome.lost_untold) or "no",
        ", ".join(outcome.removed) or "no",
        ", ".join(outcome.doubled) or "no",
        "yes" if outcome.invented_kept else "no",
        str(outcome.model_calls),
        ended,
    )


def print_table(rows: list[tuple[str, ...]]) -> None:
    """Print rows under COLUMNS, each column as wide as its widest cell."""
    widths = [max(len(line[index]) for line in [COLUMNS, *rows]) for index in range(len(COLUMNS))]
    for line in [COLUMNS, tuple("-" * width for width in widths), *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip())


def main() -> None:
    """Play every fault and print the table (and write the outcomes as JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streamed", action="store_true", help='stream with stream_mode "messages" too')
    parser.add_argument("--json", type=Path, help="also write the outcomes to this file")
    arguments = parser.parse_args()
    outcomes = [run_fault(fault.name, streamed=arguments.streamed) for fault in CATALOGUE]
    mode = 'graph.stream, stream_mode "values"' + (' + "messages"' if arguments.streamed else "")
    print(f"Model faults through the real ChatOpenAI against the strict stub ({mode}):\n")
    print_table([row(outcome) for outcome in outcomes])
    if arguments.json:
        arguments.json.write_text(json.dumps([asdict(outcome) for outcome in outcomes], indent=2) + "\n")


if __name__ == "__main__":
    main()
