"""The memory page's JSON endpoints (`/memories/api/...`), served by the API server through `http.app`.

Custom routes are outside the server's auth handler, so these authenticate each request themselves with the
auth handler's own rules (`graph.server.auth.authenticate`): with tokens configured, the user is the one the
token (`Authorization: Bearer` or `X-Api-Key`) stands for, and a request without a valid token gets 401;
whatever user id a request names is ignored. On an open server (no tokens) the page names the user in the
`user_id` query parameter (default: MAISTRO_DEFAULT_USER). Either way every read and write stays in that
user's namespaces (`graph.memory.store.namespace`), request bodies and stored values are bounded like the
store API's, and the work runs on the server's own store in a worker thread (`graph.server.memory_page`).

The same routes serve every declared memory kind (MAISTRO_MEMORY_KINDS): `GET memories` (everything the page
shows), `GET search?query=` (every searchable kind), `POST kinds/{kind}/documents` (add to a collection),
`PUT` / `PATCH` / `DELETE kinds/{kind}/documents/{key}` (replace, change some fields, delete; a body's `base`
is the document as the page showed it, and a stale one is a 409), `POST history/{id}/undo`, and for the
updates that failed `POST pending/{id}/retry` and `DELETE pending/{id}` (`graph.server.pending_page`).
"""

import json
from collections.abc import Awaitable, Callable
from typing import Any

from langgraph.store.base import BaseStore
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from graph.memory.done_log import move_finished
from graph.memory.store import InvalidUserIdError, check_user_id
from graph.server import pending_page
from graph.server.auth import auth_enabled, authenticate
from graph.server.limits import MAX_SEARCH_LIMIT, MAX_STORE_VALUE_BYTES
from graph.server.memory_page import (
    HISTORY_SHOWN,
    NO_BASE,
    PageError,
    add_document,
    delete_document,
    edit_document,
    memories_version,
    page_kind,
    read_memories,
    save_document,
    search_memories,
    undo,
)
from graph.server.platform import served_kinds, server_store
from graph.settings import current_settings

# A request body holds a document and the version it was edited from: room for two store values.
MAX_BODY_BYTES = 2 * MAX_STORE_VALUE_BYTES + 1024
MAX_QUERY_CHARACTERS = 500
MAX_HISTORY_SHOWN = 1000
PRIVATE = {"Cache-Control": "no-store"}
Work = Callable[[BaseStore, str, Request, dict[str, Any]], Any]


async def caller(request: Request) -> str:
    """The user a request acts for: the token's user when auth is on (401 otherwise), else the `user_id` it names."""
    from langgraph_sdk.auth.exceptions import HTTPException

    try:
        user_id = (await authenticate(request.headers))["identity"]
    except HTTPException as error:
        raise PageError(error.status_code, f"{error.detail}.", dict(error.headers or {})) from None
    if not auth_enabled():
        user_id = request.query_params.get("user_id", "").strip() or current_settings().default_user
    try:
        return check_user_id(user_id)
    except InvalidUserIdError as error:
        raise PageError(400, str(error)) from None


async def json_body(request: Request, optional: bool = False) -> dict[str, Any]:
    """The request's JSON object, read no further than `MAX_BODY_BYTES` (413 beyond); `optional`: an empty body
    is `{}`."""
    too_large = PageError(413, f"The request is larger than {MAX_BODY_BYTES:,} bytes.")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise too_large
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise too_large
    if optional and not body.strip():
        return {}
    try:
        payload = json.loads(body)
    except ValueError:
        raise PageError(400, "The request body is not JSON.") from None
    if not isinstance(payload, dict):
        raise PageError(400, 'The request body must be a JSON object such as {"value": {...}}.')
    return payload


def _number(request: Request, name: str, default: int, highest: int) -> int:
    try:
        return min(max(int(request.query_params.get(name, default)), 1), highest)
    except ValueError:
        raise PageError(400, f"`{name}` must be a whole number.") from None


def endpoint(work: Work) -> Callable[[Request], Awaitable[Response]]:
    """A route handler: find the caller, read the body, run `work(store, user_id, request, body)` in a thread."""

    async def handle(request: Request) -> Response:
        try:
            user_id = await caller(request)
            body = await json_body(request, optional=request.method in ("POST", "DELETE")) if request.method != "GET" else {}
            result = await run_in_threadpool(work, await server_store(), user_id, request, body)
        except PageError as error:
            return JSONResponse({"detail": error.detail}, error.status, headers={**PRIVATE, **error.headers})
        if isinstance(result, Response):
            return result
        return JSONResponse(result, headers=PRIVATE)

    return handle


def _memories(store: BaseStore, user_id: str, request: Request, body: dict[str, Any]) -> Response:
    """Everything the page shows, with an ETag: a poll that finds nothing new gets 304 from a cheap version check
    (`memories_version`), before anything else is read but the done ToDos due to move to the done log, which move
    first (`move_finished`): the page shows the active list."""
    shown = _number(request, "history", HISTORY_SHOWN, MAX_HISTORY_SHOWN)
    kinds = served_kinds()
    move_finished(store, user_id, kinds)
    tag = memories_version(store, user_id, kinds, shown)
    if request.headers.get("if-none-match") == tag:
        return Response(status_code=304, headers={**PRIVATE, "ETag": tag})
    content = json.dumps(read_memories(store, user_id, kinds, shown), ensure_ascii=False).encode()
    return Response(content, media_type="application/json", headers={**PRIVATE, "ETag": tag})


def _search(store: BaseStore, user_id: str, request: Request, body: dict[str, Any]) -> dict[str, Any]:
    query = request.query_params.get("query", "").strip()
    if not query:
        raise PageError(400, "Type something to search for.")
    if len(query) > MAX_QUERY_CHARACTERS:
        raise PageError(400, f"The search is {len(query):,} characters long; at most {MAX_QUERY_CHARACTERS} are allowed.")
    return search_memories(store, user_id, served_kinds(), query, _number(request, "limit", 10, MAX_SEARCH_LIMIT))


def _add(store: BaseStore, user_id: str, request: Request, body: dict[str, Any]) -> dict[str, Any]:
    return add_document(store, user_id, page_kind(served_kinds(), request.path_params["kind"]), body.get("value"))


def _document(store: BaseStore, user_id: str, request: Request, body: dict[str, Any]) -> dict[str, Any]:
    kind, key = page_kind(served_kinds(), request.path_params["kind"]), request.path_params["key"]
    base = body.get("base") if "base" in body else NO_BASE
    if request.method == "DELETE":
        return delete_document(store, user_id, kind, key, base)
    write = save_document if request.method == "PUT" else edit_document
    return write(store, user_id, kind, key, body.get("value"), base)


def _undo(store: BaseStore, user_id: str, request: Request, body: dict[str, Any]) -> dict[str, Any]:
    return undo(store, user_id, request.path_params["change_id"], served_kinds())


def _retry(store: BaseStore, user_id: str, request: Request, body: dict[str, Any]) -> dict[str, Any]:
    from graph.agent import server_graph
    from graph.runtime import runtime_of

    return pending_page.retry(store, user_id, request.path_params["pending_id"], runtime_of(server_graph()))


def _drop(store: BaseStore, user_id: str, request: Request, body: dict[str, Any]) -> dict[str, Any]:
    return pending_page.drop(store, user_id, request.path_params["pending_id"])


async def session(request: Request) -> JSONResponse:
    """How to sign in: with a token when auth is on, else by naming a user (the default user is given)."""
    if auth_enabled():
        return JSONResponse({"auth": True}, headers=PRIVATE)
    return JSONResponse({"auth": False, "default_user": current_settings().default_user}, headers=PRIVATE)


routes = [
    Route("/memories/api/session", session, methods=["GET"]),
    Route("/memories/api/memories", endpoint(_memories), methods=["GET"]),
    Route("/memories/api/search", endpoint(_search), methods=["GET"]),
    Route("/memories/api/kinds/{kind}/documents", endpoint(_add), methods=["POST"]),
    Route("/memories/api/kinds/{kind}/documents/{key}", endpoint(_document), methods=["PUT", "PATCH", "DELETE"]),
    Route("/memories/api/history/{change_id}/undo", endpoint(_undo), methods=["POST"]),
    Route("/memories/api/pending/{pending_id}/retry", endpoint(_retry), methods=["POST"]),
    Route("/memories/api/pending/{pending_id}", endpoint(_drop), methods=["DELETE"]),
]
