"""The terminal chat loop of `maistro chat`: read a line, stream the turn, handle slash commands and endpoint errors."""

import contextlib
import sys
from collections.abc import Callable, Iterable
from typing import TextIO

import openai
from rich.console import Console
from rich.text import Text

from graph.app.session import ChatSession, Note, Token
from graph.app.tables import memory_view
from graph.backends.model import ModelUnavailableError
from graph.memory.store import INSTRUCTIONS, PROFILE, TODO

COMMANDS = {
    "/todos": "show your ToDo list",
    "/profile": "show your profile",
    "/instructions": "show your instructions for writing ToDos",
    "/new": "start a fresh thread (memories stay, messages don't)",
    "/help": "show this list",
    "/quit": "leave (Ctrl-D and Ctrl-C leave too; the thread is saved)",
}
MEMORY_COMMANDS = {"/todos": TODO, "/profile": PROFILE, "/instructions": INSTRUCTIONS}
RETRY_HINT = "Your message is saved in the thread: send it again to retry."
STATUS_HINTS = {
    401: "Check OPENAI_API_KEY. " + RETRY_HINT,
    403: "Check OPENAI_API_KEY. " + RETRY_HINT,
    404: "Check the model name (MAISTRO_MODEL or --model) and OPENAI_BASE_URL. " + RETRY_HINT,
    429: "The endpoint is limiting requests; wait a moment. " + RETRY_HINT,
}


def print_turn(console: Console, events: Iterable[Token | Note]) -> None:
    """Print a turn as it streams: reply tokens as they come, each memory note on its own line."""
    open_reply: str | None = None
    try:
        for event in events:
            if isinstance(event, Token):
                if open_reply not in (None, event.message_id):
                    console.print()
                open_reply = event.message_id
                console.print(event.text, end="", markup=False, highlight=False, soft_wrap=True)
            else:
                if open_reply is not None:
                    console.print()
                    open_reply = None
                console.print(Text(f"✎ {event.text}", style="dim"), soft_wrap=True)
    finally:
        if open_reply is not None:
            console.print()


def endpoint_problem(error: openai.APIError) -> str:
    """What went wrong at the model endpoint and what the user can do about it, in one or two sentences."""
    if isinstance(error, openai.APIStatusError):
        body = error.body
        detail = body.get("message") if isinstance(body, dict) else body
        shown = f" ({detail})" if detail else ""
        hint = STATUS_HINTS.get(error.status_code, RETRY_HINT)
        return f"The model endpoint answered HTTP {error.status_code}{shown}. {hint}"
    return (
        f"Could not reach the model endpoint at {error.request.url.host}:{error.request.url.port}; "
        f"check that it is running and OPENAI_BASE_URL. {RETRY_HINT}"
    )


def terminal_reader(console: Console) -> Callable[[], str]:
    """Read a line at a prompt, with line editing and history where available (raises EOFError on Ctrl-D)."""
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401  (importing it gives input() line editing and history)

    def read() -> str:
        try:
            return console.input("[bold cyan]you ›[/] ")
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


def _run_command(command: str, session: ChatSession, console: Console) -> bool:
    """Carry out a slash command; False when the user asked to quit."""
    if command == "/quit":
        return False
    if command in MEMORY_COMMANDS:
        console.print(memory_view(session.graph.store, MEMORY_COMMANDS[command], session.user_id))
    elif command == "/new":
        console.print(f"New thread {session.new_thread()}.")
    elif command == "/help":
        for name, meaning in COMMANDS.items():
            console.print(f"{name:<14} {meaning}", markup=False)
    else:
        console.print(f"Unknown command {command}; /help lists the commands.", markup=False)
    return True


def run_chat(session: ChatSession, console: Console, read_line: Callable[[], str]) -> None:
    """Chat until /quit, end of input or Ctrl-C; endpoint errors are reported and the loop goes on."""
    try:
        while True:
            try:
                text = read_line().strip()
            except EOFError:
                return
            if not text:
                continue
            if text.startswith("/"):
                if not _run_command(text.split()[0].lower(), session, console):
                    return
                continue
            try:
                print_turn(console, session.send(text))
            except (ModelUnavailableError, openai.APIConnectionError, openai.APIStatusError) as error:
                cause = error.__cause__ if isinstance(error, ModelUnavailableError) else error
                console.print(Text(endpoint_problem(cause), style="red"), soft_wrap=True)
    except KeyboardInterrupt:
        console.print()
