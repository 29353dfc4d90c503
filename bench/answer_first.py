"""Answer first: when the reply to a turn starts, and how long the turn takes, in both reply timings.

`python -m bench.answer_first [--repetitions N] [--latency S] [--json FILE]`

The path users run: `build_graph` on SQLite in a temporary directory, the default model factory's real
`langchain_openai.ChatOpenAI` client, over HTTP, to the local OpenAI-compatible stub answering as the
benchmark's chore-keeping model (`testing.chore_endpoint`, `replies_first`: when the chat prompt asks for the
reply first, `prompts.REPLY_FIRST_RULE`, it replies in the message that calls UpdateMemory, as a model
following the prompt does) with every answer `--latency` seconds late (default 0.3 s, a model's time to
answer; requests wait concurrently). Each turn is streamed with `stream_mode="messages"`, the way
`maistro chat` and Agent Chat UI get the reply's tokens, and timed to its first reply token (the first
`AIMessageChunk` with text from the chat node) and to its end. Three turns: chit-chat (nothing to save),
one memory (a new ToDo) and two memories (a new city in the profile and a new ToDo, updated in parallel),
each in the default reply timing, "first", and in the tutorial's, "after_updates" (`reply_timing` in
`config["configurable"]`). Every repetition plays each turn on a fresh user and thread, so all repetitions
of a turn start from the same empty memory and send the same prompts; one warm-up round is not counted,
and times are medians. Per memory turn it also counts model calls, sequential calls (the longest chain of
requests that waited for one another, `testing.chore_endpoint.sequential_requests`) and prompt tokens (the
sum of the CJK-aware estimates of the turn's requests). One lone call, a raw `ChatOpenAI` stream of a short
prompt through the same client, is timed in the same run; every time is also printed as a ratio to it.

What it leaves out: a real model's latency and its variance (every call here takes the same time, and a
call with tool calls takes as long as one without; a real model's time grows with its output), its time
to the first token versus the rest of its reply (the stub sends a whole answer at once when its latency is
up), whether a real model follows the prompt's rule 5 (the stub always does), the network to a model
(here loopback), and a real tokenizer (token counts are estimates).
"""

import argparse
import json
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from langchain_core.messages import AIMessageChunk, HumanMessage

from graph import build_graph, close_graph
from graph.backends.model import load_chat_model
from graph.memory.store import namespace
from graph.names import AGENT_NAME
from graph.run_context import RunContext
from graph.settings import REPLY_TIMINGS
from testing.chore_endpoint import ADD, MOVED, ChoreEndpoint, Request, model_environment, sequential_requests
from testing.stored_names import PROFILE, TODO

CHIT_CHAT = "chit-chat"
ONE_MEMORY = "one-memory"
TWO_MEMORIES = "two-memory"
MEMORY_TURNS = (ONE_MEMORY, TWO_MEMORIES)
# The user's message of each turn, and how many ToDos and profile documents it leaves.
TURNS = {
    CHIT_CHAT: ("How are you today?", 0, 0),
    ONE_MEMORY: (f"{ADD}Book the dentist", 1, 0),
    TWO_MEMORIES: (f"{MOVED}Oakland; {ADD}Book the dentist", 1, 1),
}
DEFAULT_TIMING = "first"
FIRST_TOKEN_TARGET = 1.3  # first reply token of a memory turn, as a multiple of the chit-chat turn's
SEQUENTIAL_TARGET = 2  # sequential model calls of a two-memory turn
# A two-memory turn's wall in lone calls: two calls and up to half a call of the agent's own work; a third
# sequential call would take it to 3.
WALL_TARGET = 2.5


@dataclass(frozen=True)
class TurnFigures:
    """One streamed turn: seconds to its first reply token and to its end, and the requests it made."""

    first_token: float
    wall: float
    calls: int
    sequential: int
    prompt_tokens: int


@dataclass(frozen=True)
class Target:
    """One of the benchmark's targets: what it asks, the figure measured, and whether it is met."""

    name: str
    measured: str
    met: bool


def turn_figures(first_token: float, wall: float, requests: list[Request]) -> TurnFigures:
    """A turn's figures from its times and the requests the endpoint answered for it."""
    return TurnFigures(
        first_token=first_token,
        wall=wall,
        calls=len(requests),
        sequential=sequential_requests(requests),
        prompt_tokens=sum(request.prompt_tokens for request in requests),
    )


def stream_turn(agent, endpoint: ChoreEndpoint, turn: str, reply_timing: str, user_id: str) -> TurnFigures:
    """Stream one turn on a fresh thread of `user_id`, as the CLI does, and check it saved what it should."""
    text, todos, profiles = TURNS[turn]
    config = {"configurable": {"thread_id": user_id, "user_id": user_id, "reply_timing": reply_timing}}
    first_request = len(endpoint.requests)
    first_token = None
    started = time.perf_counter()
    for message, metadata in agent.stream({"messages": [HumanMessage(text)]}, config, stream_mode="messages"):
        reply_token = isinstance(message, AIMessageChunk) and message.text and metadata.get("langgraph_node") == AGENT_NAME
        if first_token is None and reply_token:
            first_token = time.perf_counter() - started
    wall = time.perf_counter() - started
    saved = (len(agent.store.search(namespace(TODO, user_id))), len(agent.store.search(namespace(PROFILE, user_id))))
    if first_token is None or saved != (todos, profiles):
        raise RuntimeError(
            f"The {turn} turn ({reply_timing}) streamed no reply token or saved {saved} (ToDos, profiles), "
            f"not {(todos, profiles)}: the figures would not measure the intended flow."
        )
    return turn_figures(first_token, wall, endpoint.requests[first_request:])


def lone_call_seconds(samples: int) -> float:
    """Median seconds to the first text chunk of one raw streamed call through the default model's client."""
    model = load_chat_model(RunContext())
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        next(chunk for chunk in model.stream([HumanMessage(TURNS[CHIT_CHAT][0])]) if chunk.text)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def summarise(turns: list[TurnFigures], one_call: float) -> dict:
    """Medians of one turn's repetitions, times in ms and as multiples of one call."""
    first_token = statistics.median(t.first_token for t in turns)
    wall = statistics.median(t.wall for t in turns)
    return {
        "first_token_ms": 1000 * first_token,
        "first_token_calls": first_token / one_call,
        "wall_ms": 1000 * wall,
        "wall_calls": wall / one_call,
        "calls": statistics.median(t.calls for t in turns),
        "sequential": statistics.median(t.sequential for t in turns),
        "prompt_tokens": statistics.median(t.prompt_tokens for t in turns),
        "repetitions": [asdict(t) for t in turns],
    }


def measure(repetitions: int, latency: float) -> dict:
    """Play every turn in both reply timings, `repetitions` times after one warm-up round; the figures."""
    endpoint = ChoreEndpoint(replies_first=True)
    played: dict[str, dict[str, list[TurnFigures]]] = {timing: {turn: [] for turn in TURNS} for timing in REPLY_TIMINGS}
    with tempfile.TemporaryDirectory(prefix="maistro-answer-first-") as data_dir, endpoint.start(latency) as server:
        with model_environment(server.base_url):
            agent = build_graph(data_dir, database_url="", embeddings="")
            try:
                one_call = lone_call_seconds(repetitions + 1)
                for round_number in range(repetitions + 1):
                    for turn in TURNS:
                        for timing in REPLY_TIMINGS:
                            figures = stream_turn(agent, endpoint, turn, timing, f"{timing}-{turn}-{round_number}")
                            if round_number:
                                played[timing][turn].append(figures)
            finally:
                close_graph(agent)
    return {
        "latency_ms": 1000 * latency,
        "one_call_ms": 1000 * one_call,
        "turns": {timing: {turn: summarise(figures, one_call) for turn, figures in turns.items()}
                  for timing, turns in played.items()},
    }


def targets(turns: dict) -> list[Target]:
    """The targets, judged on the summarised figures of both reply timings (`measure()["turns"]`)."""
    first, after = turns[DEFAULT_TIMING], turns["after_updates"]
    chit_chat = first[CHIT_CHAT]["first_token_ms"]
    checks = []
    for turn in MEMORY_TURNS:
        ratio = first[turn]["first_token_ms"] / chit_chat
        name = f"first reply token of a {turn} turn ≤ {FIRST_TOKEN_TARGET}x the chit-chat turn's ({DEFAULT_TIMING})"
        checks.append(Target(name, f"{ratio:.2f}x", ratio <= FIRST_TOKEN_TARGET))
    two = first[TWO_MEMORIES]
    checks.append(Target(f"wall of a two-memory turn ≤ {SEQUENTIAL_TARGET} sequential calls ({DEFAULT_TIMING})",
                         f"{two['sequential']:g} sequential", two["sequential"] <= SEQUENTIAL_TARGET))
    name = f"wall of a two-memory turn ≤ {WALL_TARGET}x one call ({DEFAULT_TIMING}; 2 calls and the agent's own work)"
    checks.append(Target(name, f"{two['wall_calls']:.2f}x", two["wall_calls"] <= WALL_TARGET))
    for turn in MEMORY_TURNS:
        tokens, before = first[turn]["prompt_tokens"], after[turn]["prompt_tokens"]
        checks.append(Target(f"prompt tokens of a {turn} turn in {DEFAULT_TIMING} ≤ in after_updates",
                             f"{tokens:,.0f} vs {before:,.0f}", tokens <= before))
    return checks


def print_results(results: dict, checks: list[Target]) -> None:
    """The Markdown table and the targets."""
    print(f"One call (a raw ChatOpenAI stream to its first token, stub latency {results['latency_ms']:.0f} ms): "
          f"{results['one_call_ms']:.0f} ms")
    print("Turns: " + "; ".join(f'{turn}: "{text}"' for turn, (text, _, _) in TURNS.items()))
    print()
    print("| turn | reply timing | first reply token ms | × one call | wall ms | × one call | model calls | sequential "
          "| prompt tokens |")
    print("|---|---|---|---|---|---|---|---|---|")
    for turn in TURNS:
        for timing in REPLY_TIMINGS:
            row = results["turns"][timing][turn]
            print(f"| {turn} | {timing} | {row['first_token_ms']:.0f} | {row['first_token_calls']:.2f}x | {row['wall_ms']:.0f} "
                  f"| {row['wall_calls']:.2f}x | {row['calls']:g} | {row['sequential']:g} | {row['prompt_tokens']:,.0f} |")
    print()
    for check in checks:
        print(f"- {'met' if check.met else 'NOT met'}: {check.name}: {check.measured}")


def main() -> None:
    """Measure, print the table and the targets (and write JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repetitions", type=int, default=5, help="measured turns of each kind per reply timing (default 5)")
    parser.add_argument("--latency", type=float, default=0.3, help="seconds the model takes per call (default 0.3)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()
    if args.repetitions < 1 or args.latency <= 0:
        parser.error("--repetitions must be at least 1 and --latency more than 0.")
    started = time.perf_counter()
    results = measure(args.repetitions, args.latency)
    results["bench_seconds"] = time.perf_counter() - started
    checks = targets(results["turns"])
    results["targets"] = [asdict(check) for check in checks]
    print_results(results, checks)
    print()
    print(f"Whole benchmark: {results['bench_seconds']:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
