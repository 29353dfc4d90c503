"""Runs waiting on a slow model overlap on both servers: a waiting node holds one of MAISTRO_NODE_THREADS threads,
not one of the handful Python's default executor has (graph.server.executor).

Each server gets more runs at once than Python's default executor has threads (min(32, cores + 4)), every run one
model call that takes `LATENCY` seconds. The stub notes when each call arrives; with the default executor no more
calls than it has threads were ever in flight together.
"""

import asyncio
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from langgraph_sdk import get_client

from graph.names import AGENT_NAME
from graph.settings import DEFAULT_NODE_THREADS
from testing.aegra_server import SERVER_KINDS, aegra_instances
from testing.langgraph_server import langgraph_dev, token_environment
from testing.openai_stub import OpenAIStub, text_reply
from testing.postgres_server import create_database

LATENCY = 2.0
PYTHON_DEFAULT_THREADS = min(32, (os.cpu_count() or 1) + 4)
RUNS = PYTHON_DEFAULT_THREADS + 6
USER, TOKEN = "ada", "ada-token-0123456789abcdef"
SECONDS_FOR_ALL_RUNS = 90


class TimedReplies:
    """Answers every call with a short reply, noting when each one arrived."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self.lock = threading.Lock()

    def __call__(self, request: dict) -> dict:
        """The reply; the arrival is noted before the stub's latency starts."""
        with self.lock:
            self.arrivals.append(time.monotonic())
        return text_reply("Noted.")

    def most_in_flight(self, latency: float) -> int:
        """The most calls in flight at once: each one is from its arrival until `latency` later."""
        arrivals = sorted(self.arrivals)
        return max(sum(1 for other in arrivals if at - latency < other <= at) for at in arrivals)


@contextmanager
def server(kind: str, directory: Path, env: dict[str, str], postgres_url: str) -> Iterator[str]:
    """A server of `kind` that may run RUNS runs at once (`langgraph dev` runs one unless told more)."""
    if kind == "aegra":
        with aegra_instances(directory, env, create_database(postgres_url)) as (url,):
            yield url
    else:
        with langgraph_dev(directory, env, ("--n-jobs-per-worker", str(RUNS))) as url:
            yield url


async def run_at_once(url: str) -> list[str]:
    """RUNS chit-chat turns at once, each on a thread of its own, streamed to their end; their errors."""
    client = get_client(url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120)
    threads = await asyncio.gather(*(client.threads.create() for _ in range(RUNS)))

    async def turn(thread: dict) -> list[str]:
        parts = client.runs.stream(thread["thread_id"], AGENT_NAME, input={"messages": [{"role": "user", "content": "hi"}]})
        return [str(part.data) async for part in parts if part.event == "error"]

    try:
        answers = await asyncio.wait_for(asyncio.gather(*(turn(thread) for thread in threads)), SECONDS_FOR_ALL_RUNS)
    finally:
        await client.aclose()
    return [error for errors in answers for error in errors]


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_runs_waiting_on_a_slow_model_overlap_beyond_pythons_default_threads(kind, tmp_path, postgres_url):
    assert DEFAULT_NODE_THREADS >= RUNS, "the default must be above what this test needs"
    replies = TimedReplies()
    with OpenAIStub(replies, latency=LATENCY) as stub:
        env = token_environment(tmp_path, stub, {USER: TOKEN})
        with server(kind, tmp_path, env, postgres_url) as url:
            errors = asyncio.run(run_at_once(url))

    assert not errors, errors[:3]
    assert len(replies.arrivals) == RUNS
    assert replies.most_in_flight(LATENCY) > PYTHON_DEFAULT_THREADS, (
        f"at most {replies.most_in_flight(LATENCY)} of {RUNS} model calls were in flight at once"
    )
