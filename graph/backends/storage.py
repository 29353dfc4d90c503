"""Where threads and memories live: SQLite in the user's data directory, or PostgreSQL when configured."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs
from langgraph.store.base import BaseStore, TTLConfig

from graph.settings import current_settings

if TYPE_CHECKING:  # a type only: importing it loads langchain_core's runnables, which a memory table does not need
    from langgraph.checkpoint.base import BaseCheckpointSaver

APP_NAME = "task-maistro"


def default_data_dir() -> Path:
    """Where memories and threads live: MAISTRO_DATA_DIR, else the platform's user data directory."""
    return current_settings().data_dir or Path(platformdirs.user_data_dir(APP_NAME))


def store_ttl_config() -> TTLConfig:
    """The stores' TTL settings: sweep expired items every MAISTRO_TTL_SWEEP_MINUTES, and hide them until then."""
    return {"sweep_interval_minutes": current_settings().ttl_sweep_minutes, "omit_expired": True, "refresh_on_read": False}


def open_storage(
    data_dir: Path | str | None = None,
    database_url: str | None = None,
    embeddings: str | None = None,
    *,
    checkpointer: bool = True,
) -> tuple[BaseCheckpointSaver | None, BaseStore]:
    """A checkpointer (None unless `checkpointer`) and a store, tables created; release them with `close_storage`.

    PostgreSQL at `database_url` (default MAISTRO_DATABASE_URL; "" for none), else SQLite in `data_dir` (default
    `default_data_dir()`). `embeddings` (default MAISTRO_EMBEDDINGS; "" for none) turns on the store's semantic index.
    """
    settings = current_settings()
    url = settings.database_url if database_url is None else database_url
    choice = settings.embeddings if embeddings is None else embeddings
    index = None
    if choice:
        from graph.backends.embeddings import index_config

        index = index_config(choice)
    if url:
        from graph.backends.postgres import open_postgres

        return open_postgres(url, index, store_ttl_config(), checkpointer=checkpointer)
    from graph.backends.sqlite import open_sqlite

    directory = Path(data_dir) if data_dir else default_data_dir()
    return open_sqlite(directory, index, store_ttl_config(), checkpointer=checkpointer)


def close_storage(checkpointer: BaseCheckpointSaver | None, store: BaseStore) -> None:
    """Close the connections (or the shared pool) that `open_storage` opened."""
    for owner in (store, checkpointer):
        if owner is not None:
            owner.conn.close()


@contextmanager
def open_store(
    data_dir: Path | str | None = None, database_url: str | None = None, embeddings: str | None = None
) -> Iterator[BaseStore]:
    """The memory store alone, for reading and editing memories: no checkpointer, no TTL sweeper, no model."""
    _, store = open_storage(data_dir, database_url, embeddings, checkpointer=False)
    try:
        yield store
    finally:
        close_storage(None, store)
