"""A fresh process's first turn against its second: `python -m bench.first_turn [--postgres auto|URL|off] [--json FILE]`.

A user with 10,000 ToDos and an empty user are stored first (SQLite, and PostgreSQL unless told otherwise:
`auto` starts a throwaway server). Then, REPEATS times for each, a fresh interpreter does what `maistro chat`
does: `build_graph`, then two turns through the real graph, trustcall, store and `ChatOpenAI` against the
zero-latency chore endpoint (`testing.chore_endpoint`), each turn adding a chore. It reports the wall and CPU
milliseconds of each turn (median over the processes) and the ratio of the first to the second; the first
turn pays for what a process does once (lazy imports, the HTTP connection, the first read of the lists). A
long list's first turn reads its head and leaves the whole list to a background read after the run
(`graph.memory.list_reads`): the child waits for that read before its second turn, as a person's next message
comes later, and its wall milliseconds are reported too. The machine's load average is printed beside the
figures.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.run import create_database, database_url, postgres_admin, seed
from graph import build_graph, close_graph
from testing.chore_endpoint import ADD, ChoreEndpoint, model_environment

LARGE_LIST = 10_000
REPEATS = 5
TARGET = 3.0

# Run in the fresh interpreter: build the graph, play two turns, print their wall and CPU seconds as JSON.
CHILD = """
import json, sys, time
from langchain_core.messages import HumanMessage
from graph import build_graph, close_graph
from graph.runtime import runtime_of
user, where, run = sys.argv[1], sys.argv[2], sys.argv[3]
agent = build_graph(database_url=where) if where.startswith("postgresql") else build_graph(where)
config = {"configurable": {"thread_id": f"{user}-{run}", "user_id": user}}
turns = []
for n in range(2):
    wall, cpu = time.perf_counter(), time.process_time()
    agent.invoke({"messages": [HumanMessage(f"%sBuy stamps (chore {run}.{n})")]}, config)
    turns.append({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu})
    wall = time.perf_counter()
    runtime_of(agent).reads.reader.wait()  # what the turn left to the background, done before the person's next message
    turns[-1]["background"] = time.perf_counter() - wall
close_graph(agent)
print(json.dumps(turns))
""" % ADD


def fresh_process_turns(user: str, where: str, run: int) -> list[dict]:
    """The two turns of one fresh interpreter for `user` of the store at `where` (a data directory or a URL)."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, user, where, str(run)], env=os.environ, check=True, capture_output=True, text=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(where: str) -> dict:
    """Median first and second turn (wall and CPU ms) of REPEATS fresh processes, for each user of `where`."""
    figures = {}
    for user in ("empty", "large"):
        runs = [fresh_process_turns(user, where, run) for run in range(REPEATS)]
        row = {}
        for measure_name in ("wall", "cpu"):
            first = 1000 * statistics.median(turns[0][measure_name] for turns in runs)
            second = 1000 * statistics.median(turns[1][measure_name] for turns in runs)
            row[measure_name] = {"first_ms": first, "second_ms": second, "ratio": first / second}
        row["background_ms"] = 1000 * statistics.median(turns[0]["background"] for turns in runs)
        figures[user] = row
    return figures


def seeded(agent) -> None:
    """Store the large user's ToDos and close the agent."""
    try:
        seed(agent, "large", LARGE_LIST)
    finally:
        close_graph(agent)


def main() -> None:
    """Seed the stores, measure each backend, print the table (and JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--postgres", default="auto", help="'auto' (start one), a postgresql:// URL, or 'off'")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="maistro-first-turn-"))
    endpoint = ChoreEndpoint()
    results: dict = {"load_average_before": os.getloadavg()}
    started = time.perf_counter()
    with endpoint.start() as server, model_environment(server.base_url), postgres_admin(args.postgres, workdir) as admin_url:
        places = {"sqlite": str(workdir / "sqlite")}
        if admin_url:
            places["postgres"] = database_url(admin_url, create_database(admin_url, "maistro_bench_first_turn"))
        for backend, where in places.items():
            seeded(build_graph(database_url=where) if backend == "postgres" else build_graph(where))
            results[backend] = measure(where)
    results["load_average_after"] = os.getloadavg()
    results["bench_seconds"] = time.perf_counter() - started
    print_table(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


def print_table(results: dict) -> None:
    """The first-vs-second-turn table, with the target and the load average."""
    print(f"| fresh process, median of {REPEATS} | backend | user | first turn ms (wall / CPU) "
          "| background read after it, ms | second turn ms (wall / CPU) | first ÷ second (wall / CPU) | target |")
    print("|---|---|---|---|---|---|---|---|")
    for backend in ("sqlite", "postgres"):
        for user, label in (("empty", "empty"), ("large", f"{LARGE_LIST:,} ToDos")):
            if backend not in results:
                continue
            wall, cpu = results[backend][user]["wall"], results[backend][user]["cpu"]
            verdict = f"≤ {TARGET}x: {'met' if wall['ratio'] <= TARGET else 'MISSED'}" if user == "large" else ""
            print(f"| first vs second turn | {backend} | {label} | {wall['first_ms']:.0f} / {cpu['first_ms']:.0f} "
                  f"| {results[backend][user]['background_ms']:.0f} | {wall['second_ms']:.0f} / {cpu['second_ms']:.0f} | {wall['ratio']:.2f}x / {cpu['ratio']:.2f}x "
                  f"| {verdict} |")
    before, after = results["load_average_before"], results["load_average_after"]
    print(f"\nLoad average (1, 5, 15 min) before {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}, "
          f"after {after[0]:.2f} {after[1]:.2f} {after[2]:.2f}; {results['bench_seconds']:.0f} s in all.")


if __name__ == "__main__":
    main()
