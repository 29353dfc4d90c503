"""Expiry of finished ToDos: done and archived items get a store TTL, open ones never expire."""

import os

from langgraph.store.base import TTLConfig

from graph.memory_store import TODO

CLOSED_STATUSES = ("done", "archived")
DEFAULT_CLOSED_TODO_TTL_DAYS = 30.0
MINUTES_PER_DAY = 24 * 60
DEFAULT_SWEEP_MINUTES = 5.0


def closed_todo_ttl_minutes() -> float | None:
    """How long a done or archived ToDo is kept (MAISTRO_DONE_TODO_TTL_DAYS; 0 keeps it forever)."""
    days = float(os.environ.get("MAISTRO_DONE_TODO_TTL_DAYS") or DEFAULT_CLOSED_TODO_TTL_DAYS)
    return days * MINUTES_PER_DAY if days > 0 else None


def ttl_for(kind: str, value: dict | None) -> float | None:
    """The TTL in minutes to store a memory document with: only closed ToDos expire."""
    if kind == TODO and value and value.get("status") in CLOSED_STATUSES:
        return closed_todo_ttl_minutes()
    return None


def store_ttl_config() -> TTLConfig:
    """The stores' TTL settings: how often expired items are swept (MAISTRO_TTL_SWEEP_MINUTES), and hide them until then."""
    minutes = float(os.environ.get("MAISTRO_TTL_SWEEP_MINUTES") or DEFAULT_SWEEP_MINUTES)
    return {"sweep_interval_minutes": minutes, "omit_expired": True, "refresh_on_read": False}
