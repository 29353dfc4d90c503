"""One user's data as a whole: export and import their memories, find their threads, forget them."""

from collections.abc import Mapping
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore, Item, PutOp
from pydantic import BaseModel, ValidationError

from graph.memory.redaction import redact
from graph.memory.store import (
    HISTORY,
    INSTRUCTIONS,
    INSTRUCTIONS_KEY,
    PAGE_SIZE,
    PROFILE,
    PROFILE_KEY,
    TODO,
    namespace,
    search_all,
    user_label,
)
from schemas import HistoryEntry, Instructions, Profile, ToDo

EXPORT_FORMAT = "task-maistro memories v1"
MEMORY_KINDS = (PROFILE, TODO, INSTRUCTIONS)
SECTIONS = (*MEMORY_KINDS, HISTORY)

SCHEMAS: dict[str, type[BaseModel]] = {
    PROFILE: Profile,
    TODO: ToDo,
    INSTRUCTIONS: Instructions,
    HISTORY: HistoryEntry,
}
# Memories that are one document per user, under a fixed key.
SINGLE_KEYS = {PROFILE: PROFILE_KEY, INSTRUCTIONS: INSTRUCTIONS_KEY}


class InvalidExportError(ValueError):
    """The data given to `import_memories` is not a task-maistro memory export."""


def export_memories(store: BaseStore, user_id: str) -> dict[str, Any]:
    """All of the user's memories and their change history: for each section, store key → value, keys sorted."""
    exported: dict[str, Any] = {"format": EXPORT_FORMAT}
    for kind in SECTIONS:
        ns = namespace(kind, user_id)
        items = [item for item in search_all(store, ns) if item.namespace == ns]
        exported[kind] = {item.key: item.value for item in sorted(items, key=lambda item: item.key)}
    return exported


def _check_export(data: Any) -> dict[str, dict[str, Any]]:
    """The memories of an export, by kind, after checking every value against its schema."""
    if not isinstance(data, Mapping) or data.get("format") != EXPORT_FORMAT:
        raise InvalidExportError(f'not a task-maistro memory export (expected "format": "{EXPORT_FORMAT}")')
    unknown = set(data) - {"format", *SECTIONS}
    if unknown:
        raise InvalidExportError(f"unknown sections: {', '.join(sorted(unknown))}")
    memories: dict[str, dict[str, Any]] = {}
    for kind in SECTIONS:
        section = data.get(kind) or {}
        if not isinstance(section, Mapping):
            raise InvalidExportError(f'"{kind}" must map keys to values')
        if kind in SINGLE_KEYS and set(section) - {SINGLE_KEYS[kind]}:
            raise InvalidExportError(f'"{kind}" holds one document, under the key "{SINGLE_KEYS[kind]}"')
        for key, value in section.items():
            try:
                SCHEMAS[kind].model_validate(value)
            except ValidationError as error:
                raise InvalidExportError(f'"{kind}" item "{key}" is invalid: {error}') from error
        memories[kind] = dict(section)
    return memories


def import_memories(store: BaseStore, user_id: str, data: Any) -> dict[str, int]:
    """Write an export's memories and history to the user in one batch (same keys; other items stay).

    Secrets are redacted on the way in. Returns counts by section; raises `InvalidExportError`, before
    writing anything, when the data is not a valid export.
    """
    memories = _check_export(data)
    store.batch(
        [
            PutOp(namespace(kind, user_id), key, redact(value)[0], index=False if kind == HISTORY else None)
            for kind, section in memories.items()
            for key, value in section.items()
        ]
    )
    return {kind: len(section) for kind, section in memories.items()}


def user_items(store: BaseStore, user_id: str) -> list[Item]:
    """Every store item in any namespace of the user (`(kind, user, ...)`), whatever the kind."""
    namespaces: list[tuple[str, ...]] = []
    while True:
        page = store.list_namespaces(prefix=("*", user_label(user_id)), limit=PAGE_SIZE, offset=len(namespaces))
        namespaces.extend(page)
        if len(page) < PAGE_SIZE:
            break
    return [item for ns in namespaces for item in search_all(store, ns) if item.namespace == ns]


def user_threads(checkpointer: BaseCheckpointSaver, user_id: str) -> list[str]:
    """Ids of the threads run for the user (from the `user_id` LangGraph copies into checkpoint metadata), newest first."""
    threads: dict[str, None] = {}
    for checkpoint in checkpointer.list(None, filter={"user_id": user_id}):
        threads.setdefault(checkpoint.config["configurable"]["thread_id"], None)
    return list(threads)


def last_thread(checkpointer: BaseCheckpointSaver, user_id: str) -> str | None:
    """The id of the user's most recently written thread, or None when the user has none."""
    latest = next(iter(checkpointer.list(None, filter={"user_id": user_id}, limit=1)), None)
    return latest.config["configurable"]["thread_id"] if latest else None


def forget_user(store: BaseStore, checkpointer: BaseCheckpointSaver, user_id: str) -> tuple[int, int]:
    """Delete every memory and every thread of the user; returns (memories deleted, threads deleted)."""
    items = user_items(store, user_id)
    if items:
        store.batch([PutOp(item.namespace, item.key, None) for item in items])
    threads = user_threads(checkpointer, user_id)
    for thread_id in threads:
        checkpointer.delete_thread(thread_id)
    return len(items), len(threads)
