"""Durable defaults: one SQLite database in the user's data directory for threads and memories."""

import os
import sqlite3
from pathlib import Path

import platformdirs
from filelock import FileLock
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.sqlite import SqliteStore

from graph.agent import create_builder
from graph.model import ChatModelFactory, load_chat_model

APP_NAME = "task-maistro"
DATABASE_FILE = "maistro.sqlite"
BUSY_TIMEOUT_SECONDS = 30.0


def data_dir() -> Path:
    """Where memories and threads live: MAISTRO_DATA_DIR, else the platform's user data directory."""
    return Path(os.environ.get("MAISTRO_DATA_DIR") or platformdirs.user_data_dir(APP_NAME))


def connect(path: Path, *, autocommit: bool) -> sqlite3.Connection:
    """A connection shareable between threads, in WAL mode, that waits for other writers instead of failing."""
    conn = sqlite3.connect(
        path,
        timeout=BUSY_TIMEOUT_SECONDS,
        check_same_thread=False,
        **({"isolation_level": None} if autocommit else {}),
    )
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def open_sqlite(directory: Path | None = None) -> tuple[SqliteSaver, SqliteStore]:
    """A checkpointer and a store on the same database file, their tables created (once, even across processes)."""
    directory = Path(directory or data_dir())
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / DATABASE_FILE
    checkpointer = SqliteSaver(connect(path, autocommit=False))
    store = SqliteStore(connect(path, autocommit=True))
    with FileLock(directory / f"{DATABASE_FILE}.setup.lock"):
        checkpointer.setup()
        store.setup()
    return checkpointer, store


def build_graph(
    data_dir: Path | str | None = None, *, chat_model: ChatModelFactory = load_chat_model
) -> CompiledStateGraph:
    """The agent compiled with SQLite persistence: threads and memories survive restarts."""
    checkpointer, store = open_sqlite(Path(data_dir) if data_dir else None)
    return create_builder(chat_model).compile(checkpointer=checkpointer, store=store, name="task_maistro")
