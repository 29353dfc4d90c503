"""What a turn costs PostgreSQL: statements the client sends, and transactions the server counts.

Statements are counted in psycopg (`Cursor.execute`, and each parameter set of `executemany`, which is
one statement each on the server). Transactions come from the server's own statistics
(`pg_stat_database.xact_commit + xact_rollback` of the benchmark's database), read once the pool's
connections have closed so that every backend has flushed its counters.
"""

import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import Cursor


@contextmanager
def counting_statements() -> Iterator[list[int]]:
    """Count the statements psycopg sends inside the block (the count is the list's one element)."""
    count = [0]
    execute, executemany = Cursor.execute, Cursor.executemany

    def counted_execute(self, query, params=None, **options):
        count[0] += 1
        return execute(self, query, params, **options)

    def counted_executemany(self, query, params_seq, **options):
        params_seq = list(params_seq)
        count[0] += len(params_seq)
        return executemany(self, query, params_seq, **options)

    Cursor.execute, Cursor.executemany = counted_execute, counted_executemany
    try:
        yield count
    finally:
        Cursor.execute, Cursor.executemany = execute, executemany


def server_transactions(admin_url: str, database: str, timeout: float = 10.0) -> int:
    """Transactions the server counted in `database` so far, once no connection to it is left."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        deadline = time.monotonic() + timeout
        while conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (database,)).fetchone()[0]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"connections to {database} did not close")
            time.sleep(0.05)
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s", (database,)
        ).fetchone()
    return int(row[0])
