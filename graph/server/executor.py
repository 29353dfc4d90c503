"""The threads the API server runs the graph's sync nodes on: `MAISTRO_NODE_THREADS` of them (default 64).

The agent's nodes are sync functions. Under an API server a run is async, and LangGraph runs each sync node
through langchain_core's `run_in_executor(None, ...)`: on the event loop's default executor, which Python sizes
at min(32, cores + 4) threads, 6 on a 2-core machine. A node holds its thread for as long as it waits for the
model, so with a model taking a second a call six waiting nodes stall every other run of the instance while its
CPU idles. The custom app's lifespan (`graph.server.app`, mounted by `http.app` in langgraph.json and aegra.json;
both servers run it on their event loop at start-up, inside their own) calls `use_node_threads`: a pool of
MAISTRO_NODE_THREADS threads becomes the loop's default executor before the first run. A thread waiting on a
socket costs its stack's memory and no CPU, so the pool is sized by how many nodes wait at once: at least twice
the runs an instance runs at once (a turn routing two memories runs two update nodes together).

`langgraph dev` with `BG_JOB_ISOLATED_LOOPS=true` runs each run on a loop of its own, with a default executor
it sizes itself; there the setting does not apply.
"""

import asyncio
from concurrent.futures import ThreadPoolExecutor

from graph.settings import current_settings

THREAD_NAME_PREFIX = "maistro-node"


def node_thread_pool() -> ThreadPoolExecutor:
    """A thread pool of MAISTRO_NODE_THREADS threads (started as work comes); raises `SettingsError` for a bad value."""
    return ThreadPoolExecutor(max_workers=current_settings().node_threads, thread_name_prefix=THREAD_NAME_PREFIX)


def use_node_threads(loop: asyncio.AbstractEventLoop) -> ThreadPoolExecutor:
    """Make a `node_thread_pool` the default executor of `loop`; return it.

    The loop shuts its default executor down when it closes (`asyncio.run` does), so the pool outlives every run
    the server drains on its way out.
    """
    pool = node_thread_pool()
    loop.set_default_executor(pool)
    return pool

