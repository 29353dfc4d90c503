"""`maistro reminders`: a user's reminders on a server (`langgraph dev` or Aegra), listed, added and cancelled
through `langgraph_sdk` with the user's own token (registered in graph/app/cli.py).

A reminder is a cron of the server on one of the user's threads: at each time of its schedule the server runs
the agent on that thread with the reminder's message (by default, asking what is overdue or due today), and the
answer lands in the thread, where the user's client shows it. The server's auth rules (`graph.server.auth.own_crons`)
keep each user's reminders to themselves. Without a server there is no scheduler: `maistro due` is the digest, run
from the system's cron (docs/operating/reminders.md).
"""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from graph.names import AGENT_NAME
from prompts import REMIND_DIGEST

if TYPE_CHECKING:
    from langgraph_sdk.client import SyncLangGraphClient

DIGEST = REMIND_DIGEST
DAILY_AT_EIGHT = "0 8 * * *"
TITLE = "Reminders"

reminders_app = typer.Typer(
    help="List, add and cancel your reminders on a server (its crons on your threads), with your token.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

ServerOption = Annotated[str | None, typer.Option("--server", "-s", help="The server's URL, e.g. http://127.0.0.1:2024.")]
NO_SERVER = (
    "Reminders need a server (langgraph dev or Aegra) to run them: pass --server URL. Without one, `maistro due` is "
    "the digest; run it from the system's cron, e.g. `0 8 * * * maistro due --user YOU`."
)
TokenOption = Annotated[
    str | None,
    typer.Option("--token", envvar="LANGGRAPH_API_KEY", help="Your token on the server (default: LANGGRAPH_API_KEY)."),
]


def _fail(message: str) -> NoReturn:
    typer.echo(message, err=True)
    raise typer.Exit(1)


def refusal(error: Exception, server: str) -> str:
    """One sentence for a failed request to the server."""
    import httpx

    if isinstance(error, httpx.HTTPStatusError):
        status = error.response.status_code
        if status == 401:
            return f"The server {server} refused the token: pass yours with --token or LANGGRAPH_API_KEY."
        if status == 404:
            return "The server has no such reminder or thread of yours."
        try:
            detail = error.response.json().get("detail", error.response.text)
        except ValueError:
            detail = error.response.text
        return f"The server {server} refused the request (HTTP {status}): {str(detail)[:200]}"
    return f"Cannot reach the server {server} ({type(error).__name__}): is it running?"


@contextmanager
def _client(server: str | None, token: str | None) -> Iterator["SyncLangGraphClient"]:
    """A client of `server` with the user's token; no server, or a refused or failed request, ends the command with
    what to do."""
    import httpx
    from langgraph_sdk import get_sync_client

    if not server:
        _fail(NO_SERVER)
    client = get_sync_client(url=server, api_key=token or None, timeout=30)
    try:
        yield client
    except (httpx.HTTPError, OSError) as error:
        _fail(refusal(error, server))


def reminder_text(cron: dict[str, Any]) -> str:
    """The message a cron's runs send the agent (the last user message of its input), or "" when it has none."""
    messages = ((cron.get("payload") or {}).get("input") or {}).get("messages") or []
    texts = [message.get("content") for message in messages if isinstance(message, dict)]
    return str(texts[-1]) if texts else ""


def reminder_timezone(cron: dict[str, Any]) -> str:
    """The time zone a cron's schedule is read in: langgraph-api lists it on the cron, Aegra in its payload."""
    return str(cron.get("timezone") or (cron.get("payload") or {}).get("timezone") or "UTC")


def add_reminder(
    client: "SyncLangGraphClient", thread_id: str | None, schedule: str, timezone: str | None, text: str, assistant_id: str
) -> dict[str, Any]:
    """Schedule `text` on the user's thread (a new one when `thread_id` is None); the reminder as the server lists it.

    The cron is made disabled, then enabled: Aegra runs a new enabled cron once at once, langgraph-api does not,
    and a reminder should speak first at its time on both. A schedule naming one date a year ends after that date
    (`graph.schedules.cron_end_time`; Aegra names itself on `/info`); a bad schedule or zone is left for the
    server to refuse in its own words.
    """
    from datetime import UTC, datetime

    from graph.run_context import known_zone
    from graph.schedules import cron_end_time, schedule_problem

    zone = timezone or "UTC"
    end_time = None
    if schedule_problem(schedule) is None and known_zone(zone):
        aegra = client.http.get("/info").get("name") == "Aegra"
        end_time = cron_end_time(schedule, zone, datetime.now(UTC), aegra=aegra)
    if thread_id is None:
        thread_id = client.threads.create(metadata={"title": TITLE})["thread_id"]
    before = {cron["cron_id"] for cron in client.crons.search(thread_id=thread_id, limit=100)}
    client.crons.create_for_thread(
        thread_id,
        assistant_id,
        schedule=schedule,
        timezone=timezone,
        input={"messages": [{"role": "user", "content": text}]},
        enabled=False,
        end_time=end_time,
    )
    (made,) = [cron for cron in client.crons.search(thread_id=thread_id, limit=100) if cron["cron_id"] not in before]
    return client.crons.update(made["cron_id"], enabled=True)


def list_reminders(client: "SyncLangGraphClient") -> list[dict[str, Any]]:
    """The user's reminders (every cron of theirs the server lists), soonest first."""
    crons = client.crons.search(limit=100, sort_by="next_run_date", sort_order="asc")
    return list(crons)


@reminders_app.command("list")
def list_command(server: ServerOption = None, token: TokenOption = None,
                 as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False) -> None:
    """List your reminders on the server: when each runs next, on which thread, and what it asks."""
    with _client(server, token) as client:
        crons = list_reminders(client)
    if as_json:
        import json

        typer.echo(json.dumps(crons, ensure_ascii=False, indent=2, default=str))
        return
    if not crons:
        typer.echo(f"You have no reminders on {server}.")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("id", "schedule", "time zone", "next", "thread", "message", title="Reminders")
    for cron in crons:
        schedule = cron["schedule"] if cron.get("enabled", True) else f"{cron['schedule']} (paused)"
        table.add_row(str(cron["cron_id"]), schedule, reminder_timezone(cron),
                      str(cron.get("next_run_date") or ""), str(cron.get("thread_id") or ""), reminder_text(cron))
    Console().print(table)


@reminders_app.command("add")
def add_command(
    server: ServerOption = None,
    token: TokenOption = None,
    schedule: Annotated[str, typer.Option(help="When, as a cron line (minute hour day month weekday).")] = DAILY_AT_EIGHT,
    timezone: Annotated[str | None, typer.Option(help="The schedule's IANA time zone (default: the server's UTC).")] = None,
    thread: Annotated[str | None, typer.Option(help="The thread it posts into (default: a new one).")] = None,
    message: Annotated[str, typer.Option(help="What the reminder asks the agent.")] = DIGEST,
    assistant: Annotated[str, typer.Option(help="The assistant that answers.")] = AGENT_NAME,
) -> None:
    """Add a reminder: at each time of --schedule the agent answers --message in your thread."""
    with _client(server, token) as client:
        cron = add_reminder(client, thread, schedule, timezone, message, assistant)
    typer.echo(f"Reminder {cron['cron_id']} added: {cron['schedule']} ({reminder_timezone(cron)}), "
               f"into thread {cron['thread_id']}.")


@reminders_app.command("cancel")
def cancel_command(cron_id: Annotated[str, typer.Argument(help="The reminder's id (from `maistro reminders list`).")],
                   server: ServerOption = None, token: TokenOption = None) -> None:
    """Cancel one of your reminders."""
    with _client(server, token) as client:
        client.crons.delete(cron_id)
    typer.echo(f"Reminder {cron_id} cancelled.")
