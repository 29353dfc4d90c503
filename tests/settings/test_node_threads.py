"""MAISTRO_NODE_THREADS: validated like every setting, and the custom app's lifespan makes that many threads the
event loop's default executor, which LangGraph runs sync nodes on (tests/server/test_node_threads.py runs it on
the servers)."""

import asyncio
import threading

import pytest

from graph.server.app import app
from graph.server.executor import THREAD_NAME_PREFIX
from graph.settings import DEFAULT_NODE_THREADS, Settings, SettingsError


def test_the_thread_count_defaults_to_64_and_a_bad_value_is_refused_with_a_sentence():
    assert Settings.from_environ({}).node_threads == DEFAULT_NODE_THREADS == 64
    assert Settings.from_environ({"MAISTRO_NODE_THREADS": " 200 "}).node_threads == 200
    for bad in ("0", "-3", "many", "2.5", "5000"):
        with pytest.raises(SettingsError, match=r"^MAISTRO_NODE_THREADS=.* is invalid: .*\.$"):
            Settings.from_environ({"MAISTRO_NODE_THREADS": bad})


async def blocking_calls_at_once(calls: int) -> int:
    """Start `calls` blocking calls on the loop's default executor, as LangGraph runs a sync node; how many of
    them ran at the same time (each waits until all have started, or half a second)."""
    started = threading.Barrier(calls, timeout=0.5)
    together = []

    def node() -> None:
        assert threading.current_thread().name.startswith(THREAD_NAME_PREFIX)
        try:
            started.wait()
            together.append(True)
        except threading.BrokenBarrierError:
            together.append(False)

    loop = asyncio.get_running_loop()
    await asyncio.gather(*(loop.run_in_executor(None, node) for _ in range(calls)))
    return sum(together)


async def under_the_apps_lifespan(calls: int) -> int:
    """`blocking_calls_at_once` on a loop that runs the custom app's lifespan, as the servers do at start-up."""
    async with app.router.lifespan_context(app):
        return await blocking_calls_at_once(calls)


def test_the_custom_apps_lifespan_runs_sync_nodes_on_as_many_threads_as_set(monkeypatch):
    monkeypatch.setenv("MAISTRO_NODE_THREADS", "40")
    assert asyncio.run(under_the_apps_lifespan(40)) == 40, "40 blocking nodes ran at once"


def test_the_lifespan_refuses_a_bad_thread_count_before_the_server_serves(monkeypatch):
    monkeypatch.setenv("MAISTRO_NODE_THREADS", "0")
    with pytest.raises(SettingsError, match="MAISTRO_NODE_THREADS='0' is invalid"):
        asyncio.run(under_the_apps_lifespan(1))
