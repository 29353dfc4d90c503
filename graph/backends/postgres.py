"""PostgreSQL storage: `PostgresSaver` and `PostgresStore` sharing one connection pool."""

from langgraph.store.base import IndexConfig, TTLConfig

POOL_SIZE = 10
# The approximate-nearest-neighbour index LangGraph's store builds on `store_vectors` by default (HNSW). Per-user
# search never uses it: it reads the user's rows by namespace prefix and sorts them exactly (`python -m
# bench.vector_index`), so the store is built with exact search and an index left by an earlier version is dropped.
VECTOR_INDEX = "store_vectors_embedding_idx"
EXACT_SEARCH = {"kind": "flat"}


def open_postgres(url: str, index: IndexConfig | None, ttl: TTLConfig, *, checkpointer: bool = True):
    """A `PruningPostgresSaver` (None unless `checkpointer`) and an `AtomicPostgresStore` on one pool, their tables
    created, the checkpoints pruned (see `graph.backends.checkpoints`) and the ToDo change log installed (see
    `graph.backends.collection_changes`), all under the setup lock (`graph.backends.atomic_postgres.setup_lock`). A
    semantic index searches exactly, without the unused HNSW index (`VECTOR_INDEX`), unless `index` names one."""
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
    if index is not None:
        index = {**index, "ann_index_config": index.get("ann_index_config", EXACT_SEARCH)}
    try:
        saver = PruningPostgresSaver(pool) if checkpointer else None
        store = AtomicPostgresStore(pool, index=index, ttl=ttl)
        with pool.connection() as conn, setup_lock(conn):
            if saver is not None:
                saver.setup()
                saver.prune_all()
            store.setup()
            if index is not None and index["ann_index_config"] == EXACT_SEARCH:
                conn.execute(f"DROP INDEX IF EXISTS {VECTOR_INDEX}")
            store.install_change_log()
    except BaseException:
        pool.close()  # a failed setup (an unreachable or too old server, no rights) leaves no connections open
        raise
    return saver, store
