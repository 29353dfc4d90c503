"""Prompt tokens a local server re-reads per turn: a short conversation with SmolLM2-135M on llama-server.

`python -m bench.prompt_cache [--turns N] [--max-reply-tokens N] [--saves] [--json FILE] [--label TEXT]`

llama-server keeps each slot's last prompt and reads again only what follows the part a new prompt shares with it.
This plays a short conversation (`CONVERSATION`) through the agent's graph (`build_graph`, `graph.stream`, the real
`ChatOpenAI` client, a throwaway SQLite store, `MAISTRO_CALL_MODE=tools`) against SmolLM2-135M-Instruct on `llama-server`
(testing/llama_server.py: one thread, two slots of 8,192 tokens, replies capped at the server), and reads
from the server's `/metrics`, per turn, the prompt tokens it re-read (`prompt_tokens_total`), those it took from its
cache (`prompt_tokens_cached_total`) and the seconds it spent reading.

It uses only the public API, so it measures any checkout: run it as a file with that checkout first on the path,
e.g. for main before the chat prompt put the time and the memories last:

    git -C /work/main worktree add /tmp/before 3f0e128
    PYTHONPATH=/tmp/before python bench/prompt_cache.py --label before
    python -m bench.prompt_cache --label after
"""

import argparse
import json
import os
import tempfile
import time
import uuid
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from langchain_core.messages import HumanMessage
from rich.console import Console
from rich.table import Table

from graph import build_graph, close_graph
from graph.memory.kinds import TODO
from graph.memory.store import namespace
from testing.llama_server import LlamaServer, serving

CONVERSATION = (
    "Hi! My name is Lance and I live in San Francisco.",
    "I need to book swim lessons for my daughter.",
    "What is on my list?",
    "Thanks. Where do I live?",
    "Good night!",
)
# Replies capped at the server too, so that a checkout without MAISTRO_MAX_REPLY_TOKENS runs as short.
DEFAULT_REPLY_TOKENS = 48
MODEL_TIMEOUT_SECONDS = 600
# Tool calls: SmolLM2's chat template has none, so the model makes no call and every request is the chat prompt this
# measures (under "json" its extractions may fill their schemas' bounds for minutes on 2 shared cores).
CALL_MODE = "tools"


@dataclass(frozen=True)
class TurnCost:
    """What one turn cost the server: the prompt tokens it re-read and took from its cache, the seconds it spent
    reading them, and the turn's wall time."""

    turn: int
    reread: int
    cached: int
    prompt_seconds: float
    seconds: float

    @property
    def prompt(self) -> int:
        """Every prompt token of the turn's requests."""
        return self.reread + self.cached


@contextmanager
def agent_on(server: LlamaServer, reply_tokens: int):
    """The agent's graph on a throwaway data directory, its endpoint settings pointed at `server`."""
    with tempfile.TemporaryDirectory(prefix="prompt-cache-") as data_dir:
        os.environ.update(
            OPENAI_BASE_URL=server.base_url,
            OPENAI_API_KEY="not-needed",
            MAISTRO_MODEL="smollm2-135m",
            MAISTRO_MODEL_TIMEOUT=str(MODEL_TIMEOUT_SECONDS),
            MAISTRO_MAX_REPLY_TOKENS=str(reply_tokens),
            MAISTRO_CALL_MODE=CALL_MODE,
            MAISTRO_DATA_DIR=data_dir,
            MAISTRO_EMBEDDINGS="",
        )
        agent = build_graph(Path(data_dir))
        try:
            yield agent
        finally:
            close_graph(agent)


def play(server: LlamaServer, turns: Sequence[str], reply_tokens: int, saves: bool) -> list[TurnCost]:
    """Play `turns` on one thread, streamed as `maistro chat` streams them; what each cost the server. With `saves`,
    a ToDo is added to the store before each turn after the first, as a turn that saved a memory would (SmolLM2
    saves nothing under tool calls), so the memories the prompt shows change from turn to turn."""
    costs: list[TurnCost] = []
    user = "bench"
    config = {"configurable": {"thread_id": str(uuid.uuid4()), "user_id": user}}
    with agent_on(server, reply_tokens) as agent:
        for number, text in enumerate(turns, 1):
            if saves and number > 1:
                todo = {"task": f"Chore number {number}", "time_to_complete": 10, "deadline": None,
                        "solutions": ["Do it today"], "status": "not started"}
                agent.store.put(namespace(TODO, user), f"chore-{number}", todo)
            before, started = server.metrics(), time.perf_counter()
            for _ in agent.stream({"messages": [HumanMessage(text)]}, config, stream_mode=["messages", "updates"]):
                pass
            seconds, after = time.perf_counter() - started, server.metrics()
            delta = {name: after.get(name, 0.0) - before.get(name, 0.0) for name in after}
            costs.append(TurnCost(
                number,
                round(delta.get("prompt_tokens_total", 0)),
                round(delta.get("prompt_tokens_cached_total", 0)),
                round(delta.get("prompt_seconds_total", 0), 2),
                round(seconds, 1),
            ))
    return costs


def print_costs(costs: Sequence[TurnCost], label: str, console: Console) -> None:
    """The table of what each turn cost, and the totals."""
    table = Table(title=f"Prompt tokens per turn ({label})")
    for column in ("turn", "prompt tokens", "re-read", "from cache", "reading (s)", "turn (s)"):
        table.add_column(column, justify="right")
    for cost in costs:
        table.add_row(str(cost.turn), f"{cost.prompt:,}", f"{cost.reread:,}", f"{cost.cached:,}",
                      f"{cost.prompt_seconds:.1f}", f"{cost.seconds:.1f}")
    table.add_row("all", f"{sum(c.prompt for c in costs):,}", f"{sum(c.reread for c in costs):,}",
                  f"{sum(c.cached for c in costs):,}", f"{sum(c.prompt_seconds for c in costs):.1f}",
                  f"{sum(c.seconds for c in costs):.1f}")
    console.print(table)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve SmolLM2-135M, play the conversation, print (and optionally write) what each turn cost the server."""
    parser = argparse.ArgumentParser(prog="python -m bench.prompt_cache", description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=len(CONVERSATION), help="how many turns of the conversation")
    parser.add_argument("--max-reply-tokens", type=int, default=DEFAULT_REPLY_TOKENS, help="reply cap (server and agent)")
    parser.add_argument("--saves", action="store_true", help="add a ToDo to the store before each later turn")
    parser.add_argument("--label", default="this checkout", help="what the run measures, for the table's title")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    arguments = parser.parse_args(argv)
    with serving(n_predict=arguments.max_reply_tokens) as server:
        costs = play(server, CONVERSATION[: arguments.turns], arguments.max_reply_tokens, arguments.saves)
    print_costs(costs, arguments.label, Console())
    if arguments.json:
        arguments.json.write_text(json.dumps({"label": arguments.label, "turns": [asdict(c) for c in costs]}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
