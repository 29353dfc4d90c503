"""A setting the API server cannot use stops `langgraph dev` with one sentence and an exit status that is not 0,
with `--reload` (its default) or without.

langgraph-api imports the server's modules (`graph.server.auth`, `graph.server.app`) in uvicorn's worker process
before it serves anything, and they read the settings there (`checked_at_start`). Under `langgraph dev` a value the
server cannot use is printed as one sentence, with no traceback, and the worker exits with status 1. With
`--reload` the worker is a child of uvicorn's reloader, which would go on waiting for file changes while serving
nothing; the worker ends it with SIGHUP, a signal the reloader does not handle (it shuts down, with status 0, only
on SIGINT and SIGTERM), so `langgraph dev` itself ends with a status that is not 0. Elsewhere (Aegra, tests, a
program importing the modules) the error is raised as it is.
"""

import multiprocessing
import os
import signal
import sys
from collections.abc import Callable
from typing import NoReturn, TypeVar

# What `langgraph dev` (langgraph-api's `run_server`) sets in its server's environment.
DEV_SERVER_VARIABLE = "LANGSMITH_LANGGRAPH_API_VARIANT"
DEV_SERVER = "local_dev"

T = TypeVar("T")


def refuse_start(error: ValueError) -> NoReturn:
    """Print why the server cannot start, in one sentence, and end `langgraph dev` (its reloader too)."""
    print(f"task-maistro cannot start: {error}", file=sys.stderr, flush=True)
    reloader = multiprocessing.parent_process()
    if reloader is not None and reloader.pid is not None:
        os.kill(reloader.pid, signal.SIGHUP)
    os._exit(1)


def checked_at_start(read: Callable[[], T]) -> T:
    """What `read` returns; under `langgraph dev`, a setting it refuses (`ValueError`) stops the server instead."""
    try:
        return read()
    except ValueError as error:
        if os.environ.get(DEV_SERVER_VARIABLE) != DEV_SERVER:
            raise
        refuse_start(error)
