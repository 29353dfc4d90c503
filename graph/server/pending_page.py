"""The memory page's pending changes: the updates of the caller that failed, listed, retried and dropped.

The page reads them with the memories (`graph.server.memory_page.read_memories`) and changes them through two routes of
`graph.server.memory_api`: `POST pending/{id}/retry` runs the retry (`graph.nodes.pending_retry`) with the
server's graph and the operator's model, and `DELETE pending/{id}` drops one. Both act only on a pending
change of the caller's own namespace, named by its whole id (a 404 otherwise), authenticated as every page
request is (a bearer token or `X-Api-Key` header, never a cookie, so another site cannot send them for the user).
"""

from typing import Any

from langgraph.store.base import BaseStore

from graph.backends.model import ModelUnavailableError, load_chat_model
from graph.memory.pending import PendingChange, drop_pending, pending_by_id
from graph.nodes.pending_retry import retry_pending
from graph.runtime import GraphRuntime
from graph.server.memory_page import PageError


def _named(store: BaseStore, user_id: str, pending_key: str) -> PendingChange:
    """The caller's pending change with this id; a 404 with one sentence when there is none."""
    found = pending_by_id(store, user_id, pending_key)
    if found is None:
        raise PageError(404, "There is no such pending change: it was retried or dropped already, or is not yours.")
    return found


def drop(store: BaseStore, user_id: str, pending_key: str) -> dict[str, Any]:
    """Drop one of the user's pending changes; returns it."""
    pending = _named(store, user_id, pending_key)
    drop_pending(store, user_id, pending)
    return pending.model_dump()


def retry(store: BaseStore, user_id: str, pending_key: str, graph_runtime: GraphRuntime) -> dict[str, Any]:
    """Retry one of the user's pending changes with the server's graph (`graph_runtime`): `{"failed", "notes"}`
    (`failed`: it failed again and is still pending, unless it was dropped meanwhile); a 502 with one sentence
    when the model endpoint kept failing."""
    pending = _named(store, user_id, pending_key)
    try:
        outcome = retry_pending(store, graph_runtime, load_chat_model, user_id, pending)
    except ModelUnavailableError:
        raise PageError(502, "The model endpoint kept failing; the change is still pending: try again later.") from None
    return {"failed": outcome.failed, "notes": outcome.notes}
