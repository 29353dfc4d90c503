"""SQLite storage: one database file holds the checkpointer's threads and the store's memories."""

import sqlite3
from pathlib import Path
from types import ModuleType

from filelock import FileLock
from langgraph.store.base import IndexConfig, TTLConfig

from graph.backends.atomic import AtomicSqliteStore

DATABASE_FILE = "maistro.sqlite"
BUSY_TIMEOUT_SECONDS = 30.0
WAL_PAGES = 128


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
    """A connection shareable between threads, in WAL mode, that waits for other writers instead of failing, and
    that overwrites what it deletes and deletes a memory's embeddings with it (`secure_delete`, `foreign_keys`);
    raises `RuntimeError` when the SQLite build cannot do either."""
    conn = driver.connect(
        path,
        timeout=BUSY_TIMEOUT_SECONDS,
        check_same_thread=False,
        **({"isolation_level": None} if autocommit else {}),
    )
    # Deleted rows are overwritten with zeros, in their pages and in the pages they free, whatever the build's
    # default (Debian's sqlite3 has it on, pysqlite3-binary off); and LangGraph's `store_vectors` rows go with
    # their `store` row (ON DELETE CASCADE acts only with foreign keys on).
    for pragma in ("secure_delete", "foreign_keys"):
        conn.execute(f"PRAGMA {pragma}=ON")
        if (conn.execute(f"PRAGMA {pragma}").fetchone() or (0,))[0] != 1:  # a build without it answers nothing
            conn.close()
            raise RuntimeError(f"This SQLite build cannot turn {pragma} on, which forgetting a user needs.")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    # Keep the write-ahead log small: checkpoint it every WAL_PAGES pages and truncate it afterwards.
    conn.execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
    conn.execute(f"PRAGMA journal_size_limit={WAL_PAGES * 4096}")
    return conn


def open_sqlite(directory: Path, index: IndexConfig | None, ttl: TTLConfig, *, checkpointer: bool = True):
    """A `PruningSqliteSaver` (None unless `checkpointer`) and an `AtomicSqliteStore` on `directory`'s database file,
    both through one SQLite library (pysqlite3 when the semantic index needs it and the standard library's cannot).

    Their tables are created once, even when several processes open a fresh database at the same time, the
    checkpoints are pruned (see `graph.backends.checkpoints`), the ToDo change log is installed (see
    `graph.backends.collection_changes`), and embeddings whose memory is gone are deleted
    (`AtomicSqliteStore.drop_orphan_embeddings`).
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / DATABASE_FILE
    driver = sqlite_with_extensions() if index else sqlite3
    store = AtomicSqliteStore(connect(path, autocommit=True, driver=driver), index=index, ttl=ttl)
    saver = None
    if checkpointer:
        from graph.backends.checkpoints import PruningSqliteSaver

        # The store's library: two copies of SQLite in one process do not see each other's locks, so two writers
        # could commit at once and one commit be lost (tests/storage/test_forget.py shows the locks held).
        saver = PruningSqliteSaver(connect(path, autocommit=False, driver=driver))
    with FileLock(directory / f"{DATABASE_FILE}.setup.lock"):
        if saver is not None:
            saver.setup()
            saver.prune_all()
        store.setup()
        store.install_change_log()
        store.drop_orphan_embeddings()
    return saver, store
