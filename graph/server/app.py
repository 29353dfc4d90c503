"""The custom HTTP app `langgraph.json` mounts into the API server (`http.app`): routes of our own.

`/info` shadows the server's own: it tells clients (Agent Chat UI reads it) that crons are off while auth is
on, since the auth rules refuse them.
"""

import json

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from graph.server.auth import auth_enabled


async def info(request: Request) -> JSONResponse:
    """The server's `/info`, with the `crons` flag false while auth refuses crons."""
    from langgraph_api.api.meta import meta_info

    served = json.loads((await meta_info(request)).body)
    served.setdefault("flags", {})["crons"] = served.get("flags", {}).get("crons", True) and not auth_enabled()
    return JSONResponse(served)


app = Starlette(routes=[Route("/info", info, methods=["GET"])])
