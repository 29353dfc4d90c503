"""PostgreSQL storage: `PostgresSaver` and `PostgresStore` sharing one connection pool."""

from langgraph.store.base import IndexConfig, TTLConfig

POOL_SIZE = 10


def open_postgres(url: str, index: IndexConfig | None, ttl: TTLConfig, *, checkpointer: bool = True):
    """A `PruningPostgresSaver` (None unless `checkpointer`) and an `AtomicPostgresStore` on one pool, their tables
    created, the checkpoints pruned (see `graph.backends.checkpoints`) and the ToDo change log installed (see
    `graph.backends.todo_changes`), all under the setup lock (`graph.backends.atomic_postgres.setup_lock`)."""
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    from graph.backends.atomic_postgres import AtomicPostgresStore, setup_lock
    from graph.backends.checkpoints_postgres import PruningPostgresSaver

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
            store.install_change_log()
    except BaseException:
        pool.close()  # a failed setup (an unreachable or too old server, no rights) leaves no connections open
        raise
    return saver, store
