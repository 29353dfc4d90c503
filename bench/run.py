"""Benchmark the agent end to end: `python -m bench.run [--postgres auto|URL|off] [--json FILE] [--growth-turns N]`.

Every turn goes through the real graph, trustcall, the real stores (SQLite, and PostgreSQL unless told
otherwise: `auto` starts a throwaway server) and the real `ChatOpenAI` client, over HTTP, to a local
OpenAI-compatible endpoint that answers at once (`testing.chore_endpoint`). So the times are the agent's own
cost per turn (graph, prompts, the OpenAI SDK's request handling, storage, and the in-process endpoint's
HTTP handling) with a model of zero latency; a real model's latency comes on top. Scenarios:

- two memories in one message: model calls per turn and sequential calls (the longest chain of calls that
  had to wait for one another, from the order of requests and answers);
- an empty user and a user with 10,000 ToDos playing the same turns (add a chore, then finish it by name):
  median wall time per turn, and the ratio of the two measured in the same run;
- growth: one thread adding one new ToDo per turn for 1,000 turns (figures at turn 300 and 1,000): wall
  time early and late, the largest prompt and the longest chat prompt, the data directory's size (with the
  checkpoint retention setting in force, MAISTRO_KEEP_TURNS), and the time to find the user's last thread
  at turn 10 and at the end;
- PostgreSQL: statements the client sends and transactions the server counts per ordinary turn.

The cold-start table (`bench.cold_start`) comes first.
"""

import argparse
import gc
import itertools
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from langchain_core.messages import HumanMessage
from langgraph.store.base import PutOp

from bench.cold_start import print_cold_start
from bench.trust import print_trust
from graph import build_graph, close_graph
from graph.memory.admin import last_thread
from graph.memory.store import namespace
from testing import postgres_server
from testing.chore_endpoint import ADD, MOVED, ChoreEndpoint, model_environment, sequential_requests
from testing.postgres_counts import counting_statements, server_transactions
from testing.stored_names import TODO

CHORES = ["Water the plants", "Pay the electricity bill", "Renew passport", "Call grandma", "Clean gutters"]
LARGE_LIST = 10_000
SCALE_TURNS = 20
GROWTH_REPORT = 300
MEASURED = 20


def seed(agent, user_id: str, count: int) -> None:
    """Give the user `count` open chores, in one batch."""
    agent.store.batch(
        [
            PutOp(namespace(TODO, user_id), f"seed-{n:05d}", {
                "task": f"{CHORES[n % len(CHORES)]} (seeded {n})", "time_to_complete": 15, "deadline": None,
                "solutions": ["Saturday morning"], "status": "not started",
            })
            for n in range(count)
        ]
    )


def scale_messages(turns: int) -> list[str]:
    """Turns that add a chore and then finish it by name, alternately."""
    return [
        f"{ADD}{CHORES[n % len(CHORES)]} (chore {n // 2})" if n % 2 == 0 else f"I finished chore ({n // 2}) just now."
        for n in range(turns)
    ]


def play(agent, endpoint: ChoreEndpoint, user_id: str, messages: list[str], thread_id: str | None = None) -> list[dict]:
    """Send each message as one turn; per turn: wall seconds, model calls, sequential calls, prompt sizes."""
    gc.collect()
    config = {"configurable": {"thread_id": thread_id or user_id, "user_id": user_id}}
    turns = []
    for text in messages:
        first = len(endpoint.requests)
        started = time.perf_counter()
        agent.invoke({"messages": [HumanMessage(text)]}, config)
        wall = time.perf_counter() - started
        requests = endpoint.requests[first:]
        turns.append({
            "wall": wall,
            "calls": len(requests),
            "sequential": sequential_requests(requests),
            "prompt_tokens": max((r.prompt_tokens for r in requests), default=0),
            "chat_messages": max((r.messages for r in requests if r.kind == "chat"), default=0),
        })
    return turns


def median_ms(turns: list[dict]) -> float:
    """Median wall time of the turns, in milliseconds."""
    return 1000 * statistics.median(t["wall"] for t in turns)


def directory_bytes(directory: Path) -> int:
    """Bytes of the files in a directory (the database, its write-ahead log and shared memory)."""
    return sum(path.stat().st_size for path in directory.iterdir() if path.is_file())


def last_thread_ms(agent, user_id: str) -> float:
    """Median milliseconds (of 21) to find the user's last thread, as `maistro chat` does."""
    samples = []
    for _ in range(21):
        started = time.perf_counter()
        last_thread(agent.checkpointer, user_id)
        samples.append(1000 * (time.perf_counter() - started))
    return statistics.median(samples)


def two_memories(open_agent: Callable, endpoint: ChoreEndpoint) -> dict:
    """"I moved to Oakland; add chore: ...": profile and ToDo updated in one turn, 10 turns."""
    agent = open_agent()
    try:
        turns = play(agent, endpoint, "mover", [f"{MOVED}Oakland; {ADD}Book a dentist (chore {n})" for n in range(10)])
    finally:
        close_graph(agent)
    return {
        "calls_per_turn": statistics.mean(t["calls"] for t in turns),
        "sequential_per_turn": statistics.mean(t["sequential"] for t in turns),
        "wall_p50_ms": median_ms(turns),
    }


def empty_vs_large(open_agent: Callable, endpoint: ChoreEndpoint) -> dict:
    """The same turns for an empty user and for a user with 10,000 ToDos, in one store."""
    agent = open_agent()
    try:
        seed(agent, "large", LARGE_LIST)
        messages = scale_messages(SCALE_TURNS)
        empty = play(agent, endpoint, "empty", messages)
        large = play(agent, endpoint, "large", messages)
    finally:
        close_graph(agent)
    return {
        "empty_p50_ms": median_ms(empty),
        "large_p50_ms": median_ms(large),
        "ratio": median_ms(large) / median_ms(empty),
        "large_prompt_tokens": max(t["prompt_tokens"] for t in large),
    }


def growth(data_dir: Path, endpoint: ChoreEndpoint, turns: int) -> dict:
    """One thread adding one new ToDo per turn; figures at turn GROWTH_REPORT and at the end."""
    agent = build_graph(data_dir)
    figures: dict = {"keep_turns": agent.checkpointer.keep_turns}
    played: list[dict] = []
    try:
        for start, stop in ((0, 10), (10, min(GROWTH_REPORT, turns)), (min(GROWTH_REPORT, turns), turns)):
            played += play(agent, endpoint, "grower", [f"{ADD}Chore number {n} (chore {n})" for n in range(start, stop)])
            figures[f"turn_{stop}"] = {
                "early_p50_ms": median_ms(played[:MEASURED]),
                "late_p50_ms": median_ms(played[-MEASURED:]),
                "peak_prompt_tokens": max(t["prompt_tokens"] for t in played),
                "most_chat_messages": max(t["chat_messages"] for t in played),
                "data_dir_mb": directory_bytes(data_dir) / 1e6,
                "last_thread_ms": last_thread_ms(agent, "grower"),
            }
    finally:
        close_graph(agent)
    return figures


def postgres_statements(admin_url: str, endpoint: ChoreEndpoint, turns: int = 10) -> dict:
    """Statements and server transactions per ordinary turn (add a chore) on PostgreSQL, after 5 warm-up turns."""
    database = create_database(admin_url, "maistro_bench_statements")
    url = database_url(admin_url, database)
    messages = [f"{ADD}Chore number {n} (chore {n})" for n in range(5 + turns)]
    agent = build_graph(database_url=url)
    play(agent, endpoint, "counted", messages[:5])
    close_graph(agent)
    before = server_transactions(admin_url, database)
    agent = build_graph(database_url=url)
    with counting_statements() as count:
        play(agent, endpoint, "counted", messages[5:])
    close_graph(agent)
    after_turns = server_transactions(admin_url, database)
    close_graph(build_graph(database_url=url))
    open_and_close = server_transactions(admin_url, database) - after_turns
    return {
        "statements_per_turn": count[0] / turns,
        "transactions_per_turn": (after_turns - before - open_and_close) / turns,
    }


def main() -> None:
    """Run the scenarios, print the tables (and JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--postgres", default="auto", help="'auto' (start one), a postgresql:// URL, or 'off'")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--growth-turns", type=int, default=1000, help="turns of the growth run (default 1000)")
    args = parser.parse_args()

    print_cold_start()
    print()
    print_trust()
    print()
    workdir = Path(tempfile.mkdtemp(prefix="maistro-bench-"))
    endpoint = ChoreEndpoint()
    results: dict = {}
    started = time.perf_counter()
    with endpoint.start() as server, model_environment(server.base_url), postgres_admin(args.postgres, workdir) as admin_url:
        backends: dict[str, Callable] = {"sqlite": lambda: build_graph(tempfile.mkdtemp(dir=workdir))}
        if admin_url:
            names = itertools.count()
            backends["postgres"] = lambda: build_graph(
                database_url=database_url(admin_url, create_database(admin_url, f"maistro_bench_{next(names)}"))
            )
        for backend, open_agent in backends.items():
            results[backend] = {
                "two_memories": two_memories(open_agent, endpoint),
                "empty_vs_large": empty_vs_large(open_agent, endpoint),
            }
        results["sqlite"]["growth"] = growth(workdir / "growth", endpoint, args.growth_turns)
        if admin_url:
            results["postgres"]["statements"] = postgres_statements(admin_url, endpoint)
    results["bench_seconds"] = time.perf_counter() - started
    _print(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


@contextmanager
def postgres_admin(setting: str, workdir: Path) -> Iterator[str | None]:
    """The admin URL of the PostgreSQL server to use: `auto` starts a throwaway one in `workdir`, `off` none."""
    if setting != "auto":
        yield None if setting == "off" else setting
        return
    directory = workdir / "pg"
    directory.mkdir()
    workdir.chmod(0o755)
    url = postgres_server.start(directory)
    try:
        yield url
    finally:
        postgres_server.stop(directory)


def create_database(admin_url: str, name: str) -> str:
    """Create (again) an empty database `name` on the server; returns its name."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return name


def database_url(admin_url: str, database: str) -> str:
    """The URL of `database` on the server of `admin_url`."""
    return admin_url.rsplit("/", 1)[0] + f"/{database}"


def _print(results: dict) -> None:
    backends = [b for b in ("sqlite", "postgres") if b in results]
    print("| scenario | backend | calls/turn | sequential | wall p50 ms |")
    print("|---|---|---|---|---|")
    for backend in backends:
        two = results[backend]["two_memories"]
        print(f"| two memories in one message | {backend} | {two['calls_per_turn']:.1f} | "
              f"{two['sequential_per_turn']:.1f} | {two['wall_p50_ms']:.0f} |")
    print()
    print(f"| same {SCALE_TURNS} turns (add a chore, finish it by name) | backend | empty user p50 ms "
          f"| {LARGE_LIST:,} ToDos p50 ms | ratio | largest prompt (tokens) |")
    print("|---|---|---|---|---|---|")
    for backend in backends:
        scale = results[backend]["empty_vs_large"]
        print(f"| empty vs {LARGE_LIST:,} ToDos | {backend} | {scale['empty_p50_ms']:.0f} | {scale['large_p50_ms']:.0f} "
              f"| {scale['ratio']:.2f}x | {scale['large_prompt_tokens']:,} |")
    print()
    growth_figures = dict(results["sqlite"]["growth"])
    keep_turns = growth_figures.pop("keep_turns")
    print(f"| growth, one new ToDo per turn (SQLite, MAISTRO_KEEP_TURNS={keep_turns}) | first 20 turns p50 ms | last 20 turns p50 ms | ratio "
          "| peak prompt (tokens) | most messages in a chat prompt | data dir MB | find last thread ms |")
    print("|---|---|---|---|---|---|---|---|")
    for name, row in growth_figures.items():
        print(f"| after {name.removeprefix('turn_')} turns | {row['early_p50_ms']:.0f} | {row['late_p50_ms']:.0f} "
              f"| {row['late_p50_ms'] / row['early_p50_ms']:.2f}x | {row['peak_prompt_tokens']:,} "
              f"| {row['most_chat_messages']} | {row['data_dir_mb']:.2f} | {row['last_thread_ms']:.2f} |")
    if "statements" in results.get("postgres", {}):
        counts = results["postgres"]["statements"]
        print()
        print("| PostgreSQL, ordinary turn (add a chore) | statements sent | server transactions |")
        print("|---|---|---|")
        print(f"| per turn | {counts['statements_per_turn']:.1f} | {counts['transactions_per_turn']:.1f} |")
    print()
    print(f"Whole benchmark (without the cold-start table): {results['bench_seconds']:.0f} s")


if __name__ == "__main__":
    main()
