"""Reading model text: how the boundary's time grows with a reply's size (`python -m bench.model_text`).

Every model reply passes `graph.thread.model_message.normalise_reply` before it is stored: it is read as a call
written as text when the whole reply is one, else scanned for quoted calls, all within the bounds of
`graph.thread.bounded_json`. Each shape of reply below (what a model, or a user it quotes, can send) is grown from
100,000 to 800,000 characters and read 5 times per size (the fastest run's CPU time is shown: other
programs on a busy machine change the wall time, hardly the CPU time); per shape the table prints the time
at each size and how much it grew from the smallest size to the largest, 8 times the characters: about 8x for
time that grows with the size, 64x for time that grows with its square (the code before the bounds took 14 s
of wall time for 200,000 "{", measured once on this machine: quadratic). Target: every growth at most 12x, and every reply of 200,000 characters read in
under 1 s.

What it leaves out: the client library's own parsing before the boundary (langchain-openai parses a streamed
call's arguments again at every chunk), which the reply's token limit bounds.
"""

import argparse
import gc
import json
import time
from collections.abc import Callable

from langchain_core.messages import AIMessage

from graph.memory.kinds import DEFAULT_MEMORY_KINDS
from graph.thread.model_message import UPDATE_TOOL, normalise_reply

SIZES = (100_000, 200_000, 400_000, 800_000)
RUNS = 5
GROWTH_TARGET = 12.0
SECONDS_TARGET = 1.0
CALL = json.dumps({"name": UPDATE_TOOL, "arguments": {"update_type": "todo"}})


def repeated(piece: str) -> Callable[[int], str]:
    """A reply of `piece` repeated to the size asked."""
    return lambda size: (piece * (size // len(piece) + 1))[:size]


SHAPES: dict[str, Callable[[int], str]] = {
    "open braces": repeated("{"),
    "nested brackets": lambda size: "[" * (size // 2) + "]" * (size // 2),
    "a tag, then braces": lambda size: "<tool_call>" + "{" * (size - len("<tool_call>")),
    "quoted calls in prose": repeated(f"It would be `{CALL}`, not run. "),
    "JSON objects in prose": repeated('See {"a": [1, {"b": "c"}]} and '),
    "open strings": repeated('{"a": "'),
}


def read_seconds(reply: str) -> float:
    """The least CPU time, of RUNS runs, that `normalise_reply` takes to read `reply`."""
    message = AIMessage(content=reply, id="bench")
    times = []
    for _ in range(RUNS):
        gc.collect()
        started = time.process_time()
        normalise_reply(message, DEFAULT_MEMORY_KINDS, taken_ids=())
        times.append(time.process_time() - started)
    return min(times)


def measure(sizes: tuple[int, ...] = SIZES) -> dict[str, list[float]]:
    """The seconds each shape takes at each size."""
    return {name: [read_seconds(make(size)) for size in sizes] for name, make in SHAPES.items()}


def growth(seconds: list[float]) -> float:
    """How much a shape's time grew from the smallest size to the largest."""
    return seconds[-1] / seconds[0]


def table(figures: dict[str, list[float]], sizes: tuple[int, ...] = SIZES) -> list[str]:
    """The lines of the table: per shape, the time at each size and its growth from the smallest to the largest."""
    header = f"{'reply':<24}" + "".join(f"{size:>12,}" for size in sizes) + f"{'growth':>10}"
    lines = [header, "-" * len(header)]
    for name, seconds in figures.items():
        cells = "".join(f"{now * 1000:>9.1f} ms" for now in seconds)
        lines.append(f"{name:<24}{cells}{growth(seconds):>9.1f}x")
    return lines


def main() -> None:
    """Measure every shape and print the table and whether the targets are met."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.parse_args()
    figures = measure()
    print(f"normalise_reply on replies of growing size (CPU time, the fastest of {RUNS} runs):\n")
    print("\n".join(table(figures)))
    largest = max(growth(seconds) for seconds in figures.values())
    slowest = max(seconds[SIZES.index(200_000)] for seconds in figures.values())
    met = largest <= GROWTH_TARGET and slowest < SECONDS_TARGET
    print(
        f"\nlargest growth {largest:.1f}x for 8x the characters (target ≤ {GROWTH_TARGET:.0f}x), slowest 200,000-"
        f"character reply {slowest * 1000:.1f} ms (target < {SECONDS_TARGET * 1000:.0f} ms): {'met' if met else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
