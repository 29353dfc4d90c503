"""A long-time user against a fresh one: `python -m bench.done_log [--postgres auto|URL|off] [--per-year N] [--json FILE]`.

A user who finished `PER_YEAR` ToDos a year for `YEARS` years (their `completed_at` spread evenly over those
years) and has `OPEN` open ones, against a fresh user with the same open ones. The done ToDos are stored in the
list first, as a store from before the done log holds them; the one-time move into the done log
(`graph.memory.done_log.move_finished`, what the user's next turn does) is timed on its own. Then, on SQLite and
(unless told otherwise) PostgreSQL, for each user, median of `REPEATS` runs (the page's read: `PAGE_READS` times
as many):

- the first turn of a newly built graph (a chit-chat message through the real graph, store and `ChatOpenAI`
  against the zero-latency chore endpoint, `testing.chore_endpoint`): wall milliseconds, and its chat prompt in
  tokens;
- `maistro todos --json` as the real CLI process (wall milliseconds, process start included);
- the memory page's read (`graph.server.memory_api`'s: the move check, the version, `read_memories`), in
  milliseconds.

Each is printed with the long-time user's ratio to the fresh user's, measured in the same run (target: at most
`TARGET`). What the figures leave out: the model's own time (the endpoint answers at once), the browser's
rendering of the page, the HTTP server in front of it, and the ToDos finished in the last
MAISTRO_DONE_LOG_AFTER_DAYS days, which stay on the long-time user's list (about 38 at 1,000 a year) and are part
of what is measured.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

from langchain_core.messages import HumanMessage
from langgraph.store.base import PutOp

from bench.run import create_database, database_url, postgres_admin
from graph import DEFAULT_MEMORY_KINDS, build_graph, close_graph
from graph.memory.done_log import move_finished
from graph.memory.kinds import TODO
from graph.memory.store import namespace
from graph.server.memory_page import HISTORY_SHOWN, memories_version, read_memories
from testing.chore_endpoint import ChoreEndpoint, model_environment

PER_YEAR = 1000
YEARS = 3
OPEN = 10
REPEATS = 11
# The page's read takes milliseconds: it is read this many times more often than the rest, for a steady median.
PAGE_READS = 10
TARGET = 1.3
CHIT_CHAT = "How was your weekend? Mine was quiet."
MAISTRO = str(Path(sys.executable).with_name("maistro"))
TASKS = ["Water the plants", "Pay the electricity bill", "Renew passport", "Call grandma", "Clean gutters"]
USERS = ("fresh", "long")


def todo(n: int, status: str, finished: datetime | None = None) -> dict:
    """A ToDo as the agent stores it; a done one with its completion time."""
    value = {"task": f"{TASKS[n % len(TASKS)]} ({n})", "time_to_complete": 15, "deadline": None,
             "solutions": ["Saturday morning"], "status": status}
    return value if finished is None else {**value, "completed_at": finished.isoformat()}


def seed(store, per_year: int, now: datetime) -> None:
    """The fresh user's open ToDos, and the long-time user's same open ones plus `per_year` × YEARS done ones."""
    ops = []
    for user_id in USERS:
        ops += [PutOp(namespace(TODO, user_id), f"open-{n:02d}", todo(n, "not started")) for n in range(OPEN)]
    done = per_year * YEARS
    step = timedelta(days=365 * YEARS) / done
    ops += [PutOp(namespace(TODO, "long"), f"done-{n:05d}", todo(n, "done", now - step * (n + 1))) for n in range(done)]
    store.batch(ops)


def first_turn(open_agent: Callable, endpoint: ChoreEndpoint, user_id: str, run: int) -> tuple[float, int]:
    """The wall ms of a newly built graph's first turn for the user, and its chat prompt's tokens."""
    agent = open_agent()
    try:
        config = {"configurable": {"thread_id": f"{user_id}-{run}", "user_id": user_id}}
        first = len(endpoint.requests)
        started = time.perf_counter()
        agent.invoke({"messages": [HumanMessage(CHIT_CHAT)]}, config)
        wall = 1000 * (time.perf_counter() - started)
        return wall, max(r.prompt_tokens for r in endpoint.requests[first:] if r.kind == "chat")
    finally:
        close_graph(agent)


def cli_todos(user_id: str, environment: dict) -> float:
    """The wall ms of `maistro todos --json` for the user, as a process of its own; the ToDos it printed must be the
    active list."""
    started = time.perf_counter()
    done = subprocess.run([MAISTRO, "todos", "--user", user_id, "--json"], env=environment, check=True,
                          capture_output=True, text=True)
    wall = 1000 * (time.perf_counter() - started)
    assert all(value["status"] != "done" or "completed_at" in value for value in json.loads(done.stdout).values())
    return wall


def page_read(store, user_id: str) -> float:
    """The wall ms of the memory page's read of everything it shows for the user."""
    started = time.perf_counter()
    move_finished(store, user_id, DEFAULT_MEMORY_KINDS)
    memories_version(store, user_id, DEFAULT_MEMORY_KINDS, HISTORY_SHOWN)
    json.dumps(read_memories(store, user_id, DEFAULT_MEMORY_KINDS))
    return 1000 * (time.perf_counter() - started)


def measure(open_agent: Callable, endpoint: ChoreEndpoint, environment: dict, per_year: int, repeats: int) -> dict:
    """The figures of one backend: the one-time move, then each user's medians and the ratios."""
    now = datetime.now(timezone.utc)
    agent = open_agent()
    try:
        seed(agent.store, per_year, now)
        started = time.perf_counter()
        moved = move_finished(agent.store, "long", DEFAULT_MEMORY_KINDS, now)
        figures: dict = {"moved": moved, "move_ms": 1000 * (time.perf_counter() - started)}
        samples: dict[str, dict[str, list[float]]] = {user: {"turn": [], "tokens": [], "cli": [], "page": []} for user in USERS}
        for run in range(repeats * PAGE_READS):
            for user_id in USERS:
                samples[user_id]["page"].append(page_read(agent.store, user_id))
        figures["active_long"] = len(read_memories(agent.store, "long", DEFAULT_MEMORY_KINDS)["documents"][TODO.name])
    finally:
        close_graph(agent)
    for run in range(repeats):
        for user_id in USERS:
            wall, tokens = first_turn(open_agent, endpoint, user_id, run)
            samples[user_id]["turn"].append(wall)
            samples[user_id]["tokens"].append(tokens)
            samples[user_id]["cli"].append(cli_todos(user_id, environment))
    for user_id in USERS:
        for name, values in samples[user_id].items():
            figures[f"{name}_{user_id}"] = statistics.median(values)
    for name in ("turn", "tokens", "cli", "page"):
        figures[f"{name}_ratio"] = figures[f"{name}_long"] / figures[f"{name}_fresh"]
    return figures


def run(postgres: str = "auto", per_year: int = PER_YEAR, repeats: int = REPEATS) -> dict:
    """Every figure, on SQLite and (unless `postgres` is "off") PostgreSQL."""
    workdir = Path(tempfile.mkdtemp(prefix="maistro-done-log-"))
    endpoint = ChoreEndpoint()
    results: dict = {"per_year": per_year, "years": YEARS, "open": OPEN, "repeats": repeats}
    started = time.perf_counter()
    with endpoint.start() as server, model_environment(server.base_url), postgres_admin(postgres, workdir) as admin_url:
        data_dir = workdir / "sqlite"
        places: dict[str, tuple[Callable, dict]] = {
            "sqlite": (lambda: build_graph(data_dir), {**os.environ, "MAISTRO_DATA_DIR": str(data_dir)}),
        }
        if admin_url:
            url = database_url(admin_url, create_database(admin_url, "maistro_bench_done_log"))
            places["postgres"] = (lambda: build_graph(database_url=url), {**os.environ, "MAISTRO_DATABASE_URL": url})
        for backend, (open_agent, environment) in places.items():
            results[backend] = measure(open_agent, endpoint, environment, per_year, repeats)
    results["bench_seconds"] = time.perf_counter() - started
    return results


def print_table(results: dict) -> None:
    """The figures as a Markdown table, one row per measure and backend."""
    done = results["per_year"] * results["years"]
    print(f"| {done:,} done ToDos over {results['years']} years + {results['open']} open, vs the same "
          f"{results['open']} open alone | backend | fresh | long-time | ratio | target |")
    print("|---|---|---|---|---|---|")
    rows = [
        ("first turn of a new graph (wall ms, model of zero latency)", "turn", "{:,.0f}"),
        ("chat prompt of that turn (tokens)", "tokens", "{:,.0f}"),
        ("`maistro todos --json`, the CLI process (wall ms)", "cli", "{:,.0f}"),
        ("memory page's read (wall ms)", "page", "{:,.1f}"),
    ]
    for backend in ("sqlite", "postgres"):
        if backend not in results:
            continue
        row = results[backend]
        for name, key, number in rows:
            fresh, long = number.format(row[f"{key}_fresh"]), number.format(row[f"{key}_long"])
            print(f"| {name} | {backend} | {fresh} | {long} | {row[f'{key}_ratio']:.2f}x | ≤ {TARGET}x |")
    print()
    for backend in ("sqlite", "postgres"):
        if backend in results:
            row = results[backend]
            print(f"{backend}: the one-time move of {row['moved']:,} done ToDos into the done log took {row['move_ms']:,.0f} ms; "
                  f"the long-time user's list then holds {row['active_long']} ToDos (open, and done in the last "
                  "MAISTRO_DONE_LOG_AFTER_DAYS days).")
    print(f"Medians of {results['repeats']} runs each; whole benchmark: {results['bench_seconds']:.0f} s. Left out: the model's "
          "own time, the page's rendering and HTTP server.")


def main() -> None:
    """Run the benchmark, print the table (and JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--postgres", default="auto", help="'auto' (start one), a postgresql:// URL, or 'off'")
    parser.add_argument("--per-year", type=int, default=PER_YEAR, help=f"done ToDos a year (default {PER_YEAR})")
    parser.add_argument("--repeats", type=int, default=REPEATS, help=f"runs per figure (default {REPEATS})")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()
    results = run(args.postgres, args.per_year, args.repeats)
    print_table(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
