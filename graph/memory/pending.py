"""Pending changes: the updates that failed, kept in the user's own namespace until the user retries or drops them.

An update that saved less than it was asked (the model's output was unusable, the change was refused, another
writer kept changing the memory) leaves a pending change (`PendingChange`): which memory, the thread, the
user's message as the history keeps it (redacted, bounded), what was proposed if anything (redacted), the
problem, and when. Each is one store item, written in one put, under an id derived from the update's
replay-stable seed (a replayed update finds the same one); a retry that saves removes it in the batch that
saves (`settle_op`), so it happens once.

The namespace is one the agent keeps for itself (`graph.memory.store.PENDING`, in `INTERNAL_NAMESPACES`):
no store-API request may read or write it, whoever sends it, so only this module's readers reach it, each for
one user; exports leave it out (a pending change is a retry waiting against this store's memories, not a
memory), and forgetting a user deletes it with everything else of theirs.
"""

import uuid
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import BaseStore, GetOp, PutOp
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from graph.memory.conditions import Unchanged
from graph.memory.redaction import redact
from graph.memory.store import PENDING, namespace, search_all

PENDING_NAMESPACE = uuid.UUID("6d1c7a52-0f3e-4f7b-9a57-3c2b8e41d9a0")
# The fewest characters of an id that name a pending change (as for a change id: `maistro undo`).
MIN_PENDING_PREFIX = 4


class PendingChange(BaseModel):
    """An update that failed, kept until the user retries or drops it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    id: str = Field(min_length=1, description="The pending change's id (the same on a replay of its update).")
    time: str = Field(description="When the update failed, ISO 8601 with a UTC offset.")
    kind: str = Field(min_length=1, description="The memory the update was for (its kind's name).")
    thread_id: str = Field(description="The thread whose turn asked for the update.")
    message: str = Field(description="The user's message that asked for it, secrets redacted, bounded.")
    problem: str = Field(min_length=1, description="Why nothing was saved, in a few words.")
    proposal: Any = Field(None, description="What the update proposed, secrets redacted (None: nothing usable).")


class UnknownPendingError(LookupError):
    """No pending change of the user has that id, or more than one starts with it (`AmbiguousPendingError`)."""


class AmbiguousPendingError(UnknownPendingError):
    """More than one pending change of the user starts with the characters given."""


def pending_id(seed: str, kind: str) -> str:
    """The id of the pending change an update of `kind` under `seed` leaves: the same on every replay."""
    return str(uuid.uuid5(PENDING_NAMESPACE, f"{seed}/{kind}"))


def keep_pending(
    store: BaseStore, user_id: str, kind: str, *, seed: str, thread_id: str, message: str, problem: str, proposal: Any
) -> PendingChange:
    """Keep a failed update of the user's `kind` memory as a pending change, in one put; returns it."""
    pending = PendingChange(
        id=pending_id(seed, kind),
        time=datetime.now(timezone.utc).isoformat(),
        kind=kind,
        thread_id=thread_id,
        message=message,
        problem=problem,
        proposal=redact(proposal)[0],
    )
    store.batch([PutOp(namespace(PENDING, user_id), pending.id, pending.model_dump(), index=False)])
    return pending


def _readable(value: Any) -> PendingChange | None:
    try:
        return PendingChange.model_validate(value)
    except ValidationError:
        return None


def list_pending(store: BaseStore, user_id: str) -> list[PendingChange]:
    """The user's pending changes, oldest first (a stored value that is not one is left out, not deleted)."""
    found = [_readable(item.value) for item in search_all(store, namespace(PENDING, user_id))]
    return sorted((pending for pending in found if pending is not None), key=lambda pending: (pending.time, pending.id))


def pending_by_id(store: BaseStore, user_id: str, pending_key: str) -> PendingChange | None:
    """The user's pending change with exactly this id, or None."""
    (item,) = store.batch([GetOp(namespace(PENDING, user_id), pending_key)]) if pending_key else (None,)
    return _readable(item.value) if item is not None else None


def pending_change(store: BaseStore, user_id: str, given: str) -> PendingChange:
    """The user's pending change whose id is `given`, or else the only one whose id starts with it (at least
    `MIN_PENDING_PREFIX` characters); `UnknownPendingError` or `AmbiguousPendingError` otherwise."""
    if found := pending_by_id(store, user_id, given):
        return found
    matches = [pending for pending in list_pending(store, user_id) if pending.id.startswith(given)]
    if len(given) < MIN_PENDING_PREFIX or not matches:
        raise UnknownPendingError(f"no pending change of {user_id} has the id {given!r}")
    if len(matches) > 1:
        raise AmbiguousPendingError(f"more than one pending change of {user_id} starts with {given!r}")
    return matches[0]


def settle_op(user_id: str, pending: PendingChange) -> tuple[Unchanged, PutOp]:
    """The condition and the delete that settle `pending` in the batch that saves its retry: the batch writes only
    if the pending change is still there as it was read (two retries, or a retry and a drop, cannot both win)."""
    ns = namespace(PENDING, user_id)
    return Unchanged(ns, pending.id, pending.model_dump()), PutOp(ns, pending.id, None)


def drop_pending(store: BaseStore, user_id: str, pending: PendingChange) -> None:
    """Remove a pending change of the user (it is not retried)."""
    store.batch([PutOp(namespace(PENDING, user_id), pending.id, None)])
