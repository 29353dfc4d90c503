"""History at the cost of what is shown: `python -m bench.history [--postgres auto|URL|off] [--entries 20000]`.

Two users in one store, on SQLite and on PostgreSQL (`auto` starts a throwaway server): one with ten years of
daily use (20,000 history entries) and one with 50, cloned from what the agent writes (a template user plays
real turns through the graph, trustcall and `ChatOpenAI` against the zero-latency chore endpoint,
`testing.chore_endpoint`; its history entries and ToDos are copied with new ids and times). Both users hold the
same 50 open ToDos, so the ratios are the history's alone. Measured for each user, median wall time:

- the memory page's read (`graph.server.memory_page.read_memories`, the newest 50 entries and the count), and its
  poll when nothing changed (`memories_version`, what the endpoint compares before reading anything);
- undo of the latest change, and of a change named by the first 8 characters of its id;
- `maistro history` as a real CLI process (default: the 20 newest), and `maistro history --all` once;
- a one-memory turn (add a chore) through the graph;
- `maistro export`'s size (not a target: it holds every entry).

Targets: page read, undo and the default `maistro history` at most 2x the small user's, a turn at most 1.5x.
The users take turns call by call, so that the busy machine's load falls on both alike. Left out (printed at the
end): the API servers' own stores (`langgraph dev`'s in-memory store is read whole; Aegra's runs the same
statements), and a user whose list keeps thousands of done ToDos (the page reads every ToDo: the ToDo read's
cost, not the history's).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

from langchain_core.messages import HumanMessage
from langgraph.store.base import PutOp

from bench.run import create_database, database_url, postgres_admin, scale_messages
from graph import build_graph, close_graph
from graph.memory.admin import export_memories
from graph.memory.changes import list_history, undo_change
from graph.memory.kinds import DEFAULT_MEMORY_KINDS, TODO
from graph.memory.store import HISTORY, namespace, read_kind
from graph.server.memory_page import memories_version, read_memories
from testing.chore_endpoint import ADD, ChoreEndpoint, model_environment

LONG, SHORT, TEMPLATE = "ten-years", "fifty", "template"
SHORT_ENTRIES = 50
OPEN_TODOS = 50
TEMPLATE_TURNS = 12
TEN_YEARS = timedelta(days=3652)
RUNS = 21
CLI_RUNS = 5
TURNS = 8
TARGETS = {"page read": 2.0, "page poll": 2.0, "undo latest": 2.0, "undo by prefix": 2.0, "maistro history": 2.0,
           "turn": 1.5}


def paired_ms(actions: dict[str, Callable[[], object]], runs: int = RUNS) -> dict[str, float]:
    """Median milliseconds of each user's action, the users taking turns call by call (after one warm-up call
    each), so that the busy machine's ups and downs fall on both alike."""
    samples: dict[str, list[float]] = {user: [] for user in actions}
    for run in range(runs + 1):
        for user, action in actions.items():
            started = time.perf_counter()
            action()
            if run:
                samples[user].append(1000 * (time.perf_counter() - started))
    return {user: statistics.median(times) for user, times in samples.items()}


def play_template(agent) -> None:
    """Real turns of the template user: chores added and finished, so that the agent writes its own entries."""
    config = {"configurable": {"thread_id": TEMPLATE, "user_id": TEMPLATE}}
    for text in scale_messages(TEMPLATE_TURNS):
        agent.invoke({"messages": [HumanMessage(text)]}, config)


def clone_user(agent, user_id: str, entries: int) -> None:
    """Give `user_id` `entries` history entries copied from the template's (new ids, times spread over ten years,
    newest now) and `OPEN_TODOS` open ToDos copied from the template's documents."""
    template_entries = list_history(agent.store, TEMPLATE)
    template_todo = read_kind(agent.store, TODO, TEMPLATE)[0].value
    now = datetime.now(timezone.utc)
    step = TEN_YEARS / max(entries, 1)
    history = []
    for n in range(entries):
        entry = dict(template_entries[n % len(template_entries)])
        entry.update(id=str(uuid.uuid4()), time=(now - step * (entries - n)).isoformat(), thread_id=f"{user_id}-{n // 20}")
        history.append(PutOp(namespace(HISTORY, user_id), entry["id"], entry, index=False))
    todos = [
        PutOp(namespace(TODO, user_id), f"open-{n}", {**template_todo, "task": f"{template_todo['task']} ({n})",
              "status": "not started"})
        for n in range(OPEN_TODOS)
    ]
    agent.store.batch([*history, *todos])


def analyze(store) -> None:
    """Bring the loaded PostgreSQL table to the state autovacuum keeps a ten years' database in: statistics for
    the planner (without them, the first plans after a bulk load scan the user's rows) and the visibility map that
    lets a count read the index alone."""
    if hasattr(store, "supports_pipeline"):
        with store._cursor() as cur:
            cur.execute("VACUUM ANALYZE store")


def alternating_undo(store, user_id: str, by_prefix: bool) -> Callable[[], object]:
    """An undo of the user's latest change (each one then undoes the undo before it), or of the latest change named
    by the first 8 characters of its id, as `maistro undo abc12345` names one."""
    if not by_prefix:
        return lambda: undo_change(store, user_id)
    newest = {"entry": undo_change(store, user_id)}

    def undo_named() -> None:
        newest["entry"] = undo_change(store, user_id, newest["entry"]["id"][:8])

    return undo_named


def cli_run(arguments: list[str], environment: dict[str, str]) -> Callable[[], object]:
    """A `maistro` process run with `arguments` (its output discarded)."""
    command = [sys.executable, "-m", "graph.app.cli", *arguments]
    return lambda: subprocess.run(
        command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True
    )


def one_turn(agent, user_id: str) -> Callable[[], object]:
    """A one-memory turn (add a chore) of the user, in a thread of its own."""
    config = {"configurable": {"thread_id": f"{user_id}-bench", "user_id": user_id}}
    count = iter(range(1_000_000))
    return lambda: agent.invoke({"messages": [HumanMessage(f"{ADD}Sweep the porch (bench {next(count)})")]}, config)


def measure(agent, environment: dict[str, str]) -> dict[str, dict[str, float]]:
    """Every figure of both users, figure by figure, the users taking turns."""
    store, kinds, users = agent.store, DEFAULT_MEMORY_KINDS, (SHORT, LONG)
    actions = {
        "page read": lambda user: lambda: read_memories(store, user, kinds, 50),
        "page poll": lambda user: lambda: memories_version(store, user, kinds, 50),
        "undo latest": lambda user: alternating_undo(store, user, by_prefix=False),
        "undo by prefix": lambda user: alternating_undo(store, user, by_prefix=True),
    }
    figures = {name: paired_ms({user: make(user) for user in users}) for name, make in actions.items()}
    figures["maistro history"] = paired_ms({u: cli_run(["history", "--user", u], environment) for u in users}, CLI_RUNS)
    figures["maistro history --all"] = paired_ms(
        {u: cli_run(["history", "--user", u, "--all"], environment) for u in users}, 1
    )
    figures["turn"] = paired_ms({user: one_turn(agent, user) for user in users}, TURNS)
    figures["export kB"] = {
        user: len(json.dumps(export_memories(store, user), ensure_ascii=False, indent=2).encode()) / 1000
        for user in users
    }
    return {user: {name: by_user[user] for name, by_user in figures.items()} for user in users}


def run_backend(open_agent: Callable[[], object], environment: dict[str, str], entries: int) -> dict[str, dict]:
    """Build the template and both users in one store, then measure both users."""
    agent = open_agent()
    try:
        play_template(agent)
        clone_user(agent, LONG, entries)
        clone_user(agent, SHORT, SHORT_ENTRIES)
        analyze(agent.store)
        return measure(agent, environment)
    finally:
        close_graph(agent)


def print_results(results: dict[str, dict[str, dict]], entries: int) -> None:
    """The table: each figure for both users, their ratio and its target."""
    print(f"| figure | backend | {SHORT_ENTRIES} entries | {entries:,} entries | ratio | target |")
    print("|---|---|---|---|---|---|")
    for backend, users in results.items():
        for figure, short in users[SHORT].items():
            long = users[LONG][figure]
            target = TARGETS.get(figure)
            verdict = f"≤ {target}x {'met' if long / short <= target else 'MISSED'}" if target else "—"
            unit = "" if figure.endswith("kB") else " ms"
            print(f"| {figure} | {backend} | {short:,.1f}{unit} | {long:,.1f}{unit} | {long / short:.2f}x | {verdict} |")
    print()
    print("Left out: the API servers' own stores. Aegra's (LangGraph's AsyncPostgresStore) runs the same statements,")
    print("with the index once a `maistro` command has opened its database; langgraph dev's in-memory store has no")
    print("order of its own, so the page and undo there read the user's whole history namespace (validating only what")
    print(f"they show). The users hold the same {OPEN_TODOS} open ToDos: thousands of done ToDos cost the page's ToDo")
    print("read, not the history. `maistro history --all` renders every entry as one table.")


def main() -> None:
    """Build the users on SQLite and PostgreSQL, measure, print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--postgres", default="auto", help="'auto' (start one), a postgresql:// URL, or 'off'")
    parser.add_argument("--entries", type=int, default=20_000, help="history entries of the long user")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="maistro-bench-history-"))
    endpoint = ChoreEndpoint()
    results: dict[str, dict] = {}
    with endpoint.start() as server, model_environment(server.base_url), postgres_admin(args.postgres, workdir) as admin_url:
        sqlite_dir = workdir / "sqlite"
        base = {**os.environ, "MAISTRO_DATABASE_URL": ""}
        results["sqlite"] = run_backend(
            lambda: build_graph(sqlite_dir), {**base, "MAISTRO_DATA_DIR": str(sqlite_dir)}, args.entries
        )
        if admin_url:
            url = database_url(admin_url, create_database(admin_url, "maistro_bench_history"))
            results["postgres"] = run_backend(
                lambda: build_graph(database_url=url), {**base, "MAISTRO_DATABASE_URL": url}, args.entries
            )
    print_results(results, args.entries)


if __name__ == "__main__":
    main()
