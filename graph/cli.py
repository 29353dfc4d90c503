"""The `maistro` console script: chat, look at, export, import and forget a user's memories, or run the demo."""

import json
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from langgraph.graph.state import CompiledStateGraph
from rich.console import Console

from graph.chat_loop import line_reader, run_chat, terminal_reader
from graph.chat_session import ChatSession
from graph.configuration import Configuration
from graph.demo import DemoError, run_demo
from graph.history import UnknownChangeError, list_history, undo_change
from graph.memory_admin import (
    InvalidExportError,
    export_memories,
    forget_user,
    import_memories,
    last_thread,
    user_items,
    user_threads,
)
from graph.memory_store import INSTRUCTIONS, PROFILE, TODO
from graph.memory_tables import history_table, memory_view
from graph.model import NO_MODEL_MESSAGE, ModelNotConfiguredError, ensure_model_configured, load_chat_model
from graph.persistence import build_graph

NO_MODEL_SENTENCE = NO_MODEL_MESSAGE.removesuffix(".") + "; or run `maistro demo` to try task-maistro without a key."

app = typer.Typer(
    help="Chat with an assistant that remembers your profile, ToDo list and instructions.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

UserOption = Annotated[
    str | None, typer.Option("--user", "-u", help="User id (default: MAISTRO_DEFAULT_USER or default-user).")
]
DataDirOption = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Directory of the SQLite database (default: MAISTRO_DATA_DIR or your data dir)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON (store key → value) instead of a table.")]


def _fail(message: str) -> NoReturn:
    typer.echo(message, err=True)
    raise typer.Exit(1)


def _user(user: str | None) -> str:
    return Configuration(user_id=user or "").resolved_user_id


def _graph(data_dir: Path | None, retries: int | None = None) -> CompiledStateGraph:
    return build_graph(data_dir, chat_model=partial(load_chat_model, max_retries=retries))


@app.command()
def chat(
    user: UserOption = None,
    thread: Annotated[
        str | None, typer.Option("--thread", "-t", help="Thread id (default: your last thread, else a new one).")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model name (default: MAISTRO_MODEL).")] = None,
    data_dir: DataDirOption = None,
    retries: Annotated[int, typer.Option(help="How often to retry a failed model request.")] = 2,
) -> None:
    """Chat; the reply streams and a note says when a memory changed. Reads one message per line from a pipe."""
    try:
        ensure_model_configured()
    except ModelNotConfiguredError:
        _fail(NO_MODEL_SENTENCE)
    graph = _graph(data_dir, retries)
    user_id = _user(user)
    thread_id = thread or last_thread(graph.checkpointer, user_id)
    session = ChatSession(graph, user_id, thread_id, model)
    if not sys.stdin.isatty():
        plain = Console(color_system=None, highlight=False, emoji=False)
        run_chat(session, plain, line_reader(sys.stdin))
        return
    console = Console(highlight=False)
    state = "continuing thread" if thread_id else "new thread"
    console.print(
        f"task-maistro · user {user_id} · model {model or Configuration().model} · {state} {session.thread_id} "
        "· /help lists the commands",
        markup=False,
        style="dim",
    )
    run_chat(session, console, terminal_reader(console))
    console.print(f"Bye. Thread {session.thread_id} is saved: `maistro chat` continues it.", markup=False)


def _show(kind: str, user: str | None, as_json: bool, data_dir: Path | None) -> None:
    graph, user_id = _graph(data_dir), _user(user)
    if as_json:
        typer.echo(json.dumps(export_memories(graph.store, user_id)[kind], ensure_ascii=False, indent=2))
    else:
        Console().print(memory_view(graph.store, kind, user_id))


@app.command()
def todos(user: UserOption = None, as_json: JsonOption = False, data_dir: DataDirOption = None) -> None:
    """Show the ToDo list: task, status, deadline, time to complete, solutions."""
    _show(TODO, user, as_json, data_dir)


@app.command()
def profile(user: UserOption = None, as_json: JsonOption = False, data_dir: DataDirOption = None) -> None:
    """Show the profile: name, location, job, connections, interests."""
    _show(PROFILE, user, as_json, data_dir)


@app.command()
def instructions(user: UserOption = None, as_json: JsonOption = False, data_dir: DataDirOption = None) -> None:
    """Show the instructions for writing ToDos."""
    _show(INSTRUCTIONS, user, as_json, data_dir)


@app.command()
def export(
    user: UserOption = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file (default: stdout).")] = None,
    data_dir: DataDirOption = None,
) -> None:
    """Export all of a user's memories as JSON (store keys preserved)."""
    user_id = _user(user)
    text = json.dumps(export_memories(_graph(data_dir).store, user_id), ensure_ascii=False, indent=2)
    if output is None:
        typer.echo(text)
        return
    output.write_text(text + "\n", encoding="utf-8")
    typer.echo(f"Exported the memories of {user_id} to {output}.")


@app.command("import")
def import_(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="A file written by `maistro export`.")],
    user: UserOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Import memories exported by `maistro export` into a user (items with the same keys are replaced)."""
    user_id = _user(user)
    try:
        counts = import_memories(_graph(data_dir).store, user_id, json.loads(file.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, InvalidExportError) as error:
        _fail(f"Cannot import {file}: {error}")
    summary = ", ".join(f"{count} {kind}" for kind, count in counts.items())
    typer.echo(f"Imported into {user_id}: {summary}.")


@app.command()
def forget(
    user: Annotated[str, typer.Option("--user", "-u", help="The user to forget.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    data_dir: DataDirOption = None,
) -> None:
    """Delete every memory and every thread of a user (nothing of other users)."""
    graph, user_id = _graph(data_dir), _user(user)
    memories, threads = len(user_items(graph.store, user_id)), len(user_threads(graph.checkpointer, user_id))
    if not memories and not threads:
        typer.echo(f"Nothing is stored for {user_id}.")
        return
    if not yes:
        typer.confirm(
            f"Delete {memories} memories and {threads} threads of {user_id}? This cannot be undone", abort=True
        )
    memories, threads = forget_user(graph.store, graph.checkpointer, user_id)
    typer.echo(f"Forgot {user_id}: deleted {memories} memories and {threads} threads.")


@app.command()
def history(user: UserOption = None, as_json: JsonOption = False, data_dir: DataDirOption = None) -> None:
    """Show every change to a user's memories, oldest first (ids for `maistro undo`)."""
    graph, user_id = _graph(data_dir), _user(user)
    entries = list_history(graph.store, user_id)
    if as_json:
        typer.echo(json.dumps(entries, ensure_ascii=False, indent=2))
    else:
        Console().print(history_table(entries, user_id))


@app.command()
def undo(
    change: Annotated[
        str | None, typer.Argument(help="Change id (or its first characters) from `maistro history`; default: the last.")
    ] = None,
    user: UserOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Revert a change to a user's memories (the last one by default); an undo can be undone too."""
    graph, user_id = _graph(data_dir), _user(user)
    matches = [e["id"] for e in list_history(graph.store, user_id) if change and e["id"].startswith(change)]
    if change and len(matches) != 1:
        _fail(f"{len(matches) or 'No'} changes of {user_id} start with {change!r}; see `maistro history`.")
    try:
        entry = undo_change(graph.store, user_id, matches[0] if change else None)
    except UnknownChangeError as error:
        _fail(f"Nothing to undo for {user_id}: {error}.")
    typer.echo(f"Undid change {entry['undoes'][:8]} of {user_id}: {entry['kind']} {entry['key']} {entry['action']}.")


@app.command()
def demo(
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Keep the demo's database here (default: a temporary directory).")
    ] = None,
) -> None:
    """Replay the tutorial conversation with a scripted model (no API key needed) and show the memories."""
    console = Console(highlight=False)
    try:
        if data_dir is not None:
            run_demo(console, data_dir)
            return
        with tempfile.TemporaryDirectory(prefix="maistro-demo-", ignore_cleanup_errors=True) as directory:
            run_demo(console, Path(directory), temporary=True)
    except DemoError as error:
        _fail(str(error))


if __name__ == "__main__":
    app()
