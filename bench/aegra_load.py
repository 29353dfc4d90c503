"""Load on the API servers: `python -m bench.aegra_load [--clients 48] [--turns 2] [--arrivals 60] [--latency 0.2 1.0]`.

Three loads, through the Python SDK, streaming each run to its end as Agent Chat UI does (`runs.stream`; Aegra's
`runs.wait` polls for the end every 2 s when it runs with Redis), every turn a one-memory turn ("add chore: ..."),
every user with their own token and thread:

- a lone client's turns: the median is the turn time with nothing else running;
- saturation, a closed loop: `--clients` users send `--turns` turns each, the next as soon as the last ended. The
  turns/s it reaches is the server's throughput; its latencies are not a figure of merit, since with N clients
  always waiting Little's law fixes the mean at about N / throughput whatever the server does;
- on Aegra with the slow model, an open loop at 75% of that throughput: `--arrivals` turns (at most
  `--arrival-seconds` of arrivals), each by a new user on a new thread, arriving at the given rate whether or not
  the earlier ones have finished (Poisson arrivals from a fixed seed, or `--spacing even`). A turn's time runs from
  its scheduled arrival to the end of its stream. Target: p95 <= 1.5x the lone turn.

Each server runs the lone turns and the closed loop twice, with the model answering each call `--latency` FAST and
SLOW seconds late (a one-memory turn is three calls); a server whose waiting nodes hold a handful of threads loses
most of its throughput to a slow model. Target: turns/s at SLOW >= 0.55x turns/s at FAST. `langgraph dev` runs
with the flags docs/operating/deploying.md recommends (`DEV_FLAGS`); Aegra runs as two instances sharing one PostgreSQL and one Redis, each
user's turns alternating between them, so every thread is continued on the instance it did not start on; both
with the default MAISTRO_NODE_THREADS. The model is the benchmark's chore-keeping stub (`testing.chore_endpoint`) in
a process of its own. Afterwards each user's ToDos are read back through the SDK and must be exactly the chores
they sent. CPU milliseconds per turn are counted for each phase by process tree (user + system time of the
processes and of their ended children): the servers, PostgreSQL (the server listening on the database's port: a
shared one counts others' work too), Redis, the embedding server, the model stub, and this process (the clients).
PostgreSQL: `--postgres` (a server URL), else a throwaway server.
"""

import argparse
import asyncio
import multiprocessing
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from urllib.parse import urlparse

import httpx
import psutil
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from graph.memory.store import user_label
from graph.names import AGENT_NAME
from testing import postgres_server
from testing.aegra_server import aegra_instances, redis_server
from testing.chore_endpoint import ADD, ChoreEndpoint
from testing.langgraph_server import langgraph_dev, token_environment
from testing.stored_names import TODO

LONE_TURNS = 5
TOKEN_LENGTH = 24
OPEN_LOOP_SHARES = (0.75,)
TARGET_P95_OVER_LONE = 1.5
TARGET_SLOW_OVER_FAST = 0.55
DEV, AEGRA = "langgraph-dev", "aegra"
# The flags docs/operating/deploying.md recommends for `langgraph dev` under load: as many runs at once as the clients.
DEV_FLAGS = ("--n-jobs-per-worker", "64")
TURN_TIMEOUT_SECONDS = 120
CLIENTS = "clients"
# The servers' processes by what they are, from the command line of each process this one started.
PROCESS_KINDS = {"embedding_server": "embeddings", "redis-server": "Redis", "aegra": "Aegra", "langgraph": "langgraph dev",
                 "multiprocessing": "model stub"}


@dataclass
class Load:
    """What one load produced: each turn's seconds, the errors, the memories that came out wrong, and the CPU
    seconds each kind of process spent while the turns ran (sign-in and read-back left out)."""

    postgres: psutil.Process | None = None
    seconds: float = 0.0
    turns: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    wrong_memories: int = 0
    cpu_seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def timed(self) -> Iterator[None]:
        """Time the block (`seconds`) and count the CPU seconds each kind of process spends in it."""
        before, started = cpu_seconds(self.postgres), time.perf_counter()
        yield
        self.seconds = time.perf_counter() - started
        after = cpu_seconds(self.postgres)
        self.cpu_seconds = {kind: after[kind] - before.get(kind, 0.0) for kind in after}

    def figures(self) -> dict:
        """turns/s, p50 and p95 (seconds), errors, memories lost or duplicated, CPU ms per turn by kind of process
        and the cores busy on average."""
        cuts = statistics.quantiles(self.turns, n=20) if len(self.turns) > 1 else self.turns * 19
        turns = max(len(self.turns), 1)
        return {"turns_per_s": len(self.turns) / self.seconds, "p50": statistics.median(self.turns), "p95": cuts[18],
                "errors": len(self.errors), "wrong_memories": self.wrong_memories,
                "cpu_ms": {kind: 1000 * used / turns for kind, used in self.cpu_seconds.items()},
                "cores": sum(self.cpu_seconds.values()) / self.seconds}


@dataclass
class User:
    """One user's clients (one per server URL, with their token) and thread."""

    name: str
    clients: list[LangGraphClient]
    thread_id: str = ""

    async def turn(self, number: int, chore: str) -> None:
        """Send `chore` as turn `number` (on instance `number` mod the URLs) and stream the run to its end."""
        parts = self.clients[number % len(self.clients)].runs.stream(
            self.thread_id, AGENT_NAME, input={"messages": [{"role": "user", "content": f"{ADD}{chore}"}]})
        errors = [part.data async for part in parts if part.event == "error"]
        if errors:
            raise RuntimeError(errors[0])

    async def wrong_memories(self, chores: list[str]) -> int:
        """How many of the user's ToDos are missing, extra or duplicated against the chores they sent."""
        try:
            found = await self.clients[-1].store.search_items((TODO, user_label(self.name)), limit=100)
        except httpx.TransportError:  # a kept-alive connection the server closed while the user was idle: once more
            found = await self.clients[-1].store.search_items((TODO, user_label(self.name)), limit=100)
        items = found["items"]
        stored = sorted(item["value"]["task"] for item in items)
        return len(set(stored) ^ set(chores)) + len(stored) - len(set(stored))

    async def close(self) -> None:
        """Close the user's clients."""
        for client in self.clients:
            await client.aclose()


def tokens_for(users: list[str]) -> dict[str, str]:
    """One token per user."""
    return {user: f"{user}-{'k' * TOKEN_LENGTH}" for user in users}


async def sign_in(urls: list[str], tokens: dict[str, str]) -> list[User]:
    """A client per URL for every user, and a new thread each."""
    users = [User(name, [get_client(url=url, headers={"Authorization": f"Bearer {token}"}, timeout=300) for url in urls])
             for name, token in tokens.items()]
    threads = await asyncio.gather(*(user.clients[0].threads.create() for user in users))
    for user, thread in zip(users, threads):
        user.thread_id = thread["thread_id"]
    return users


def chores_of(user: User, turns: int) -> list[str]:
    """The chores `user` sends, one per turn."""
    return [f"{user.name} chore {n}" for n in range(turns)]


async def closed_loop(urls: list[str], tokens: dict[str, str], turns: int, load: Load) -> Load:
    """Every user at once, each sending their next turn as soon as the last one ended."""
    users = await sign_in(urls, tokens)

    async def converse(user: User) -> None:
        for n, chore in enumerate(chores_of(user, turns)):
            started = time.perf_counter()
            try:
                await user.turn(n, chore)
                load.turns.append(time.perf_counter() - started)
            except Exception as error:
                load.errors.append(f"{user.name} turn {n}: {error!r}"[:300])

    with load.timed():
        await asyncio.gather(*(converse(user) for user in users))
    load.wrong_memories = sum(await asyncio.gather(*(user.wrong_memories(chores_of(user, turns)) for user in users)))
    await asyncio.gather(*(user.close() for user in users))
    return load


def arrival_times(rate: float, count: int, seconds: float, spacing: str, seed: int) -> list[float]:
    """When each turn arrives (seconds from the start): `count` at most, within `seconds`, at `rate` per second."""
    gaps = random.Random(seed)
    times, now = [], 0.0
    while len(times) < count:
        now += gaps.expovariate(rate) if spacing == "poisson" else (1 / rate if times else 0.0)
        if now > seconds:
            break
        times.append(now)
    return times


async def open_loop(urls: list[str], tokens: dict[str, str], schedule: list[float], load: Load) -> Load:
    """One turn per user at its time in `schedule`, whatever is still running; each timed from its arrival."""
    users = await sign_in(urls, tokens)
    start = time.perf_counter()

    async def arrive(number: int, user: User, at: float) -> None:
        await asyncio.sleep(max(0.0, start + at - time.perf_counter()))
        try:
            await asyncio.wait_for(user.turn(number, chores_of(user, 1)[0]), TURN_TIMEOUT_SECONDS)
            load.turns.append(time.perf_counter() - (start + at))
        except Exception as error:
            load.errors.append(f"{user.name}: {error!r}"[:300])

    with load.timed():
        await asyncio.gather(*(arrive(number, user, at) for number, (user, at) in enumerate(zip(users, schedule))))
    load.wrong_memories = sum(await asyncio.gather(*(user.wrong_memories(chores_of(user, 1)) for user in users)))
    await asyncio.gather(*(user.close() for user in users))
    return load


def tree_cpu_seconds(root: psutil.Process) -> float:
    """CPU seconds of a process tree: user + system of every living process and of the children each has reaped."""
    total = 0.0
    for process in [root, *root.children(recursive=True)]:
        try:
            times = process.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
        except psutil.NoSuchProcess:
            continue
    return total


def listener(port: int) -> psutil.Process | None:
    """The local process listening on TCP `port`, if this user may see it."""
    for connection in psutil.net_connections(kind="tcp"):
        if connection.status == psutil.CONN_LISTEN and connection.laddr.port == port and connection.pid:
            return psutil.Process(connection.pid)
    return None


def kind_of(process: psutil.Process) -> str:
    """What a process this one started is, from its command line (the first word of PROCESS_KINDS in it)."""
    command = " ".join(process.cmdline())
    return next((name for word, name in PROCESS_KINDS.items() if word in command), "other")


def cpu_seconds(postgres: psutil.Process | None) -> dict[str, float]:
    """CPU seconds used so far by each kind of process: the trees this process started, PostgreSQL's, and this
    process's own (the clients)."""
    own = psutil.Process()
    used = {CLIENTS: sum(own.cpu_times()[:2])}
    roots = [(kind_of(child), child) for child in own.children()] + ([("PostgreSQL", postgres)] if postgres else [])
    for kind, root in roots:
        try:
            used[kind] = used.get(kind, 0.0) + tree_cpu_seconds(root)
        except psutil.NoSuchProcess:
            continue
    return used


def figures(load: Load) -> dict:
    """The load's figures, its first errors printed."""
    for error in load.errors[:5]:
        print("   error:", error)
    return load.figures()


def lone_turn(urls: list[str], names: Iterator[str]) -> float:
    """A lone client's median turn."""
    load = asyncio.run(closed_loop(urls, tokens_for([next(names)]), LONE_TURNS, Load()))
    return statistics.median(load.turns) if load.turns else float("nan")


def measure(urls: list[str], names: Iterator[str], options: argparse.Namespace, postgres: psutil.Process | None,
            open_loops: bool) -> dict:
    """A server's lone turn, its saturation (closed loop), and with `open_loops` the open loops below it."""
    rows = {"lone": lone_turn(urls, names)}
    users = tokens_for([next(names) for _ in range(options.clients)])
    rows["closed"] = figures(asyncio.run(closed_loop(urls, users, options.turns, Load(postgres))))
    for share in OPEN_LOOP_SHARES if open_loops else ():
        rate = share * rows["closed"]["turns_per_s"]
        schedule = arrival_times(rate, options.arrivals, options.arrival_seconds, options.spacing, options.seed)
        users = tokens_for([next(names) for _ in schedule])
        rows[share] = {"rate": rate, **figures(asyncio.run(open_loop(urls, users, schedule, Load(postgres))))}
    return rows


def serve_model(latency: float, connection: Connection) -> None:
    """The chore-keeping model stub, in a process of its own: send its URL, serve until told to stop."""
    with ChoreEndpoint().start(latency) as stub:
        connection.send(stub.base_url)
        connection.recv()


@dataclass
class ModelProcess:
    """Where the model stub's process answers (what `token_environment` reads)."""

    base_url: str


@contextmanager
def model_process(latency: float) -> Iterator[ModelProcess]:
    """The model stub in a child process (its CPU counted apart from the clients'); yield its URL."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    process = context.Process(target=serve_model, args=(latency, theirs), daemon=True)
    process.start()
    try:
        yield ModelProcess(ours.recv())
    finally:
        ours.send("stop")
        process.join(10)


@contextmanager
def postgres(url: str | None) -> Iterator[str]:
    """A PostgreSQL server's URL: the one given, else a throwaway server."""
    if url:
        yield url
        return
    directory = Path(tempfile.mkdtemp(prefix="maistro-bench-pg-"))
    try:
        yield postgres_server.start(directory)
    finally:
        postgres_server.stop(directory)
        shutil.rmtree(directory, ignore_errors=True)


def print_row(name: str, lone: float, row: dict) -> None:
    """One load's line of the table."""
    print(f"{name:<60} {lone:>6.2f} s {row['turns_per_s']:>8.2f} {row['p50']:>7.2f} s {row['p95']:>7.2f} s "
          f"{row['p95'] / lone:>6.1f}x {row['errors']:>6} {row['wrong_memories']:>8}")


def print_cpu(name: str, row: dict) -> None:
    """One load's CPU ms per turn, by kind of process, largest first."""
    shares = ", ".join(f"{kind} {ms:.0f}" for kind, ms in sorted(row["cpu_ms"].items(), key=lambda item: -item[1])
                       if ms >= 0.5)
    print(f"  {name}: {shares}; total {sum(row['cpu_ms'].values()):.0f} ms, {row['cores']:.2f} cores busy")


def verdict(met: bool) -> str:
    """`met` or `NOT met`."""
    return "met" if met else "NOT met"


def serve(kind: str, directory: Path, model: ModelProcess, users: dict[str, str], server_url: str,
          servers: ExitStack) -> list[str]:
    """Start `kind` in `directory` (Aegra: two instances, a Redis and a fresh database); its URLs."""
    env = token_environment(directory, model, users)
    if kind == AEGRA:
        redis = servers.enter_context(redis_server(directory))
        database = postgres_server.create_database(server_url)
        return servers.enter_context(aegra_instances(directory, env, database, redis, count=2))
    return [servers.enter_context(langgraph_dev(directory, env, DEV_FLAGS))]


def print_targets(rows: dict, slow: float, fast: float) -> None:
    """The verdicts: turns/s at the slow model over the fast one, the open loops' tails, CPU per turn."""
    for kind, name in ((DEV, "langgraph dev"), (AEGRA, "Aegra x2")):
        ratio = rows[kind, slow]["closed"]["turns_per_s"] / rows[kind, fast]["closed"]["turns_per_s"]
        print(f"{name}: saturation turns/s at {slow:.1f} s per call / at {fast:.1f} s: {ratio:.2f}x "
              f"(target >= {TARGET_SLOW_OVER_FAST}x): {verdict(ratio >= TARGET_SLOW_OVER_FAST)}")
    aegra = rows[AEGRA, slow]
    for share in OPEN_LOOP_SHARES:
        over = aegra[share]["p95"] / aegra["lone"]
        clean = not aegra[share]["errors"] and not aegra[share]["wrong_memories"]
        print(f"Aegra open loop at {share:.0%} of saturation ({slow:.1f} s per call): p95 {over:.2f}x a lone turn "
              f"(target <= {TARGET_P95_OVER_LONE}x), no errors, nothing lost: "
              f"{verdict(over <= TARGET_P95_OVER_LONE and clean)}")
    ratio = rows[AEGRA, fast]["closed"]["turns_per_s"] / rows[DEV, fast]["closed"]["turns_per_s"]
    print(f"Aegra / langgraph dev saturation turns/s at {fast:.1f} s per call: {ratio:.1f}x")


def main() -> None:
    """Run the loads on both servers at each model latency and print the table, the CPU per turn and the targets."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=48, help="clients of the closed loop (saturation)")
    parser.add_argument("--turns", type=int, default=2, help="turns per client in the closed loop")
    parser.add_argument("--arrivals", type=int, default=60, help="turns per open-loop rate, at most")
    parser.add_argument("--arrival-seconds", type=float, default=20.0, help="seconds of arrivals per rate, at most")
    parser.add_argument("--spacing", choices=("poisson", "even"), default="poisson", help="gaps between arrivals")
    parser.add_argument("--seed", type=int, default=1, help="seed of the Poisson arrivals")
    parser.add_argument("--latency", type=float, nargs=2, default=(0.2, 1.0), metavar=("FAST", "SLOW"),
                        help="seconds the model takes per call, in the two runs compared")
    parser.add_argument("--postgres", help="a PostgreSQL server URL (default: a throwaway server)")
    options = parser.parse_args()
    fast, slow = options.latency
    per_load = 1 + options.clients + len(OPEN_LOOP_SHARES) * options.arrivals
    users = tokens_for([f"user{n}" for n in range(4 * per_load)])
    names = iter(users)
    rows = {}
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="maistro-load-") as scratch:
        server_url = stack.enter_context(postgres(options.postgres))
        database_server = listener(urlparse(server_url).port or 5432)
        for kind in (DEV, AEGRA):
            for latency in (fast, slow):
                directory = Path(scratch) / f"{kind}-{latency}"
                directory.mkdir()
                with ExitStack() as servers:
                    model = servers.enter_context(model_process(latency))
                    urls = serve(kind, directory, model, users, server_url, servers)
                    rows[kind, latency] = measure(urls, names, options, database_server,
                                                  open_loops=kind == AEGRA and latency == slow)
    print(f"\nClosed loop {options.clients} clients x {options.turns} turns; open loop up to {options.arrivals} "
          f"{options.spacing} arrivals; langgraph dev {' '.join(DEV_FLAGS)}, MAISTRO_NODE_THREADS default "
          f"({psutil.cpu_count()} cores, load average {psutil.getloadavg()[0]:.1f})")
    print(f"{'load':<60} {'lone':>8} {'turns/s':>8} {'p50':>9} {'p95':>9} {'p95/lone':>7} {'errors':>6} "
          f"{'lost/dup':>8}")
    for (kind, latency), row in rows.items():
        name = f"{'langgraph dev' if kind == DEV else 'Aegra x2 + Redis'}, {latency:.1f} s per call"
        print_row(f"{name}, closed loop of {options.clients}", row["lone"], row["closed"])
        for share in OPEN_LOOP_SHARES if kind == AEGRA and latency == slow else ():
            print_row(f"{name}, open loop {share:.0%} ({row[share]['rate']:.2f}/s offered)", row["lone"], row[share])
    print("CPU ms per turn, by process tree:")
    for (kind, latency), row in rows.items():
        name = f"{'langgraph dev' if kind == DEV else 'Aegra'}, {latency:.1f} s per call"
        print_cpu(f"{name}, closed loop", row["closed"])
        for share in OPEN_LOOP_SHARES if kind == AEGRA and latency == slow else ():
            print_cpu(f"{name}, open loop {share:.0%}", row[share])
    print_targets(rows, slow, fast)


if __name__ == "__main__":
    main()
