"""The terminal chat loop of `maistro chat`: read a line, stream the turn, handle slash commands and endpoint errors.

A turn runs in a worker thread while the main thread prints its events, so Ctrl-C stops the wait at once even
when the model is in the middle of a request; see `run_chat`.
"""

import contextlib
import os
import queue
import select
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TextIO, TypeVar

import openai
from rich.console import Console
from rich.status import Status
from rich.text import Text

from graph.app.session import ChatSession, Note, Notice, Progress, StoppedTurn, Token
from graph.app.tables import memory_view
from graph.backends.model import ContextWindowError, ModelUnavailableError
from graph.memory.kinds import UnknownKindError, kind_named

COMMANDS = {
    "/todos": "show your ToDo list",
    "/profile": "show your profile",
    "/instructions": "show your instructions for writing ToDos",
    "/show KIND": "show one of your memories by its kind's name (any kind MAISTRO_MEMORY_KINDS adds too)",
    "/new": "start a fresh thread (memories stay, messages don't)",
    "/help": "show this list",
    "/quit": "leave (Ctrl-D and Ctrl-C leave too; the thread is saved)",
}
# Commands that are `/show KIND` for the tutorial's kinds.
MEMORY_COMMANDS = {"/todos": "todo", "/profile": "profile", "/instructions": "instructions"}
RETRY_HINT = "Your message is saved in the thread: send it again to retry."
# The marks before a memory note: a change saved, and an update that saved less than it was asked.
NOTE_MARK = "✎"
FAILED_MARK = "✗"
STATUS_HINTS = {
    401: "Check OPENAI_API_KEY. " + RETRY_HINT,
    403: "Check OPENAI_API_KEY. " + RETRY_HINT,
    404: "Check the model name (MAISTRO_MODEL or --model) and OPENAI_BASE_URL. " + RETRY_HINT,
    429: "The endpoint is limiting requests; wait a moment. " + RETRY_HINT,
}
T = TypeVar("T")


@dataclass
class ChatOutcome:
    """How a chat ended: the messages left without an answer, and whether Ctrl-C stopped a turn half-way.

    After an interrupted turn, the turn's worker thread may still be waiting for the model.
    """

    unanswered: list[str] = field(default_factory=list)
    interrupted: bool = False


def print_turn(console: Console, events: Iterable[Token | Note | Notice | Progress]) -> None:
    """Print a turn as it streams: reply tokens as they come, each memory note (✎, or ✗ for a failed update) and
    notice on its own line, and a spinner while memories are being updated (on a terminal only)."""
    open_reply: str | None = None
    status: Status | None = None

    def end_reply() -> None:
        nonlocal open_reply
        if open_reply is not None:
            console.print()
            open_reply = None

    try:
        for event in events:
            if status is not None:
                status.stop()
                status = None
            if isinstance(event, Token):
                if open_reply not in (None, event.message_id):
                    console.print()
                open_reply = event.message_id
                console.print(event.text, end="", markup=False, highlight=False, soft_wrap=True)
                continue
            end_reply()
            if isinstance(event, Progress):
                if console.is_terminal:
                    status = console.status(Text(event.text, style="dim"))
                    status.start()
            elif isinstance(event, Notice):
                console.print(Text(event.text, style="yellow"), soft_wrap=True)
            elif event.failed:
                console.print(Text(f"{FAILED_MARK} {event.text}", style="yellow"), soft_wrap=True)
            else:
                console.print(Text(f"{NOTE_MARK} {event.text}", style="dim"), soft_wrap=True)
    finally:
        if status is not None:
            status.stop()
        end_reply()


def endpoint_problem(error: openai.APIError) -> str:
    """What went wrong at the model endpoint and what the user can do about it, in one or two sentences."""
    if isinstance(error, openai.APIStatusError):
        body = error.body
        detail = body.get("message") if isinstance(body, dict) else body
        shown = f" ({detail})" if detail else ""
        hint = STATUS_HINTS.get(error.status_code, RETRY_HINT)
        return f"The model endpoint answered HTTP {error.status_code}{shown}. {hint}"
    url = error.request.url.copy_with(query=None)
    if isinstance(error, openai.APITimeoutError):
        return f"The model endpoint at {url} did not answer in time (MAISTRO_MODEL_TIMEOUT). {RETRY_HINT}"
    return f"Could not reach the model endpoint at {url}; check that it is running and OPENAI_BASE_URL. {RETRY_HINT}"


def model_problem(error: ModelUnavailableError | openai.APIError) -> str:
    """What the user reads when a turn failed at the model endpoint: the endpoint's error explained
    (`endpoint_problem`), or the sentence of an answer that could not be used (not JSON, cut short) or of a context
    window too small for any prompt."""
    if isinstance(error, ContextWindowError):
        return str(error)
    cause = error.__cause__ if isinstance(error, ModelUnavailableError) else error
    return endpoint_problem(cause) if isinstance(cause, openai.APIError) else str(error)


def stopped_text(stopped: StoppedTurn) -> str:
    """What a turn stopped with Ctrl-C left saved, and how to finish it."""
    if not stopped.message_saved:
        return "Stopped before your message was saved: this turn left nothing in the thread."
    saved = "; ".join(["your message", *stopped.notes, *(["the reply"] if stopped.reply_saved else [])])
    if stopped.reply_saved and stopped.updates_pending:
        return (
            f"Stopped. Saved: {saved}. Not saved yet: the memory updates the reply announced; they run before your "
            "next message is handled (or now, if you send the message again)."
        )
    if stopped.reply_saved:
        return f"Stopped. Saved: {saved}."
    return f"Stopped. Saved: {saved}. Not saved: the reply; send the message again to finish the turn."


def in_background(events: Iterator[T]) -> Iterator[T]:
    """Run `events` in a daemon worker thread and yield them here, so that the main thread only waits on a queue
    (where Ctrl-C interrupts it at once) while the worker waits for the model. Errors are raised here."""
    handoff: queue.SimpleQueue[tuple[bool, T | BaseException | None]] = queue.SimpleQueue()

    def pump() -> None:
        try:
            for event in events:
                handoff.put((True, event))
        except BaseException as error:  # handed to the main thread, which raises it
            handoff.put((False, error))
        else:
            handoff.put((False, None))

    threading.Thread(target=pump, name="maistro-turn", daemon=True).start()
    while True:
        more, item = handoff.get()
        if more:
            yield item
        elif item is None:
            return
        else:
            raise item


PROMPT = "[bold cyan]you ›[/] "


def typed_ahead(stream: TextIO = sys.stdin) -> str | None:
    """A line the user finished at the terminal while a turn ran, "" for a Ctrl-D pressed then, or None when nothing
    is waiting. The terminal holds such input line by line; it is read here, before line editing takes the
    terminal over, because that would drop a pending Ctrl-D (the chat would then wait at a second prompt)."""
    if os.name != "posix" or not stream.isatty():
        return None
    fd = stream.fileno()
    if not select.select([fd], [], [], 0)[0]:
        return None
    return os.read(fd, 65536).decode(stream.encoding or "utf-8", errors="replace")


def terminal_reader(console: Console) -> Callable[[], str]:
    """Read a line at a prompt, with line editing and history where available (raises EOFError on Ctrl-D, also
    when it was pressed while the previous turn ran); a line typed while a turn ran is taken as it is."""
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401  (importing it gives input() line editing and history)

    def read() -> str:
        ahead = typed_ahead()
        if ahead is not None:
            console.print(PROMPT, end="")
            if not ahead:
                console.print()
                raise EOFError
            console.print(ahead.rstrip("\r\n"), markup=False, highlight=False)
            return ahead.rstrip("\r\n")
        try:
            return console.input(PROMPT)
        except EOFError:
            console.print()
            raise

    return read


def line_reader(stream: TextIO = sys.stdin) -> Callable[[], str]:
    """Read one message per line from a pipe or file (raises EOFError at its end)."""

    def read() -> str:
        line = stream.readline()
        if not line:
            raise EOFError
        return line.rstrip("\r\n")

    return read


def _run_command(line: str, session: ChatSession, console: Console) -> bool:
    """Carry out a slash command line (the command in any case, then its argument); False when the user asked to quit."""
    name, _, argument = line.partition(" ")
    command = name.lower()
    if command == "/quit":
        return False
    if command in MEMORY_COMMANDS:
        command, argument = "/show", MEMORY_COMMANDS[command]
    if command == "/show":
        wanted = argument.strip()
        try:
            kind = kind_named(session.kinds, wanted)
        except UnknownKindError:
            names = ", ".join(kind.name for kind in session.kinds)
            problem = f"There is no memory kind {wanted!r}" if wanted else "Name a memory kind after /show"
            console.print(f"{problem}; the kinds are {names}.", markup=False)
        else:
            console.print(memory_view(session.graph.store, kind, session.user_id))
    elif command == "/new":
        console.print(f"New thread {session.new_thread()}.")
    elif command == "/help":
        for name, meaning in COMMANDS.items():
            console.print(f"{name:<14} {meaning}", markup=False)
    else:
        console.print(f"Unknown command {command}; /help lists the commands.", markup=False)
    return True


def run_chat(session: ChatSession, console: Console, read_line: Callable[[], str]) -> ChatOutcome:
    """Chat until /quit, end of input or Ctrl-C; endpoint errors are reported and the loop goes on.

    Ctrl-C during a turn stops waiting for it at once and says what the turn saved; the outcome is then
    `interrupted`, and the turn's worker thread may still be running (the caller should exit the process).
    """
    outcome = ChatOutcome()
    in_turn = False
    try:
        while True:
            try:
                text = read_line().strip()
            except EOFError:
                return outcome
            if not text:
                continue
            if text.startswith("/"):
                if not _run_command(text, session, console):
                    return outcome
                continue
            in_turn = True
            try:
                print_turn(console, in_background(session.send(text)))
            except (ModelUnavailableError, openai.APIConnectionError, openai.APIStatusError) as error:
                console.print(Text(model_problem(error), style="red"), soft_wrap=True)
                outcome.unanswered.append(text)
            else:
                outcome.unanswered = [message for message in outcome.unanswered if message != text]
            in_turn = False
    except KeyboardInterrupt:
        if console.is_terminal or not in_turn:
            console.print()  # past the "^C" the terminal echoed
        if in_turn:
            outcome.interrupted = True
            console.print(Text(stopped_text(session.stopped_turn()), style="yellow"), soft_wrap=True)
    return outcome
