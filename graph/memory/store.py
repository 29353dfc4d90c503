"""Where each memory lives in the LangGraph store, and complete (paged) reads of it."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import unquote

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore, Item

    from graph.memory.kinds import MemoryKind

HISTORY = "history"
# Each user's done log (`graph.memory.done_log`): finished documents moved out of their collection, under
# `(DONE_LOG, <user label>, <kind>)`, and its counts under `(DONE_LOG, <user label>)`.
DONE_LOG = "done_log"
# Namespaces the agent keeps its own bookkeeping in (`graph.memory.index_outage`'s markers), one per user like the
# memories. No memory kind may take their names, and no path a user writes through reaches them: the store API
# refuses them (`graph.server.auth`), imports refuse them and exports leave them out (`graph.memory.admin`), and the
# code that reads them trusts only where an item is filed, never what its value says.
UNINDEXED = "unindexed"
# The user's pending changes (`graph.memory.pending`): updates that failed, read and settled only through that module.
PENDING = "pending"
# Where each memory's source and the facts it replaced are kept (`graph.memory.provenance`): the agent's own too,
# written only with the change they record; an export carries the past facts in a section of their own.
SOURCES = "memory_sources"
PAST = "past_facts"
INTERNAL_NAMESPACES = (UNINDEXED, PENDING, SOURCES, PAST)
PAGE_SIZE = 200
# More items than one namespace holds: the limit that makes a search return the whole namespace.
WHOLE_NAMESPACE = 10_000_000
MAX_USER_ID_LENGTH = 256
# Control characters (C0, DEL, C1) and lone surrogates: refused in user ids and imported keys.
UNSTORABLE_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


class InvalidUserIdError(ValueError):
    """A user id that memories cannot be filed under: empty, too long, or holding control characters."""


def check_user_id(user_id: str) -> str:
    """The user id, if both stores can file memories under it; else `InvalidUserIdError` with one sentence.

    At most `MAX_USER_ID_LENGTH` characters (PostgreSQL indexes the namespace, and an index row has a size
    limit), and no control characters or lone surrogates (PostgreSQL text cannot hold NUL; UTF-8 has no
    surrogates).
    """
    if not isinstance(user_id, str) or not user_id:
        raise InvalidUserIdError("The user id is empty: memories need a user to belong to.")
    if len(user_id) > MAX_USER_ID_LENGTH:
        raise InvalidUserIdError(
            f"The user id is {len(user_id):,} characters long; user ids may have at most {MAX_USER_ID_LENGTH}."
        )
    if UNSTORABLE_CHARACTERS.search(user_id):
        raise InvalidUserIdError(
            "The user id contains a control character (such as NUL, a tab or a line break) or a lone surrogate; "
            "user ids may not."
        )
    return user_id


def user_label(user_id: str) -> str:
    """Encode a user id as a store namespace label; reversible, and unlike any other user's label.

    Labels may not contain '.', and the stores read '*' in a namespace prefix as a wildcard, so both are
    percent-encoded (with '%' itself): a user called '*' never matches another user's namespaces. Raises
    `InvalidUserIdError` for a user id that `check_user_id` refuses.
    """
    return check_user_id(user_id).replace("%", "%25").replace(".", "%2E").replace("*", "%2A")


def user_from_label(label: str) -> str:
    """Decode a namespace label made by `user_label` back to the user id."""
    return unquote(label)


def namespace(kind: MemoryKind | str, user_id: str) -> tuple[str, str]:
    """The namespace of one memory kind (or of the history, `HISTORY`) of one user."""
    return (kind if isinstance(kind, str) else kind.name, user_label(user_id))


def search_all(store: BaseStore, ns: tuple[str, ...]) -> list[Item]:
    """Every item in a namespace (and the namespaces under it), oldest first, read with one query.

    One query with a limit above any namespace's size, not pages: the stores order a page by `updated_at`
    alone, so OFFSET pages over items written together can repeat some items and skip others.
    """
    items = store.search(ns, limit=WHOLE_NAMESPACE)
    return sorted(items, key=lambda item: (item.created_at, item.key))


def read_kind(store: BaseStore, kind: MemoryKind, user_id: str) -> list[Item]:
    """The user's documents of one kind: a collection's every item, oldest first; a single document's one (or none)."""
    if kind.collection:
        return search_all(store, namespace(kind, user_id))
    item = store.get(namespace(kind, user_id), kind.key)
    return [item] if item else []


def read_text(store: BaseStore, kind: MemoryKind, user_id: str) -> str:
    """The text of a free-text kind ("" when none was written)."""
    items = read_kind(store, kind, user_id)
    return items[0].value.get("memory", "") if items else ""
