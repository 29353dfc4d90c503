"""Benchmark an added collection at scale: `python -m bench.kinds_scale [--postgres auto|URL|off] [--json FILE] [--turns N]`.

A habits collection (`HABITS`, declared the way docs/learning/memory-kinds.md shows) beside the tutorial's
memories, played through the real graph, trustcall, the real stores (SQLite, and PostgreSQL unless told
otherwise) and the real `ChatOpenAI` client against a zero-latency local endpoint (`HabitEndpoint`, the
benchmark's chore endpoint taught habits), so the times are the agent's own cost per turn. Figures, for a user
with 500 habits against one with none (or one, for an update):

- the chat prompt of a chit-chat turn, in tokens (target: at most 1.5 times the same turn with no habits);
- the extraction prompt of one habit update (target: at most 2.5 times the same update among one habit);
- the median wall time of the same turns (chit-chat, add a habit, mark it done), which with a model of zero
  latency is the turn's non-model time, and the CPU time per turn, which a busy machine disturbs less
  (target: at most 1.5 times).
"""

import argparse
import itertools
import json
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from langgraph.store.base import PutOp
from pydantic import BaseModel, Field

from bench.run import create_database, database_url, median_ms, play, postgres_admin
from graph import DEFAULT_MEMORY_KINDS, MemoryKind, build_graph, close_graph
from graph.memory.store import namespace
from graph.thread.model_message import UPDATE_TOOL
from testing.chore_endpoint import ChoreEndpoint, latest_user_line, model_environment, request_documents
from testing.openai_stub import text_reply, tool_calls_reply, tool_names
from testing.stub_script import kind_of, update

MANY = 500
TURNS = 60
ADD_HABIT = "add habit: "
DID = re.compile(r"I did habit \((\d+)\) today")
CHIT_CHAT = "How was your weekend? Mine was quiet."
ACTIVITIES = ["Run 5k", "Read twenty pages", "Meditate", "Stretch", "Practise the piano"]
TARGETS = {"chat_prompt": 1.5, "extraction_prompt": 2.5, "wall": 1.5, "cpu": 1.5}


class Habit(BaseModel):
    """A habit the user keeps."""

    name: str = Field(description="What the user does, in their words.")
    frequency: str = Field("daily", description="How often: daily, weekly, on weekdays...")
    streak: int = Field(0, description="How many times in a row the user kept it.")
    notes: str | None = Field(None, description="Anything else the user said about it.")


HABITS = MemoryKind(name="habits", schema=Habit, collection=True, description="habits the user keeps or drops")
KINDS = [*DEFAULT_MEMORY_KINDS, HABITS]


class HabitEndpoint(ChoreEndpoint):
    """The chore endpoint, routing "add habit: ..." and "I did habit (N) today" to the habits, whose extraction
    creates the habit or patches the named one's streak."""

    def _reply(self, request: dict) -> tuple[dict, str]:
        kind = kind_of(request)
        line = latest_user_line(request)
        routes = kind == "chat" and request["messages"][-1]["role"] == "user" and UPDATE_TOOL in tool_names(request)
        if routes and (ADD_HABIT in line or DID.search(line)):
            return update(HABITS.update_type), kind
        if "Habit" not in tool_names(request):
            return super()._reply(request)
        if ADD_HABIT in line:
            return tool_calls_reply(("Habit", {"name": line.split(ADD_HABIT, 1)[1], "frequency": "daily"})), "habits"
        if found := DID.search(line):
            ids = [doc_id for doc_id, doc in request_documents(request).items() if f"(habit {found[1]})" in doc]
            if ids:
                patch = {"json_doc_id": ids[0], "planned_edits": "Count today.",
                         "patches": [{"op": "replace", "path": "/streak", "value": 1}]}
                return tool_calls_reply(("PatchDoc", patch)), "habits"
        return text_reply("Nothing to change."), "habits"


def seed(agent, user_id: str, count: int) -> None:
    """Give the user `count` habits, in one batch."""
    agent.store.batch([
        PutOp(namespace(HABITS, user_id), f"habit-{n:05d}", {
            "name": f"{ACTIVITIES[n % len(ACTIVITIES)]} (habit {n})", "frequency": "daily", "streak": n % 7,
            "notes": "Before breakfast",
        })
        for n in range(count)
    ])


def turns(count: int) -> list[str]:
    """Chit-chat, add a habit, mark it done, in turn."""
    steps = [lambda n: CHIT_CHAT, lambda n: f"{ADD_HABIT}Walk the dog (habit {1000 + n})", lambda n: f"I did habit ({1000 + n}) today"]
    return [steps[n % 3](n // 3) for n in range(count)]


def measure(open_agent: Callable, endpoint: HabitEndpoint, count: int = TURNS) -> dict:
    """The figures, for one backend, timing `count` turns."""
    agent = open_agent()
    try:
        seed(agent, "many", MANY)
        seed(agent, "one", 1)
        figures: dict = {}
        for user_id in ("none", "many"):
            first = len(endpoint.requests)
            play(agent, endpoint, user_id, [CHIT_CHAT], thread_id=f"chat-{user_id}")
            figures[f"chat_prompt_{user_id}"] = max(r.prompt_tokens for r in endpoint.requests[first:] if r.kind == "chat")
        for user_id in ("one", "many"):
            first = len(endpoint.requests)
            play(agent, endpoint, user_id, ["I did habit (0) today"], thread_id=f"update-{user_id}")
            figures[f"extraction_prompt_{user_id}"] = max(r.prompt_tokens for r in endpoint.requests[first:] if r.kind == "habits")
        messages = turns(count)
        for user_id in ("none", "many"):
            cpu = time.process_time()
            played = play(agent, endpoint, user_id, messages, thread_id=f"turns-{user_id}")
            figures[f"cpu_{user_id}_ms"] = 1000 * (time.process_time() - cpu) / len(messages)
            figures[f"wall_{user_id}_p50_ms"] = median_ms(played)
    finally:
        close_graph(agent)
    figures["chat_prompt_ratio"] = figures["chat_prompt_many"] / figures["chat_prompt_none"]
    figures["extraction_prompt_ratio"] = figures["extraction_prompt_many"] / figures["extraction_prompt_one"]
    figures["wall_ratio"] = figures["wall_many_p50_ms"] / figures["wall_none_p50_ms"]
    figures["cpu_ratio"] = figures["cpu_many_ms"] / figures["cpu_none_ms"]
    return figures


def main() -> None:
    """Run the figures on each backend and print them (and JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--postgres", default="auto", help="'auto' (start one), a postgresql:// URL, or 'off'")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--turns", type=int, default=TURNS, help=f"turns timed per user (default {TURNS})")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="maistro-kinds-bench-"))
    endpoint = HabitEndpoint()
    results: dict = {}
    started = time.perf_counter()
    with endpoint.start() as server, model_environment(server.base_url), postgres_admin(args.postgres, workdir) as admin_url:
        backends: dict[str, Callable] = {"sqlite": lambda: build_graph(tempfile.mkdtemp(dir=workdir), memory_kinds=KINDS)}
        if admin_url:
            names = itertools.count()
            backends["postgres"] = lambda: build_graph(
                database_url=database_url(admin_url, create_database(admin_url, f"maistro_kinds_bench_{next(names)}")),
                memory_kinds=KINDS,
            )
        for backend, open_agent in backends.items():
            results[backend] = measure(open_agent, endpoint, args.turns)
    results["turns"] = args.turns
    results["bench_seconds"] = time.perf_counter() - started
    _print(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


def _print(results: dict) -> None:
    print(f"| {MANY} habits vs none | backend | none | {MANY} habits | ratio | target |")
    print("|---|---|---|---|---|---|")
    for backend in ("sqlite", "postgres"):
        if backend not in results:
            continue
        row = results[backend]
        lines = [
            ("chit-chat chat prompt (tokens)", row["chat_prompt_none"], row["chat_prompt_many"], "chat_prompt"),
            ("one update's extraction prompt (tokens; vs one habit)", row["extraction_prompt_one"],
             row["extraction_prompt_many"], "extraction_prompt"),
            (f"median turn, {results['turns']} turns (wall ms, model of zero latency)", round(row["wall_none_p50_ms"]),
             round(row["wall_many_p50_ms"]), "wall"),
            ("CPU per turn, the same turns (ms, endpoint included)", round(row["cpu_none_ms"]), round(row["cpu_many_ms"]),
             "cpu"),
        ]
        for name, few, many, target in lines:
            print(f"| {name} | {backend} | {few:,} | {many:,} | {row[f'{target}_ratio']:.2f}x | ≤ {TARGETS[target]}x |")
    print()
    print(f"Whole benchmark: {results['bench_seconds']:.0f} s")


if __name__ == "__main__":
    main()
