"""Store API writes to the memories (`client.store.put_item` / `delete_item` on the API server) follow the rules
every change follows: the document must fit its memory's schema, secrets are redacted, and the change is
recorded in the user's history in the same batch, so it can be undone.

The auth handler's store rule (`graph.server.auth.own_memories`) calls `check_api_write` with the namespace it allows before the server
performs the request. It commits the change with its history entry through the server's own store
(`graph.memory.changes.commit_changes`, as the memory page does) and hands the request on with the document as
saved, so the server's own write that follows stores the same document again and records nothing. A request
that is sent again (a client's or the server's retry) finds the document as it left it: a change to nothing,
which records nothing, so each change is in the history exactly once. (Between the two writes, which follow
each other at once, another writer's change to the same document would be overwritten by the server's: the
same race as between any two store API writes.)
"""

import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langgraph.store.base import BaseStore
from starlette.concurrency import run_in_threadpool

from graph.memory.changes import ChangeContext, MemoryChange, commit_changes, document_problem
from graph.memory.document_puts import ttl_for
from graph.memory.kinds import MemoryKind, UnknownKindError, kind_named
from graph.memory.store import namespace, user_from_label

# What the history says a store API write came from.
API_MESSAGE = "Written through the store API"


def _unprocessable(detail: str) -> Exception:
    from langgraph_sdk.auth.exceptions import HTTPException

    return HTTPException(status_code=422, detail=detail)


def _commit(store: BaseStore, user_id: str, kind: MemoryKind, key: str, document: dict | None) -> dict | None:
    """Write `document` (None: delete) as the user's `kind` memory under `key` with its history entry; what is stored."""
    current = store.get(namespace(kind, user_id), key)
    before = current.value if current else None
    if before is None and document is None:
        return None
    action = "deleted" if document is None else "created" if before is None else "updated"
    context = ChangeContext(thread_id="", message=API_MESSAGE, seed=f"store-api/{uuid.uuid4()}")
    saved, _ = commit_changes(store, user_id, kind, [MemoryChange(action, key, before, document)], context)
    return saved[0].after if saved else before


async def check_api_write(
    action: str,
    request: dict[str, Any],
    allowed: tuple[str, ...],
    server_store: Callable[[], Awaitable[BaseStore]],
    kinds: Sequence[MemoryKind],
) -> None:
    """Check and record a store API `put` or `delete` of a memory document of one of `kinds` in the namespace
    `allowed` (`request`: the handler's payload; `server_store`: how to reach the server's own store, asked only
    for a memory write).

    A document that does not fit its schema, or a memory namespace other than `(kind, user label)`, is refused
    with HTTP 422 and one sentence; otherwise the change is committed with its history entry on the server's
    store, and `request["value"]` becomes the document as saved (secrets redacted).
    """
    ns = tuple(allowed)
    if action not in ("put", "delete") or not ns:
        return
    try:
        kind = kind_named(kinds, ns[0])
    except UnknownKindError:
        return  # not a memory: the history, or another namespace of the user's own
    if len(ns) != 2:
        raise _unprocessable(
            f"The {kind.label} was not saved: {kind.name} memories live in the namespace ({kind.name}, user) only."
        )
    key = request.get("key")
    document = request.get("value") if action == "put" else None
    if action == "put" and (problem := document_problem(kind, key, document)):
        raise _unprocessable(f"The {kind.label} was not saved: {problem}.")
    store = await server_store()
    saved = await run_in_threadpool(_commit, store, user_from_label(ns[1]), kind, key, document)
    if action == "put":
        request["value"] = saved
        if store.supports_ttl:
            request["ttl"] = ttl_for(kind, saved)
