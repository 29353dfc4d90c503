"""Durable defaults: one SQLite database in the user's data directory, or PostgreSQL when configured."""

import os
import sqlite3
import time
from pathlib import Path
from types import ModuleType

import platformdirs
from filelock import FileLock
from langgraph._internal._constants import CONFIG_KEY_DURABILITY
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore, IndexConfig
from langgraph.store.sqlite import SqliteStore

from graph.agent import create_builder
from graph.embeddings import index_config
from graph.expiry import store_ttl_config
from graph.model import ChatModelFactory, load_chat_model

APP_NAME = "task-maistro"
DATABASE_FILE = "maistro.sqlite"
BUSY_TIMEOUT_SECONDS = 30.0
POSTGRES_POOL_SIZE = 10
# Serialises table setup across processes starting at once on a fresh database.
POSTGRES_SETUP_LOCK = 0x6D61697374726F


def data_dir() -> Path:
    """Where memories and threads live: MAISTRO_DATA_DIR, else the platform's user data directory."""
    return Path(os.environ.get("MAISTRO_DATA_DIR") or platformdirs.user_data_dir(APP_NAME))


def sqlite_with_extensions() -> ModuleType:
    """A DB-API sqlite3 module that can load extensions (sqlite-vec, for the semantic index)."""
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3
    try:
        import pysqlite3.dbapi2
    except ImportError as error:
        raise RuntimeError(
            "This Python's sqlite3 cannot load extensions, which the SQLite semantic index needs: "
            "pip install 'task-maistro[semantic]' (pysqlite3-binary), or unset MAISTRO_EMBEDDINGS."
        ) from error
    return pysqlite3.dbapi2


def connect(path: Path, *, autocommit: bool, driver: ModuleType = sqlite3) -> sqlite3.Connection:
    """A connection shareable between threads, in WAL mode, that waits for other writers instead of failing."""
    conn = driver.connect(
        path,
        timeout=BUSY_TIMEOUT_SECONDS,
        check_same_thread=False,
        **({"isolation_level": None} if autocommit else {}),
    )
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def open_sqlite(
    directory: Path | None = None, index: IndexConfig | None = None
) -> tuple[SqliteSaver, SqliteStore]:
    """A checkpointer and a store on the same database file, their tables created (once, even across processes)."""
    directory = Path(directory or data_dir())
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / DATABASE_FILE
    checkpointer = SqliteSaver(connect(path, autocommit=False))
    driver = sqlite_with_extensions() if index else sqlite3
    store = SqliteStore(connect(path, autocommit=True, driver=driver), index=index, ttl=store_ttl_config())
    with FileLock(directory / f"{DATABASE_FILE}.setup.lock"):
        checkpointer.setup()
        store.setup()
    return checkpointer, store


def open_postgres(url: str, index: IndexConfig | None = None) -> tuple[BaseCheckpointSaver, BaseStore]:
    """`PostgresSaver` + `PostgresStore` sharing a connection pool, their tables created once across processes."""
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.store.postgres import PostgresStore
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    pool = ConnectionPool(
        url,
        min_size=1,
        max_size=POSTGRES_POOL_SIZE,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        open=True,
    )
    checkpointer, store = PostgresSaver(pool), PostgresStore(pool, index=index, ttl=store_ttl_config())
    with pool.connection() as conn:
        # Poll instead of blocking in pg_advisory_lock: a blocked statement holds a snapshot that the
        # migrations' CREATE INDEX CONCURRENTLY in the lock holder would wait for, a deadlock.
        lock = "SELECT pg_try_advisory_lock(%s) AS locked"
        while not conn.execute(lock, (POSTGRES_SETUP_LOCK,)).fetchone()["locked"]:
            time.sleep(0.05)
        try:
            checkpointer.setup()
            store.setup()
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (POSTGRES_SETUP_LOCK,))
    return checkpointer, store


def open_storage(
    data_dir: Path | str | None = None, database_url: str | None = None, embeddings: str | None = None
) -> tuple[BaseCheckpointSaver, BaseStore]:
    """PostgreSQL when a URL is given or MAISTRO_DATABASE_URL is set, else SQLite in the data directory.

    `embeddings` (default MAISTRO_EMBEDDINGS) turns on the store's semantic index; see graph.embeddings.
    """
    url = database_url or os.environ.get("MAISTRO_DATABASE_URL")
    index = index_config(embeddings)
    if url:
        return open_postgres(url, index)
    return open_sqlite(Path(data_dir) if data_dir else None, index)


def build_graph(
    data_dir: Path | str | None = None,
    *,
    database_url: str | None = None,
    embeddings: str | None = None,
    chat_model: ChatModelFactory = load_chat_model,
) -> CompiledStateGraph:
    """The agent compiled with durable persistence: threads and memories survive restarts.

    Runs default to LangGraph's "sync" durability: each step's checkpoint is on disk before the next step
    starts, so a crash never loses the routing step whose tool call ids key the memories written after it.
    """
    checkpointer, store = open_storage(data_dir, database_url, embeddings)
    store.start_ttl_sweeper()
    compiled = create_builder(chat_model).compile(checkpointer=checkpointer, store=store, name="task_maistro")
    return compiled.with_config(configurable={CONFIG_KEY_DURABILITY: "sync"})


def close_graph(graph: CompiledStateGraph) -> None:
    """Release what `build_graph` opened: the TTL sweeper and the database connections (or pool)."""
    graph.store.stop_ttl_sweeper()
    for owner in (graph.store, graph.checkpointer):
        owner.conn.close()
