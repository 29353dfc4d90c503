"""The custom HTTP app `langgraph.json` mounts into the API server (`http.app`): routes of our own.

`/info` shadows the server's own: its `crons` flag says whether the server runs crons (both do, with auth on or
off: `graph.server.auth.own_crons` keeps each user's to themselves), as Agent Chat UI reads it. `/memories` is
the memory page: plain HTML, CSS and JavaScript shipped in `static/`, whose JSON endpoints
(`graph.server.memory_api`) authenticate each request themselves.
The server guard (`graph.server.guard`) stands in front of every route, the server's own included. The app's
lifespan sizes the threads the server runs the graph's sync nodes on (`graph.server.executor`) and, on Aegra,
sweeps old checkpoints and runs (`graph.server.retention`).
"""

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from graph.memory.kinds import configured_kinds
from graph.server import memory_api
from graph.server.executor import use_node_threads
from graph.server.guard import ServerGuard
from graph.server.platform import served_kinds, server_info
from graph.server.retention import retention_sweep
from graph.server.startup import checked_at_start

# A MAISTRO_MEMORY_KINDS the server cannot load stops it here, before langgraph-api loads the graph.
checked_at_start(configured_kinds)

STATIC = Path(__file__).with_name("static")
# The page loads only its own files and talks only to its own server; no other site may frame it.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


async def info(request: Request) -> JSONResponse:
    """The server's `/info`, whose `crons` flag says whether the server runs crons (its own scheduler's setting)."""
    served = await server_info(request)
    served.setdefault("flags", {})["crons"] = bool(served.get("flags", {}).get("crons", True))
    return JSONResponse(served)


async def memory_page(request: Request) -> FileResponse:
    """The memory page itself; it signs in and loads the memories from the browser."""
    return FileResponse(STATIC / "memories.html", headers=PAGE_HEADERS)


async def memory_page_slash(request: Request) -> RedirectResponse:
    """`/memories/` → `/memories`, relative, so that the page's relative links work under any mount prefix."""
    return RedirectResponse("../memories")


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """What runs beside the server: sync nodes on MAISTRO_NODE_THREADS threads, and the retention sweep. The
    graph is built first (`graph.agent.server_graph`), so a setting it cannot use stops the start with one sentence."""
    checked_at_start(served_kinds)
    use_node_threads(asyncio.get_running_loop())
    async with retention_sweep():
        yield


# FastAPI (a Starlette app with OpenAPI) because Aegra mounts only FastAPI apps; langgraph-api takes either.
app = FastAPI(
    openapi_url=None,
    docs_url=None,
    redoc_url=None,
    routes=[
        Route("/info", info, methods=["GET"]),
        Route("/memories", memory_page, methods=["GET"]),
        Route("/memories/", memory_page_slash, methods=["GET"]),
        Mount("/memories/static", StaticFiles(directory=STATIC), name="memory-page-files"),
        *memory_api.routes,
    ],
    # Both servers apply the custom app's middleware to every route they answer, their own included.
    middleware=[Middleware(ServerGuard)],
    # Both servers run the custom app's lifespan inside their own, on the loop that runs the graph.
    lifespan=lifespan,
)
