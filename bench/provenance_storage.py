"""What provenance adds to storage per turn: `python -m bench.provenance_storage [--turns N]`.

Plays N turns through the real graph, trustcall and SQLite store with the scripted model (no endpoint needed): each
turn either adds a ToDo ("Remind me: …") or moves the user to another city (the profile's location replaced, so its
old value becomes a past fact), in turn. Then it sums the JSON bytes each part of the store holds for the user: the
memories, the history entries without their provenance fields, the provenance fields of the history entries
(`source`, `sources_before`), the memories' current sources and the past facts; the last three are what provenance
adds, printed per turn and per write. Bytes of JSON values, not of the database file (whose pages and indexes add
SQLite's own overhead: `python -m bench.run` prints the data directory's size after 1,000 turns).
"""

import argparse
import json
import tempfile
from pathlib import Path

from langchain_core.messages import HumanMessage

from graph import build_graph, close_graph
from graph.memory.admin import user_items
from graph.memory.store import HISTORY, PAST, SOURCES
from graph.names import AGENT_NAME
from testing.scripted_model import ScriptedChatModel, calls, existing_ids, patch, profile, replace, route, say, todo

USER = "bench-user"
PROVENANCE_FIELDS = ("source", "sources_before")


def _chat(messages, _tools):
    if messages[-1].type != "human":
        return say("Saved.")
    return route("todo") if messages[-1].text.startswith("Remind me: ") else route("user")


def _todo(messages, _tools):
    said = next(m.text for m in reversed(messages) if m.type == "human")
    return calls(todo(said.removeprefix("Remind me: "), solutions=["Just do it"]))


def _profile(messages, _tools):
    said = next(m.text for m in reversed(messages) if m.type == "human")
    city = said.removeprefix("I moved to ").rstrip(".")
    existing = list(existing_ids(messages))
    return calls(patch(existing[0], replace("/location", city)) if existing else profile(name="Lance", location=city))


def _bytes(value) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode())


def measure(turns: int, data_dir: Path) -> dict[str, int]:
    """Play `turns` turns and sum the JSON bytes of each part of the user's store."""
    model = ScriptedChatModel(standing={AGENT_NAME: _chat, "update_todos": _todo, "update_profile": _profile})
    agent = build_graph(data_dir, chat_model=lambda _settings: model)
    try:
        for index in range(turns):
            text = f"Remind me: errand number {index}" if index % 2 == 0 else f"I moved to city number {index}."
            agent.invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": "t", "user_id": USER}})
        parts = {"memories": 0, "history (without provenance)": 0, "history provenance fields": 0, "sources": 0,
                 "past facts": 0, "writes": 0}
        for item in user_items(agent.store, USER):
            space = item.namespace[0]
            if space == HISTORY:
                extra = {name: item.value[name] for name in PROVENANCE_FIELDS if name in item.value}
                parts["history provenance fields"] += _bytes(extra) if extra else 0
                parts["history (without provenance)"] += _bytes({k: v for k, v in item.value.items() if k not in extra})
                parts["writes"] += 1
            elif space == SOURCES:
                parts["sources"] += _bytes(item.value)
            elif space == PAST:
                parts["past facts"] += _bytes(item.value)
            else:
                parts["memories"] += _bytes(item.value)
        return parts
    finally:
        close_graph(agent)


def print_results(parts: dict[str, int], turns: int) -> None:
    """The table: bytes per part, per turn and per write, and what provenance adds."""
    writes = max(parts["writes"], 1)
    added = parts["history provenance fields"] + parts["sources"] + parts["past facts"]
    print(f"| part of the store ({turns} turns, {writes} writes) | bytes of JSON | per turn | per write |")
    print("|---|---|---|---|")
    for name, size in parts.items():
        if name != "writes":
            print(f"| {name} | {size:,} | {size / turns:,.0f} | {size / writes:,.0f} |")
    print(f"| **provenance adds** (fields + sources + past facts) | {added:,} | {added / turns:,.0f} | {added / writes:,.0f} |")


def main() -> None:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        print_results(measure(args.turns, Path(scratch)), args.turns)


if __name__ == "__main__":
    main()
