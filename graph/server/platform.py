"""Where the two API servers the project runs on differ: langgraph-api (`langgraph dev`, LangGraph Platform) and
Aegra (`aegra serve`). Everything else in `graph.server` is written once and asks this module.

- The server: Aegra's package is `aegra_api`, imported before it loads `langgraph.json`'s files; langgraph-api
  otherwise.
- Headers: langgraph-api hands the auth handler the ASGI headers (`{b"name": b"value"}`); Aegra calls it with
  `{"name": "value"}`; the guard reads the raw ASGI list of pairs and the memory page Starlette's `Headers`, which
  keep a repeated header. `header_values` reads each.
- Store requests: langgraph-api names the namespace (or prefix) `namespace` in every action and reads the handler's
  changes from the request it passed; Aegra names a search's prefix `namespace_prefix` and list_namespaces'
  `prefix`, and takes changes only from a returned dict (`store_request_namespace`, `store_rule_result`). Aegra also
  files every SDK namespace under `("users", identity, ...)` unless `store.scopes` in aegra.json names its first
  label: aegra.json maps each memory kind to the `user_label` the auth handler returns, so that the SDK reaches
  exactly the namespaces the graph writes.
- Run requests: langgraph-api passes the run's input under `kwargs`; Aegra passes the request body itself.
- Reminders the agent makes (`create_reminder`): inside a run, langgraph-api's client reaches the server through
  `/noauth`, past the auth rules, and Aegra has no in-process route; so the cron is made with each server's own calls
  (langgraph-api's `Crons.put`, Aegra's cron routes) as the run's own user, and the same rules apply as to a client.
- The store, and `/info`: each server's own, from its own module; on Aegra (LangGraph's `AsyncPostgresStore`) the history
  is read with SQL (`graph.backends.history_postgres`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from graph.schedules import cron_end_time

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore

    from graph.memory.kinds import MemoryKind
    from graph.nodes.remind import ReminderRequest

AEGRA = "aegra"
LANGGRAPH_API = "langgraph-api"
# The store request field that holds the namespace, per action, where Aegra's name differs from "namespace".
AEGRA_NAMESPACE_FIELDS = {"search": "namespace_prefix", "list_namespaces": "prefix"}
# The unauthenticated health checks each server answers.
HEALTH_PATHS = {LANGGRAPH_API: ("/ok",), AEGRA: ("/health", "/ready", "/live")}


def server_kind() -> str:
    """Which API server this process runs in: `AEGRA` or `LANGGRAPH_API`."""
    return AEGRA if "aegra_api" in sys.modules else LANGGRAPH_API


def header_values(headers: Mapping | Iterable[tuple] | None, name: str) -> list[str]:
    """Every value of one request header (lower-case `name`), in order, from any form a server hands over: a dict
    of bytes (langgraph-api) or of text (Aegra), Starlette's `Headers`, or the ASGI list of (bytes, bytes) pairs."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers or ()
    values = []
    for key, value in pairs:
        key = key.decode("latin-1") if isinstance(key, bytes) else str(key)
        if key.lower() == name:
            values.append(value.decode(errors="replace") if isinstance(value, bytes) else str(value))
    return values


def store_request_namespace(action: str, value: dict) -> tuple[str, ...]:
    """The namespace (get/put/delete) or prefix (search/list_namespaces) a store request names."""
    field = AEGRA_NAMESPACE_FIELDS.get(action, "namespace") if server_kind() == AEGRA else "namespace"
    return tuple(value.get(field) or ())


def store_rule_result(action: str, value: dict, namespace: tuple[str, ...]) -> dict | None:
    """Make a store request use `namespace` (and a put the `value` the rules left in it): written into the
    request (langgraph-api) or returned (Aegra)."""
    if server_kind() == AEGRA:
        changes = {AEGRA_NAMESPACE_FIELDS.get(action, "namespace"): list(namespace)}
        return changes | ({"value": value["value"]} if action == "put" and "value" in value else {})
    value["namespace"] = namespace
    return None


def run_input(value: dict) -> Any:
    """The input of a run-creation request as the auth handler sees it."""
    if server_kind() == AEGRA:
        return value.get("input")
    return (value.get("kwargs") or {}).get("input")


def served_kinds() -> tuple[MemoryKind, ...]:
    """The memory kinds of the graph the server serves (`graph.agent.server_graph`, built on the first call)."""
    from graph.agent import server_graph
    from graph.runtime import runtime_of

    return runtime_of(server_graph()).kinds


async def server_store() -> BaseStore:
    """The server's own store: the one its graphs' runs get."""
    if server_kind() == AEGRA:
        from aegra_api.core.database import db_manager

        from graph.backends.history_postgres import read_langgraph_stores_through_sql

        read_langgraph_stores_through_sql()  # Aegra's store is LangGraph's AsyncPostgresStore: read the history by SQL
        return db_manager.get_store()
    from langgraph_api.store import get_store

    return await get_store()


async def server_info(request: Any) -> dict[str, Any]:
    """What the server's own `/info` answers."""
    if server_kind() == AEGRA:
        from aegra_api.core.health import info

        return (await info(request)).model_dump()
    import json

    from langgraph_api.api.meta import meta_info

    return json.loads((await meta_info(request)).body)


def reminder_input(request: ReminderRequest) -> dict[str, Any]:
    """The input each firing of a reminder's cron sends the agent: the reminder's message as the user's."""
    return {"messages": [{"role": "user", "content": request.message}]}


async def create_reminder(request: ReminderRequest) -> dict[str, Any]:
    """Make the cron of a reminder the agent was asked for, on the run's own thread, as the run's own user (the one
    the server put in the run's config), through the server's own cron calls, so that the auth rules
    (`graph.server.auth.own_crons`) apply as to a client; the cron as the server lists it, with an end time after
    the date when the schedule names one date a year (`graph.schedules.cron_end_time`). Raises what the server
    raises when it refuses (an HTTP exception with its sentence)."""
    from graph.names import AGENT_NAME

    configurable = request.config.get("configurable") or {}
    user = configurable.get("langgraph_auth_user")
    if server_kind() == AEGRA:
        return await _aegra_reminder(request, user, AGENT_NAME)
    from langgraph_api.utils import fetchone
    from langgraph_runtime.database import connect
    from langgraph_runtime.ops import Crons
    from langgraph_sdk import Auth

    permissions = list(configurable.get("langgraph_auth_permissions") or [])
    ctx = Auth.types.BaseAuthContext(user=user, permissions=permissions) if user is not None else None
    payload = {"assistant_id": AGENT_NAME, "input": reminder_input(request)}
    end_time = cron_end_time(request.schedule, request.timezone, datetime.now(UTC), aegra=False)
    async with connect() as conn:
        cron = await Crons.put(
            conn, payload=payload, schedule=request.schedule, thread_id=request.thread_id, metadata={},
            enabled=True, timezone=request.timezone, end_time=end_time, ctx=ctx,
        )
        return dict(await fetchone(cron))


async def _aegra_reminder(request: ReminderRequest, user: Any, assistant_id: str) -> dict[str, Any]:
    """`create_reminder` on Aegra: its thread-cron route made disabled (Aegra runs a new enabled cron at once), then
    enabled through its update route, both as the run's user."""
    from aegra_api.api.crons import create_cron_for_thread, update_cron
    from aegra_api.core.orm import get_session_maker
    from aegra_api.models.crons import CronCreate, CronUpdate
    from aegra_api.services.cron_service import CronService
    from aegra_api.services.langgraph_service import get_langgraph_service

    if user is None:
        raise PermissionError("The run has no user to own the reminder.")
    created = CronCreate(
        assistant_id=assistant_id, schedule=request.schedule, input=reminder_input(request), enabled=False,
        timezone=request.timezone, end_time=cron_end_time(request.schedule, request.timezone, datetime.now(UTC), aegra=True),
    )
    async with get_session_maker()() as session:
        service = CronService(session, get_langgraph_service())
        cron = await create_cron_for_thread(request.thread_id, created, user, service, session)
        enabled = await update_cron(cron.cron_id, CronUpdate(enabled=True), user, service)
        return enabled.model_dump(mode="json")
