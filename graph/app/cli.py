"""The `maistro` console script: chat, look at, export, import and forget a user's memories, or run the demo.

Commands import what they use when they run, so `maistro --help` starts in a blink; read-only commands
(`todos`, `profile`, `instructions`, `due`, `history`, `export`) open the store alone: no graph, no model client.
"""

import json
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from graph.memory.store import InvalidUserIdError, check_user_id

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.store.base import BaseStore

    from graph.memory.kinds import MemoryKind
    from graph.memory.pending import PendingChange

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
# How many changes `maistro history` shows unless told: a screenful.
HISTORY_LIMIT = 20
# How many days ahead `maistro due` looks unless told: a week.
DUE_DAYS = 7
# How often `maistro pending --retry` retries a failed model request (as `maistro chat` does unless told).
RETRY_REQUESTS = 2
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON (store key → value) instead of a table.")]


def _fail(message: str) -> NoReturn:
    typer.echo(message, err=True)
    raise typer.Exit(1)


def _print_version(requested: bool) -> None:
    if requested:
        from importlib.metadata import version

        typer.echo(f"maistro (task-maistro) {version('task-maistro')}")
        raise typer.Exit()


@app.callback()
def options(
    version: Annotated[
        bool, typer.Option("--version", help="Print the version and exit.", callback=_print_version, is_eager=True)
    ] = False,
) -> None:
    """Chat with an assistant that remembers your profile, ToDo list and instructions."""


def _count(number: int, singular: str, plural: str) -> str:
    return f"{number} {singular if number == 1 else plural}"


@contextmanager
def _storage_errors(data_dir: Path | None) -> Iterator[None]:
    """Turn a storage problem the user can fix (read-only or blocked data directory, damaged database) into one
    sentence and exit code 1; anything else propagates."""
    try:
        yield
    except Exception as error:
        if not isinstance(error, OSError) and not hasattr(error, "sqlite_errorname"):
            raise
        from graph.app.errors import storage_problem
        from graph.backends.storage import default_data_dir

        problem = storage_problem(error, data_dir or default_data_dir())
        if problem is None:
            raise
        _fail(problem)


def _user(user: str | None) -> str:
    from graph.run_context import RunContext

    return check_user_id(RunContext(user_id=user or "").resolved_user_id)


@contextmanager
def _graph(data_dir: Path | None, retries: int | None = None) -> Iterator["CompiledStateGraph"]:
    from functools import partial

    from graph.agent import open_graph
    from graph.backends.model import load_chat_model

    chat_model = partial(load_chat_model, max_retries=retries)
    with _storage_errors(data_dir), open_graph(data_dir, chat_model=chat_model) as graph:
        yield graph


@contextmanager
def _store(data_dir: Path | None, *, index: bool = False) -> Iterator["BaseStore"]:
    """The store alone; with the semantic index only for writes (`index`), so that new items get embedded."""
    from graph.backends.storage import open_store

    with _storage_errors(data_dir), open_store(data_dir, embeddings=None if index else "") as store:
        yield store


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
    """Chat; the reply streams and a note says when a memory changed. Reads one message per line from a pipe.

    Exits 1 when a message is left without an answer (the endpoint failed), 130 when Ctrl-C stopped a turn.
    """
    from rich.console import Console

    from graph.app.session import ChatSession, ThreadOwnerError
    from graph.app.terminal import line_reader, run_chat, terminal_reader
    from graph.backends.model import NO_MODEL_MESSAGE, ModelNotConfiguredError, ensure_model_configured
    from graph.backends.thread_locks import open_thread_locks
    from graph.memory.admin import last_thread
    from graph.run_context import RunContext

    if retries < 0:
        _fail("--retries must be 0 or more.")
    try:
        ensure_model_configured()
    except ModelNotConfiguredError:
        _fail(NO_MODEL_MESSAGE.removesuffix(".") + "; or run `maistro demo` to try task-maistro without a key.")
    interactive = sys.stdin.isatty()
    console = Console(highlight=False) if interactive else Console(color_system=None, highlight=False, emoji=False)
    with _graph(data_dir, retries) as graph, open_thread_locks(data_dir) as locks:
        user_id = _user(user)
        try:
            thread_id = thread or last_thread(graph.checkpointer, user_id)
            session = ChatSession(graph, user_id, thread_id, model, locks=locks)
        except ThreadOwnerError:
            _fail(f"Thread {thread} belongs to another user: pass one of your own threads, or leave out --thread.")
        if session.busy_thread:
            typer.echo(
                f"Thread {session.busy_thread} is open in another chat; starting a new thread {session.thread_id}.",
                err=not interactive,
            )
        if interactive:
            state = "continuing thread" if graph.checkpointer.get_tuple(session.config) else "new thread"
            console.print(
                f"task-maistro · user {user_id} · model {model or RunContext().model} · {state} "
                f"{session.thread_id} · /help lists the commands",
                markup=False,
                style="dim",
            )
        try:
            outcome = run_chat(session, console, terminal_reader(console) if interactive else line_reader(sys.stdin))
        except KeyboardInterrupt:  # a second Ctrl-C while the first was being reported
            _leave_now(130)
        if interactive:
            console.print(f"Bye. Thread {session.thread_id} is saved: `maistro chat` continues it.", markup=False)
        if outcome.interrupted:
            _leave_now(130)
    if outcome.unanswered:
        raise typer.Exit(1)


def _leave_now(code: int) -> NoReturn:
    """Exit at once, without waiting for a turn still running in its worker thread (a model request cannot be
    cancelled from outside). Like a crash, this loses at most the step in flight: with "sync" durability
    every finished step is on disk, the next message finishes the turn first, and the operating system
    releases the thread lock."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _show(kind: "MemoryKind", user: str | None, as_json: bool, data_dir: Path | None) -> None:
    user_id = _user(user)
    with _store(data_dir) as store:
        if kind.done_status:  # the list alone: what was finished long ago moves to the done log first
            from graph.memory.done_log import move_finished

            move_finished(store, user_id, [kind])
        if as_json:  # the kind's section of `maistro export`, read from its namespace alone (not the done log, the history)
            from graph.memory.store import namespace, search_all

            where = namespace(kind, user_id)
            documents = dict(sorted((item.key, item.value) for item in search_all(store, where) if item.namespace == where))
            typer.echo(json.dumps(documents, ensure_ascii=False, indent=2))
        else:
            from rich.console import Console

            from graph.app.tables import memory_view

            Console().print(memory_view(store, kind, user_id))


def _declared(name: str) -> "MemoryKind":
    """The declared memory kind called `name`; one sentence naming the declared kinds, and exit 1, when there is none."""
    from graph.memory.kinds import UnknownKindError, configured_kinds, kind_named

    kinds = configured_kinds()
    try:
        return kind_named(kinds, name)
    except UnknownKindError:
        _fail(f"There is no memory kind {name!r}; the kinds are {', '.join(known.name for known in kinds)}.")


def _show_named(name: str, user: str | None, as_json: bool, data_dir: Path | None) -> None:
    """Show the declared memory kind called `name`; one sentence naming the declared kinds when there is none."""
    _show(_declared(name), user, as_json, data_dir)


def _show_past(name: str, user: str | None, as_json: bool, data_dir: Path | None) -> None:
    """Show the past facts of the declared memory kind called `name` (`graph.app.provenance_cli`)."""
    from graph.app.provenance_cli import past_lines
    from graph.memory.provenance import past_facts

    kind, user_id = _declared(name), _user(user)
    with _store(data_dir) as store:
        if as_json:  # shaped like the "past_facts" section of `maistro export`
            facts = {item.key: item.value for item in past_facts(store, user_id, kind)}
            typer.echo(json.dumps(facts, ensure_ascii=False, indent=2))
            return
        typer.echo("\n".join(past_lines(store, kind, user_id)))


@app.command()
def todos(user: UserOption = None, as_json: JsonOption = False, data_dir: DataDirOption = None) -> None:
    """Show the ToDo list: task, status, deadline, time to complete, solutions (`show todo`)."""
    show("todo", user, as_json, data_dir)


@app.command()
def profile(user: UserOption = None, as_json: JsonOption = False, data_dir: DataDirOption = None) -> None:
    """Show the profile: name, location, job, connections, interests (`show profile`)."""
    show("profile", user, as_json, data_dir)


@app.command()
def instructions(user: UserOption = None, as_json: JsonOption = False, data_dir: DataDirOption = None) -> None:
    """Show the instructions for writing ToDos (`show instructions`)."""
    show("instructions", user, as_json, data_dir)


@app.command()
def due(
    days: Annotated[
        int, typer.Option("--days", "-d", min=0, help=f"Show what is due within N days (default {DUE_DAYS}; 0: today).")
    ] = DUE_DAYS,
    user: UserOption = None,
    as_json: JsonOption = False,
    data_dir: DataDirOption = None,
) -> None:
    """Show the open ToDos that are due: overdue ones first, then those due within --days days, by deadline (in
    the user's time zone: their profile's, else MAISTRO_TIMEZONE's), read from the store without a model."""
    from graph.memory.due import due_items
    from graph.memory.kinds import configured_kinds
    from graph.memory.rendering import joined
    from graph.memory.store import read_kind
    from graph.memory.user_time import profile_zone
    from graph.run_context import RunContext

    user_id = _user(user)
    kinds = [kind for kind in configured_kinds() if kind.deadline_field]
    if not kinds:
        _fail("No memory kind declares a deadline_field, so nothing can be due.")
    with _store(data_dir) as store:
        singles = [kind for kind in configured_kinds() if not kind.collection]
        now = RunContext().now(profile_zone({kind.name: [i.value for i in read_kind(store, kind, user_id)] for kind in singles}))
        found = [
            (kind, due_items(read_kind(store, kind, user_id), now, days, deadline_field=kind.deadline_field, is_open=kind.is_open))
            for kind in kinds
        ]
    items = [item for _, listed in found for item in (*listed.overdue, *listed.upcoming)]
    if as_json:
        typer.echo(json.dumps({item.key: item.value for item in items}, ensure_ascii=False, indent=2))
        return
    if not items:
        last_day = found[0][1].last_day
        plurals = joined([kind.plural for kind in kinds])
        typer.echo(f"Nothing is due for {user_id}: no open {plurals} overdue or due by {last_day:%Y-%m-%d}.")
        return
    from rich.console import Console

    from graph.app.tables import due_tables

    console = Console()
    for kind, listed in found:
        for table in due_tables(kind, listed, user_id):
            console.print(table)


@app.command()
def done(
    since: Annotated[str | None, typer.Option("--since", help="Only what was finished on or after this day (YYYY-MM-DD, UTC).")] = None,
    find: Annotated[str, typer.Option("--find", help="Only what holds this text in its task or solutions (case-insensitive).")] = "",
    user: UserOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (by kind: count, count by month, items) instead of a table.")] = False,
    data_dir: DataDirOption = None,
) -> None:
    """Show what was finished: a count line, then the done log's items, oldest first (ToDos move there
    MAISTRO_DONE_LOG_AFTER_DAYS after they were marked done)."""
    from graph.app.done_view import InvalidDateError, done_reports, parse_since
    from graph.memory.kinds import configured_kinds

    user_id = _user(user)
    try:
        day = parse_since(since)
    except InvalidDateError as error:
        _fail(str(error))
    with _store(data_dir) as store:
        reports = done_reports(store, user_id, configured_kinds(), day, find)
    if not reports:
        _fail("No memory kind declares a done_status, so nothing keeps a done log.")
    if as_json:
        typer.echo(json.dumps({report.kind.name: report.as_json() for report in reports}, ensure_ascii=False, indent=2))
        return
    from rich.console import Console

    console = Console()
    for report in reports:
        console.print(report.count_line(user_id))
        if len(report.by_month) > 1:
            console.print("By month (UTC): " + ", ".join(f"{month}: {count:,}" for month, count in report.by_month.items()))
        if report.entries:
            console.print(report.table())


@app.command()
def show(
    kind: Annotated[str, typer.Argument(help="A memory kind's name: profile, todo, instructions, or one MAISTRO_MEMORY_KINDS adds.")],
    user: UserOption = None,
    as_json: JsonOption = False,
    data_dir: DataDirOption = None,
    past: Annotated[bool, typer.Option("--past", help="Show the facts it held that were replaced or deleted, with when they held.")] = False,
) -> None:
    """Show one memory kind of a user: a table of its documents, or its text; with --past, what it held before."""
    (_show_past if past else _show_named)(kind, user, as_json, data_dir)


@app.command()
def why(
    kind: Annotated[str, typer.Argument(help="A memory kind's name: profile, todo, instructions, or one MAISTRO_MEMORY_KINDS adds.")],
    name: Annotated[str | None, typer.Argument(help="A field of a single document (location), or a document's key or summary (a task).")] = None,
    user: UserOption = None,
    as_json: JsonOption = False,
    data_dir: DataDirOption = None,
) -> None:
    """Show where a memory's current value came from: the user's words, the thread, the date and the model."""
    from graph.app.provenance_cli import UnknownMemoryError, why_json, why_lines

    chosen, user_id = _declared(kind), _user(user)
    with _store(data_dir) as store:
        try:
            if as_json:
                typer.echo(json.dumps(why_json(store, chosen, user_id, name), ensure_ascii=False, indent=2))
                return
            typer.echo("\n".join(why_lines(store, chosen, user_id, name)))
        except UnknownMemoryError as error:
            _fail(str(error))


@app.command()
def export(
    user: UserOption = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file (default: stdout).")] = None,
    data_dir: DataDirOption = None,
) -> None:
    """Export all of a user's memories as JSON (store keys preserved), those of kinds not declared too; pending
    changes stay out (a warning counts them)."""
    from graph.memory.admin import export_memories, undeclared_sections
    from graph.memory.kinds import configured_kinds
    from graph.memory.pending import list_pending

    user_id, kinds = _user(user), configured_kinds()
    with _store(data_dir) as store:
        exported = export_memories(store, user_id, kinds)
        kept = len(list_pending(store, user_id))
    if kept:
        typer.echo(f"Warning: {user_id} has {_count(kept, 'pending change', 'pending changes')}; exports leave them out "
                   "(see `maistro pending`).", err=True)
    for name in undeclared_sections(exported, kinds):
        typer.echo(f"Warning: {user_id} has memories of a kind not declared, {name!r}; "
                   f"they are exported as stored ({_count(len(exported[name]), 'document', 'documents')}).", err=True)
    chunks = json.JSONEncoder(ensure_ascii=False, indent=2).iterencode(exported)  # written as encoded, not joined
    if output is None:
        sys.stdout.writelines(chunks)
        typer.echo()
        return
    try:
        with output.open("w", encoding="utf-8") as file:
            file.writelines(chunks)
            file.write("\n")
    except OSError as error:
        _fail(f"Cannot write {output}: {error.strerror}.")
    typer.echo(f"Exported the memories of {user_id} to {output}.")


@app.command("import")
def import_(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="A file written by `maistro export`.")],
    user: UserOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Import memories exported by `maistro export` into a user (items with the same keys are replaced)."""
    from graph.memory.admin import InvalidExportError, import_memories, undeclared_sections
    from graph.memory.export_file import read_export
    from graph.memory.kinds import configured_kinds

    user_id, kinds = _user(user), configured_kinds()
    try:
        data = read_export(file)
        with _store(data_dir, index=True) as store:
            counts = import_memories(store, user_id, data, kinds)
    except InvalidExportError as error:
        _fail(f"Cannot import {file}: {error}.")
    summary = ", ".join(f"{count} {kind}" for kind, count in counts.items())
    typer.echo(f"Imported into {user_id}: {summary}.")
    for name in undeclared_sections(counts, kinds):
        typer.echo(f"Warning: {name!r} is not a declared memory kind; its documents were stored as they are.", err=True)


@app.command()
def forget(
    user: Annotated[str, typer.Option("--user", "-u", help="The user to forget.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    data_dir: DataDirOption = None,
) -> None:
    """Delete every memory and every thread of a user (nothing of other users), erase them on disk, print a receipt."""
    from graph.backends.storage import close_storage, open_storage
    from graph.memory.admin import forget_user, user_items, user_threads

    if not user.strip():
        _fail("--user must name the user to forget; it cannot be blank.")
    user_id = user
    with _storage_errors(data_dir):
        checkpointer, store = open_storage(data_dir)
        try:
            memories, threads = len(user_items(store, user_id)), len(user_threads(checkpointer, user_id))
            if (memories or threads) and not yes:
                typer.confirm(
                    f"Delete {_count(memories, 'memory', 'memories')} and {_count(threads, 'thread', 'threads')} "
                    f"of {user_id}? This cannot be undone",
                    abort=True,
                )
            receipt = forget_user(store, checkpointer, user_id)  # with nothing stored, it still erases
        finally:
            close_storage(checkpointer, store)
    if not receipt.memories and not receipt.threads:
        typer.echo(f"Nothing is stored for {user_id}.")
    else:
        deleted = f"{_count(receipt.memories, 'memory', 'memories')} and {_count(receipt.threads, 'thread', 'threads')}"
        typer.echo(f"Forgot {user_id}: deleted {deleted}.")
        typer.echo("Rows deleted, by table:")
        width = max(map(len, receipt.rows))
        for table, count in receipt.rows.items():
            typer.echo(f"  {table:<{width}}  {count:>7,}")
    for sentence in receipt.erased:
        typer.echo(f"Erased: {sentence}")
    for sentence in receipt.kept:
        typer.echo(f"Not erased: {sentence}")


@app.command()
def history(
    user: UserOption = None,
    limit: Annotated[
        int | None,
        typer.Option("--limit", "-n", min=1, help=f"Show the newest N changes (oldest of them first; default {HISTORY_LIMIT})."),
    ] = None,
    every: Annotated[bool, typer.Option("--all", help="Show every change, however many.")] = False,
    as_json: JsonOption = False,
    data_dir: DataDirOption = None,
) -> None:
    """Show the newest changes to a user's memories, oldest of them first (ids for `maistro undo`)."""
    from rich.console import Console

    from graph.app.tables import history_table
    from graph.memory.history import history_page
    from graph.memory.kinds import configured_kinds

    if every and limit is not None:
        _fail(f"--all shows every change and --limit {limit} the newest {limit}: pass one of them, not both.")
    user_id = _user(user)
    with _store(data_dir) as store:
        page = history_page(store, user_id, None if every else limit or HISTORY_LIMIT)
    entries = page.entries[::-1]
    if as_json:  # shaped like the "history" section of `maistro export`: store key (the change id) → entry
        typer.echo(json.dumps({entry["id"]: entry for entry in entries}, ensure_ascii=False, indent=2))
        return
    Console().print(history_table(entries, user_id, configured_kinds()))
    if len(entries) < page.total and not every:
        typer.echo(f"The {len(entries):,} newest of {page.total:,} changes; --limit N or --all shows more.")


@app.command()
def undo(
    change: Annotated[
        str | None, typer.Argument(help="Change id (or its first characters) from `maistro history`; default: the last.")
    ] = None,
    user: UserOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Revert a change to a user's memories (the last one by default, else the one whose id starts with at least
    4 given characters), naming the change it reverted and when it was made; an undo can be undone too."""
    from graph.app.tables import change_summary, undo_summary
    from graph.memory.changes import IrreversibleChangeError, UnknownChangeError, undo_change
    from graph.memory.history import (
        MIN_CHANGE_PREFIX,
        AmbiguousChangeError,
        PrunedChangeError,
        ShortChangeIdError,
        find_change,
        latest_change,
    )
    from graph.memory.kinds import configured_kinds

    user_id = _user(user)
    kinds = configured_kinds()
    with _store(data_dir, index=True) as store:
        try:
            target = find_change(store, user_id, change) if change else latest_change(store, user_id)
            if target is None:
                raise UnknownChangeError("the history is empty")
            entry = undo_change(store, user_id, target["id"], kinds)
        except ShortChangeIdError:
            _fail(
                f"{change!r} is too short to name a change: give at least {MIN_CHANGE_PREFIX} characters of its id "
                "(see `maistro history`)."
            )
        except AmbiguousChangeError:
            _fail(f"More than one change of {user_id} starts with {change!r}; give more of its id (see `maistro history`).")
        except PrunedChangeError as error:
            _fail(f"Cannot undo for {user_id}: {error}.")
        except UnknownChangeError as error:
            if change:
                _fail(f"No changes of {user_id} start with {change!r}; see `maistro history`.")
            _fail(f"Nothing to undo for {user_id}: {error}.")
        except IrreversibleChangeError as error:
            _fail(f"Cannot undo for {user_id}: {error}.")
    reverted = f"{target['id'][:8]} of {user_id} ({change_summary(target, kinds)})"
    typer.echo(f"Undid change {reverted}: {undo_summary(entry, kinds)}.")


@app.command()
def pending(
    retry: Annotated[str | None, typer.Option("--retry", help="Retry the pending change with this id (or its first characters).")] = None,
    drop: Annotated[str | None, typer.Option("--drop", help="Drop the pending change with this id (or its first characters).")] = None,
    user: UserOption = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model name for --retry (default: MAISTRO_MODEL).")] = None,
    as_json: JsonOption = False,
    data_dir: DataDirOption = None,
) -> None:
    """List the updates that failed and were kept as pending changes, one a line with its id; --retry ID proposes
    one again from your message against the memories as they are now (exit 1 if it fails again), --drop ID
    removes it."""
    from graph.app.pending_lines import pending_line
    from graph.memory.pending import (
        AmbiguousPendingError,
        UnknownPendingError,
        drop_pending,
        list_pending,
        pending_change,
    )

    if retry and drop:
        _fail("--retry and --drop each name one pending change: pass one of them, not both.")
    user_id = _user(user)
    if not (retry or drop):
        with _store(data_dir) as store:
            kept = list_pending(store, user_id)
        if as_json:  # store key (the pending change's id) → pending change
            typer.echo(json.dumps({entry.id: entry.model_dump() for entry in kept}, ensure_ascii=False, indent=2))
        elif not kept:
            typer.echo(f"No pending changes for {user_id}: every update was saved or dropped.")
        for entry in kept if not as_json else []:
            typer.echo(pending_line(entry))
        return
    given = retry or drop or ""
    with _store(data_dir, index=True) as store:
        try:
            entry = pending_change(store, user_id, given)
        except AmbiguousPendingError:
            _fail(f"More than one pending change of {user_id} starts with {given!r}; give more of its id (see `maistro pending`).")
        except UnknownPendingError:
            _fail(f"No pending change of {user_id} has the id {given!r}; see `maistro pending`.")
        if drop:
            drop_pending(store, user_id, entry)
            typer.echo(f"Dropped pending change {entry.id[:8]} of {user_id} ({pending_line(entry, with_id=False)}).")
            return
    _retry_pending(entry, user_id, model, data_dir)


def _retry_pending(entry: "PendingChange", user_id: str, model: str | None, data_dir: Path | None) -> None:
    """Retry one pending change through the graph's update node; print its notes; exit 1 if it failed again."""
    from functools import partial

    from graph.backends.model import (
        NO_MODEL_MESSAGE,
        ModelNotConfiguredError,
        ModelUnavailableError,
        ensure_model_configured,
        load_chat_model,
    )
    from graph.memory.kinds import UnknownKindError
    from graph.nodes.pending_retry import retry_pending
    from graph.runtime import runtime_of

    try:
        ensure_model_configured()
    except ModelNotConfiguredError:
        _fail(NO_MODEL_MESSAGE)
    with _graph(data_dir, RETRY_REQUESTS) as graph:
        chat_model = partial(load_chat_model, max_retries=RETRY_REQUESTS)
        try:
            outcome = retry_pending(graph.store, runtime_of(graph), chat_model, user_id, entry, model)
        except UnknownKindError:
            _fail(f"Pending change {entry.id[:8]} is for the memory {entry.kind!r}, which is not declared (MAISTRO_MEMORY_KINDS).")
        except ModelUnavailableError:
            _fail(f"Pending change {entry.id[:8]} is still pending: the model endpoint kept failing; try again later.")
    for note in outcome.notes:
        typer.echo(f"{'✗' if outcome.failed else '✎'} {note}")
    if outcome.failed:
        _fail(f"Pending change {entry.id[:8]} failed again and is still pending; `maistro pending --drop {entry.id[:8]}` drops it.")
    typer.echo(f"Pending change {entry.id[:8]} is saved and no longer pending.")


@app.command()
def reindex(data_dir: DataDirOption = None) -> None:
    """Index the memories saved while the semantic index (MAISTRO_EMBEDDINGS) was unavailable, for every user.

    Exits 1 when some still wait because the index is still unavailable.
    """
    from graph.memory.index_outage import reindex as index_again
    from graph.memory.index_outage import waiting
    from graph.memory.kinds import configured_kinds
    from graph.settings import current_settings

    if not current_settings().embeddings:
        _fail("MAISTRO_EMBEDDINGS is not set: there is no semantic index to fill.")
    with _store(data_dir, index=True) as store:
        indexed = index_again(store, kinds=configured_kinds())
        left = waiting(store)
    typer.echo(f"Indexed {_count(indexed, 'memory', 'memories')} saved while the semantic index was unavailable.")
    if left:
        _fail(f"{_count(left, 'memory still waits', 'memories still wait')}: the semantic index is still unavailable.")


@app.command()
def demo(
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Keep the demo's database here (default: a temporary directory).")
    ] = None,
) -> None:
    """Replay the tutorial conversation with a scripted model (no API key needed) and show the memories."""
    from rich.console import Console

    from graph.app.demo import DemoError, run_demo

    console = Console(highlight=False)
    try:
        if data_dir is not None:
            with _storage_errors(data_dir):
                run_demo(console, data_dir)
            return
        with tempfile.TemporaryDirectory(prefix="maistro-demo-", ignore_cleanup_errors=True) as directory:
            run_demo(console, Path(directory), temporary=True)
    except DemoError as error:
        _fail(str(error))


from graph.app.reminders import reminders_app  # noqa: E402 - registered here, after the commands above
from graph.eval.cli import eval_app  # noqa: E402 - registered here, after the commands above

app.add_typer(eval_app, name="eval")
app.add_typer(reminders_app, name="reminders")


def main() -> None:
    """The console script: run the CLI; a bad MAISTRO_*/OPENAI_* setting or user id is one sentence and exit code 1."""
    try:
        app()
    except Exception as error:
        from graph.settings import SettingsError  # imported on failure only: --help never loads the settings

        if isinstance(error, InvalidUserIdError):
            typer.echo(str(error), err=True)
            sys.exit(1)
        if not isinstance(error, SettingsError):
            raise
        typer.echo(f"Configuration error: {error}", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
