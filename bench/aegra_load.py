"""Load on the API servers: `python -m bench.aegra_load [--clients 32] [--turns 3] [--latency 0.2] [--postgres URL]`.

The same load runs on one default `langgraph dev` and on two Aegra instances sharing one PostgreSQL and one
Redis, in the same run: `--clients` users, each with their own token and thread, send `--turns` one-memory turns
("add chore: ...") at once through the Python SDK, streaming each run to its end as Agent Chat UI does
(`runs.stream`; Aegra's `runs.wait` polls for the end every 2 s when it runs with Redis); on Aegra each user's turns alternate between the
two instances, so every thread is continued on the instance it did not start on. The model is the benchmark's
chore-keeping stub (`bench.chore_endpoint`) answering each call `--latency` seconds late (a one-memory turn is
three calls). Printed per server: a lone client's median turn, then under load turns/s, p50 and p95 turn time,
errors, and memories lost or duplicated (each user's ToDos read back through the SDK must be exactly the chores
they sent), and Aegra's figures against the targets (>= 3x langgraph dev's turns/s, p95 <= 3x a lone turn).
PostgreSQL: `--postgres` (a server URL), else MAISTRO_TEST_DATABASE_URL, else a throwaway server.
"""

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from langgraph_sdk import get_client

from bench.chore_endpoint import ADD, ChoreEndpoint
from graph.memory.store import user_label
from tests.support import postgres_server
from tests.support.aegra_server import aegra_instances, redis_server
from tests.support.langgraph_server import GRAPH_ID, langgraph_dev, token_environment
from tests.support.stored_names import TODO

LONE_TURNS = 5
TOKEN_LENGTH = 24
# Processes of this run by what they are, from their command lines (the first word that matches names them).
PROCESS_KINDS = {"embedding_server": "embeddings", "redis-server": "Redis", "uvicorn": "Aegra", "aegra": "Aegra",
                 "langgraph": "langgraph dev"}


@dataclass
class Load:
    """What one load produced: each turn's seconds, the errors, and the memories that came out wrong."""

    seconds: float = 0.0
    turns: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    wrong_memories: int = 0

    def figures(self) -> dict[str, float]:
        """turns/s, p50 and p95 (seconds), errors, memories lost or duplicated."""
        cuts = statistics.quantiles(self.turns, n=20) if len(self.turns) > 1 else self.turns * 19
        return {"turns_per_s": len(self.turns) / self.seconds, "p50": statistics.median(self.turns), "p95": cuts[18],
                "errors": len(self.errors), "wrong_memories": self.wrong_memories}


def tokens_for(users: list[str]) -> dict[str, str]:
    """One token per user."""
    return {user: f"{user}-{'k' * TOKEN_LENGTH}" for user in users}


async def one_user(urls: list[str], user: str, token: str, turns: int, load: Load) -> None:
    """One user's turns on their own thread, instance after instance, then their ToDos checked."""
    clients = [get_client(url=url, headers={"Authorization": f"Bearer {token}"}, timeout=300) for url in urls]
    try:
        thread_id = (await clients[0].threads.create())["thread_id"]
        chores = [f"{user} chore {n}" for n in range(turns)]
        for n, chore in enumerate(chores):
            started = time.perf_counter()
            try:
                parts = clients[n % len(clients)].runs.stream(
                    thread_id, GRAPH_ID, input={"messages": [{"role": "user", "content": f"{ADD}{chore}"}]})
                errors = [part.data async for part in parts if part.event == "error"]
                if errors:
                    raise RuntimeError(errors[0])
                load.turns.append(time.perf_counter() - started)
            except Exception as error:
                load.errors.append(f"{user} turn {n}: {error!r}"[:300])
        items = (await clients[-1].store.search_items((TODO, user_label(user)), limit=100))["items"]
        stored = sorted(item["value"]["task"] for item in items)
        load.wrong_memories += len(set(stored) ^ set(chores)) + len(stored) - len(set(stored))
    finally:
        for client in clients:
            await client.aclose()


async def drive(urls: list[str], tokens: dict[str, str], turns: int) -> Load:
    """Every user at once: `turns` turns each."""
    load = Load()
    started = time.perf_counter()
    await asyncio.gather(*(one_user(urls, user, token, turns, load) for user, token in tokens.items()))
    load.seconds = time.perf_counter() - started
    return load


def cpu_seconds() -> dict[str, float]:
    """CPU seconds (user + system) used so far by this process (the clients and the model stub) and by each
    kind of server process it started. PostgreSQL runs apart and is not counted."""
    used = {"clients + model stub": sum(psutil.Process().cpu_times()[:2])}
    for process in psutil.Process().children(recursive=True):
        try:
            command = " ".join(process.cmdline())
            kind = next((name for word, name in PROCESS_KINDS.items() if word in command), "other")
            used[kind] = used.get(kind, 0.0) + sum(process.cpu_times()[:2])
        except psutil.NoSuchProcess:
            continue
    return used


def measure(urls: list[str], names: Iterator[str], clients: int, turns: int) -> dict:
    """A lone client's median turn, then the load of `clients` users: the figures of both, and the CPU
    milliseconds each kind of process spent per turn under load."""
    lone = asyncio.run(drive(urls, tokens_for([next(names)]), LONE_TURNS))
    before = cpu_seconds()
    loaded = asyncio.run(drive(urls, tokens_for([next(names) for _ in range(clients)]), turns))
    after = cpu_seconds()
    for error in loaded.errors[:5] + lone.errors[:5]:
        print("   error:", error)
    cpu = {kind: 1000 * (after[kind] - before.get(kind, 0.0)) / max(len(loaded.turns), 1) for kind in after}
    return {"lone": statistics.median(lone.turns) if lone.turns else float("nan"), **loaded.figures(), "cpu": cpu,
            "busy": sum(after.values()) - sum(before.values()), "seconds": loaded.seconds}


@contextmanager
def postgres(url: str | None) -> Iterator[str]:
    """A PostgreSQL server's URL: the one given, else a throwaway server."""
    if url:
        yield url
        return
    directory = Path(tempfile.mkdtemp(prefix="maistro-bench-pg-"))
    yield postgres_server.start(directory)
    postgres_server.stop(directory)


def print_row(name: str, row: dict[str, float]) -> None:
    """One server's line of the table."""
    print(f"{name:<32} {row['lone']:>7.2f} s {row['turns_per_s']:>9.2f} {row['p50']:>7.2f} s {row['p95']:>7.2f} s "
          f"{row['errors']:>7} {row['wrong_memories']:>9}")


def main() -> None:
    """Run both loads and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--turns", type=int, default=3, help="turns per client under load")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the model takes per call")
    parser.add_argument("--postgres", default=os.environ.get("MAISTRO_TEST_DATABASE_URL"))
    options = parser.parse_args()
    users = tokens_for([f"user{n}" for n in range(2 * (options.clients + 1))])
    names = iter(users)
    rows = {}
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="maistro-load-") as scratch:
        endpoint = stack.enter_context(ChoreEndpoint().start(options.latency))
        server_url = stack.enter_context(postgres(options.postgres))
        for kind in ("langgraph-dev", "aegra"):
            directory = Path(scratch) / kind
            directory.mkdir()
            env = token_environment(directory, endpoint, users)
            with ExitStack() as servers:
                if kind == "aegra":
                    redis = servers.enter_context(redis_server(directory))
                    database = postgres_server.create_database(server_url)
                    urls = servers.enter_context(aegra_instances(directory, env, database, redis, count=2))
                else:
                    urls = [servers.enter_context(langgraph_dev(directory, env))]
                rows[kind] = measure(urls, names, options.clients, options.turns)
    print(f"\n{options.clients} clients x {options.turns} one-memory turns, model {options.latency * 1000:.0f} ms per call")
    print(f"{'server':<32} {'lone':>9} {'turns/s':>9} {'p50':>9} {'p95':>9} {'errors':>7} {'lost/dup':>9}")
    print_row("langgraph dev (default)", rows["langgraph-dev"])
    print_row("Aegra, 2 instances + Redis", rows["aegra"])
    aegra, dev = rows["aegra"], rows["langgraph-dev"]
    print(f"CPU per turn under load (ms; {psutil.cpu_count()} cores, load average {psutil.getloadavg()[0]:.1f}):")
    for kind, row in rows.items():
        shares = ", ".join(f"{name} {ms:.0f}" for name, ms in sorted(row["cpu"].items(), key=lambda item: -item[1]))
        print(f"  {kind}: {shares}; {row['busy'] / row['seconds']:.2f} cores busy on average")
    print(f"Aegra / langgraph dev turns/s: {aegra['turns_per_s'] / dev['turns_per_s']:.1f}x (target >= 3x); "
          f"Aegra p95 / lone turn: {aegra['p95'] / aegra['lone']:.1f}x (target <= 3x)")


if __name__ == "__main__":
    main()
