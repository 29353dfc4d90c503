"""PostgreSQL storage: `PostgresSaver` and `PostgresStore` sharing one connection pool."""

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langgraph.store.base import IndexConfig, TTLConfig

POOL_SIZE = 10
# Serialises table setup across processes starting at once on a fresh database.
SETUP_LOCK = 0x6D61697374726F


@contextmanager
def setup_lock(conn: Any) -> Iterator[None]:
    """Hold the lock that serialises table setup across processes on the connection `conn` (autocommit)."""
    # Poll instead of blocking in pg_advisory_lock: a blocked statement holds a snapshot that the
    # migrations' CREATE INDEX CONCURRENTLY in the lock holder would wait for, a deadlock.
    while not conn.execute("SELECT pg_try_advisory_lock(%s) AS locked", (SETUP_LOCK,)).fetchone()["locked"]:
        time.sleep(0.05)
    try:
        yield
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK,))


def open_postgres(url: str, index: IndexConfig | None, ttl: TTLConfig, *, checkpointer: bool = True):
    """A `PruningPostgresSaver` (None unless `checkpointer`) and an `AtomicPostgresStore` on one pool, their tables
    created, the checkpoints pruned (see `graph.backends.checkpoints`) and the ToDo change log installed (see
    `graph.backends.todo_changes`)."""
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    from graph.backends.atomic_postgres import AtomicPostgresStore
    from graph.backends.checkpoints_postgres import PruningPostgresSaver
    from graph.backends.todo_changes import install_postgres

    pool = ConnectionPool(
        url,
        min_size=1,
        max_size=POOL_SIZE,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        open=True,
    )
    try:
        saver = PruningPostgresSaver(pool) if checkpointer else None
        store = AtomicPostgresStore(pool, index=index, ttl=ttl)
        with pool.connection() as conn, setup_lock(conn):
            if saver is not None:
                saver.setup()
                saver.prune_all()
            store.setup()
            install_postgres(store)
    except BaseException:
        pool.close()  # a failed setup (an unreachable or too old server, no rights) leaves no connections open
        raise
    return saver, store
