"""Benchmark the agent with a scripted model: `python -m bench.run [--latency 0] [--json out.json]`.

Per scenario it reports model calls per turn (total, and sequential = the longest chain of calls that had
to wait for one another, from the order of requests and answers: see `sequential_calls`), prompt tokens
per turn (messages plus tool schemas, CJK-aware estimate), and non-LLM overhead per turn (wall time minus
the scripted latency on the sequential path), p50 and p95, over the last 10 turns. The model answers
instantly by default, so the overhead is the agent's own work. The cold-start table (see
bench.cold_start) comes first.
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
from dataclasses import asdict, dataclass
from pathlib import Path

import psycopg
from langchain_core.messages import HumanMessage
from langgraph.store.base import PutOp

from bench.cold_start import print_cold_start
from graph import build_graph
from graph.app.scripted_model import (
    ScriptedChatModel,
    calls,
    existing_ids,
    patch,
    profile,
    route,
    say,
    sequential_calls,
    todo,
)
from graph.memory.store import TODO, namespace
from tests.support import postgres_server

CHORES = ["Water the plants", "Pay the electricity bill", "Renew passport", "Call grandma", "Clean gutters"]


@dataclass
class Figures:
    """One scenario's measurements, averaged over its measured turns."""

    scenario: str
    backend: str
    todos: int
    turns: int
    calls_per_turn: float
    sequential_calls_per_turn: float
    prompt_tokens_per_turn: float
    overhead_p50_ms: float
    overhead_p95_ms: float


def _chat(messages, tools):
    if messages[0].text.startswith("You keep a running summary"):
        return say("The user has been marking chores done one by one.")
    return route("todo") if messages[-1].type == "human" and tools else say("Done, marked it.")


def _mark_named_chore_done(messages, tools):
    request = next(m.text for m in reversed(messages) if m.type == "human")
    needle = request.split("(", 1)[1].split(")", 1)[0]
    found = [doc_id for doc_id, doc in existing_ids(messages).items() if f"({needle})" in doc]
    return calls(*(patch(doc_id, {"op": "replace", "path": "/status", "value": "done"}) for doc_id in found))


def chore_keeper(latency: float) -> ScriptedChatModel:
    """A model that marks the chore the user names as done, and summarises when asked."""
    return ScriptedChatModel(latency=latency, standing={"task_maistro": _chat, "update_todos": _mark_named_chore_done})


def fill(agent, user_id: str, count: int) -> None:
    """Give the user `count` open chores."""
    agent.store.batch(
        [
            PutOp(namespace(TODO, user_id), f"chore-{n:05d}", {
                "task": f"{CHORES[n % len(CHORES)]} (chore {n})", "time_to_complete": 15, "deadline": None,
                "solutions": ["Saturday morning"], "status": "not started",
            })
            for n in range(count)
        ]
    )


def play(agent, model: ScriptedChatModel, user_id: str, messages: list[str], latency: float) -> list[dict]:
    """Send each message as a turn; return per-turn calls, sequential calls, prompt tokens and overhead."""
    gc.collect()
    results = []
    for text in messages:
        first = len(model.calls)
        started = time.perf_counter()
        agent.invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": user_id, "user_id": user_id}})
        wall = time.perf_counter() - started
        turn_calls = model.calls[first:]
        sequential = sequential_calls(turn_calls)
        results.append({
            "calls": len(turn_calls),
            "sequential": sequential,
            "tokens": sum(call.prompt_tokens for call in turn_calls),
            "overhead": wall - sequential * latency,
        })
    return results


def summarise(name: str, backend: str, todos: int, turns: list[dict], measured: int) -> Figures:
    """Average the last `measured` turns into one row."""
    tail = turns[-measured:]
    overheads = sorted(t["overhead"] * 1000 for t in tail)
    return Figures(
        scenario=name, backend=backend, todos=todos, turns=len(turns),
        calls_per_turn=statistics.mean(t["calls"] for t in tail),
        sequential_calls_per_turn=statistics.mean(t["sequential"] for t in tail),
        prompt_tokens_per_turn=statistics.mean(t["tokens"] for t in tail),
        overhead_p50_ms=statistics.median(overheads),
        overhead_p95_ms=overheads[min(len(overheads) - 1, round(0.95 * (len(overheads) - 1)))],
    )


def two_memory_turn(make_agent: Callable, backend: str, latency: float) -> Figures:
    """"I moved to Oakland and need to book a dentist": profile and ToDo updated in one turn."""
    model = ScriptedChatModel(latency=latency)
    agent = make_agent(model)
    for _ in range(10):
        model.add("task_maistro", route("user", "todo"), say("Noted, and I added the dentist."))
        model.add("update_profile", calls(profile(location="Oakland")))
        model.add("update_todos", calls(todo("Book a dentist", solutions=["Oakland Dental"])))
    turns = play(agent, model, "mover", ["I moved to Oakland and need to book a dentist."] * 10, latency)
    return summarise("two memories in one message", backend, 1, turns, 10)


def growth(make_agent: Callable, backend: str, latency: float, todos: int, turns: int) -> Figures:
    """`turns` turns that each mark a named chore done, on a list of `todos` chores."""
    model = chore_keeper(latency)
    agent = make_agent(model)
    fill(agent, "grower", todos)
    messages = [f"I finished chore ({n % todos}) just now." for n in range(turns)]
    results = play(agent, model, "grower", messages, latency)
    return summarise(f"{todos} ToDos, {turns} turns", backend, todos, results, max(10, turns // 2))


SERIES = ((10, 20), (100, 20), (500, 20), (10, 100), (300, 300))


def main() -> None:
    """Run the scenarios and print a table (and JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.0, help="scripted seconds per model call")
    parser.add_argument("--postgres", default="auto", help="'auto' (start one), a postgresql:// URL, or 'off'")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()

    print_cold_start()
    print()
    workdir = Path(tempfile.mkdtemp(prefix="maistro-bench-"))
    rows: list[Figures] = []
    with _postgres(args.postgres, workdir) as postgres_url:
        backends = {"sqlite": lambda: {"data_dir": tempfile.mkdtemp(dir=workdir)}}
        if postgres_url:
            backends["postgres"] = _fresh_databases(postgres_url)
        for backend, storage in backends.items():
            def make_agent(model, storage=storage):
                return build_graph(**storage(), chat_model=lambda _settings: model)

            rows.append(two_memory_turn(make_agent, backend, args.latency))
            for todos, turns in SERIES if backend == "sqlite" else ((500, 20),):
                rows.append(growth(make_agent, backend, args.latency, todos, turns))

    _print(rows)
    _print_targets(rows)
    if args.json:
        args.json.write_text(json.dumps([asdict(row) for row in rows], indent=2))


@contextmanager
def _postgres(setting: str, workdir: Path) -> Iterator[str | None]:
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


def _fresh_databases(url: str) -> Callable[[], dict]:
    numbers = itertools.count()

    def fresh() -> dict:
        name = f"maistro_bench_{next(numbers)}"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return {"database_url": url.rsplit("/", 1)[0] + f"/{name}"}

    return fresh


def _print(rows: list[Figures]) -> None:
    header = "| scenario | backend | calls/turn | sequential | prompt tokens/turn | overhead p50 ms | overhead p95 ms |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for row in rows:
        print(
            f"| {row.scenario} | {row.backend} | {row.calls_per_turn:.1f} | {row.sequential_calls_per_turn:.1f} "
            f"| {row.prompt_tokens_per_turn:,.0f} | {row.overhead_p50_ms:.1f} | {row.overhead_p95_ms:.1f} |"
        )


def _print_targets(rows: list[Figures]) -> None:
    def row(scenario: str, backend: str = "sqlite") -> Figures:
        return next(r for r in rows if r.scenario == scenario and r.backend == backend)

    two, small, large, busy = (
        row("two memories in one message"), row("10 ToDos, 20 turns"), row("300 ToDos, 300 turns"), row("500 ToDos, 20 turns")
    )
    checks = [
        (f"two-memory turn: {two.sequential_calls_per_turn:.1f} sequential model calls (target <= 3)",
         two.sequential_calls_per_turn <= 3),
        (f"prompt tokens at 300 ToDos/300 turns: {large.prompt_tokens_per_turn / small.prompt_tokens_per_turn:.2f}x "
         "the figure at 10 ToDos/20 turns (target <= 2x)", large.prompt_tokens_per_turn <= 2 * small.prompt_tokens_per_turn),
        (f"non-LLM overhead p95 at 500 ToDos on SQLite: {busy.overhead_p95_ms:.1f} ms (target <= 50 ms)",
         busy.overhead_p95_ms <= 50),
    ]
    print()
    for text, met in checks:
        print(f"{'met' if met else 'MISSED'}: {text}")


if __name__ == "__main__":
    main()
