"""Retention on Aegra: every thread keeps its last MAISTRO_KEEP_TURNS turns of checkpoints and runs, no more.

Aegra gives the graph LangGraph's own `AsyncPostgresSaver`, which keeps every checkpoint of every step, and keeps
every run's row (its input, config and output) until the thread is deleted; its `checkpointer.ttl` strategies
either delete whole threads or cut one to its latest checkpoint. A turn of this agent leaves about 30 kB of
checkpoints and 4 kB of run row, so a user's year would grow without bound.

`retention_sweep()` runs beside the server (the custom app's lifespan, `graph.server.app`): every
MAISTRO_TTL_SWEEP_MINUTES it takes the threads that ran since its last sweep (all of them on the first), and in
batches, on the server's own connection pool,

- cuts each thread's checkpoints as the project's PostgreSQL saver does (`graph.backends.checkpoints_postgres`:
  the last MAISTRO_KEEP_TURNS turns kept whole, a branch's latest checkpoint never deleted, one statement per
  batch), so time travel works on the kept turns as in Python use;
- deletes each thread's finished runs (success, error, timeout, interrupted) but its newest MAISTRO_KEEP_TURNS;
  pending and running ones are never touched;
- at most once per `PRUNE_INTERVAL_SECONDS` (the first sweep included), prunes every user's history to what
  MAISTRO_HISTORY_KEEP keeps, with the statement the project's PostgreSQL store runs
  (`graph.backends.history_postgres.PRUNE`), counting what it deleted so that an undo can say why a change is gone.

Before the server takes requests it gives Aegra's database the history's index and its table of pruned counts
(`history_postgres.MIGRATION`, under the project's setup lock), which the memory page's history reads use there.

At start-up it also drops the HNSW index LangGraph's store builds on `store_vectors` (`store_vectors_embedding_idx`,
about 2 kB per ToDo): per-user search never uses it, since it reads the user's rows by namespace prefix and sorts
them exactly (`python -m bench.vector_index` shows the plan). Once dropped the store's migrations do not build it
again (they are recorded as applied). `ann_index_config: {"kind": "flat"}` in aegra.json would say the same, but
the async store's setup refuses that kind (langgraph-checkpoint-postgres 3.2).

Several instances may sweep at once: both statements are idempotent. On `langgraph dev` nothing runs (its runtime
keeps its data in memory). Aegra's `runs` table is Aegra's schema, not LangGraph's: tests/server/test_retention.py
runs the sweep against a real Aegra so that a change there fails a test.
"""

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from datetime import datetime, timedelta
from typing import Any

from graph.backends.history_sql import NO_AGE_LIMIT, NO_COUNT_LIMIT, PRUNE_INTERVAL_SECONDS, retention_bounds
from graph.backends.postgres import VECTOR_INDEX
from graph.settings import current_settings

logger = logging.getLogger(__name__)

THREADS_PER_BATCH = 200
# A run inserted by a transaction that began before a sweep started commits after it: the next sweep looks back.
LOOK_BACK = timedelta(minutes=1)
FINISHED_RUNS = ("success", "error", "timeout", "interrupted")
_THREADS_RUN_SINCE = "SELECT DISTINCT thread_id FROM runs WHERE %(since)s::timestamptz IS NULL OR created_at >= %(since)s"
_PRUNE_RUNS = """
DELETE FROM runs r USING (
    SELECT run_id, row_number() OVER (PARTITION BY thread_id ORDER BY created_at DESC, run_id DESC) AS newest
    FROM runs WHERE thread_id = ANY(%(threads)s) AND status = ANY(%(finished)s)
) old
WHERE r.run_id = old.run_id AND old.newest > %(keep)s
"""


async def sweep(pool: Any, since: datetime | None, keep: int) -> datetime:
    """Prune the threads that ran since `since` (every thread for None) to their last `keep` turns of checkpoints
    and runs; return the database's time at the start, the `since` of the next sweep."""
    from graph.backends.checkpoints_postgres import CREATE_RETENTION_TABLE, PRUNE

    prune_checkpoints = PRUNE.format(thread="AND thread_id = ANY(%(threads)s)")
    async with pool.connection() as conn:
        started = (await (await conn.execute("SELECT now() AS now")).fetchone())["now"]
        await conn.execute(CREATE_RETENTION_TABLE)
        threads = [row["thread_id"] for row in await (await conn.execute(_THREADS_RUN_SINCE, {"since": since})).fetchall()]
        for batch in batches(threads):
            await conn.execute(prune_checkpoints, {"threads": batch, "keep": keep})
            await conn.execute(_PRUNE_RUNS, {"threads": batch, "finished": list(FINISHED_RUNS), "keep": keep})
    return started


def batches(threads: Sequence[str]) -> list[list[str]]:
    """`threads` in lists of at most THREADS_PER_BATCH."""
    return [list(threads[start : start + THREADS_PER_BATCH]) for start in range(0, len(threads), THREADS_PER_BATCH)]


async def prepare_history(pool: Any) -> None:
    """Give the database the history's index and its table of pruned counts, once (under the setup lock)."""
    from graph.backends import history_postgres
    from graph.backends.atomic_postgres import SETUP_LOCK

    async with pool.connection() as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SETUP_LOCK,))
        for statement in history_postgres.MIGRATION:
            await conn.execute(statement)


async def prune_history(pool: Any) -> None:
    """Delete every user's history entries beyond what MAISTRO_HISTORY_KEEP keeps, counting them."""
    from graph.backends import history_postgres

    keep, cutoff = retention_bounds()
    if keep == NO_COUNT_LIMIT and cutoff == NO_AGE_LIMIT:
        return
    async with pool.connection() as conn:
        await conn.execute(history_postgres.PRUNE, {"keep": keep, "cutoff": cutoff})


async def drop_vector_index(pool: Any) -> None:
    """Drop the store's HNSW index, which no per-user query uses (see the module's docstring)."""
    async with pool.connection() as conn:
        await conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {VECTOR_INDEX}")


async def sweep_forever(pool: Any) -> None:
    """Drop the unused vector index, then `sweep` every MAISTRO_TTL_SWEEP_MINUTES, each from where the last one
    started; a failed step is logged and the next sweep covers its threads too."""
    settings = current_settings()
    since = None
    history_pruned_at = float("-inf")
    try:
        await drop_vector_index(pool)
    except Exception:  # another instance may be dropping it at the same moment
        logger.exception("The unused vector index %s could not be dropped; it is tried at the next start", VECTOR_INDEX)
    while True:
        try:
            since = await sweep(pool, since, settings.keep_turns) - LOOK_BACK
            if time.monotonic() - history_pruned_at >= PRUNE_INTERVAL_SECONDS:
                await prune_history(pool)
                history_pruned_at = time.monotonic()
        except Exception:  # the database may be restarting; the sweep must outlive that
            logger.exception("The retention sweep of checkpoints, runs and history failed; it runs again in %s minutes",
                             settings.ttl_sweep_minutes)
        await asyncio.sleep(settings.ttl_sweep_minutes * 60)


@asynccontextmanager
async def retention_sweep() -> AsyncIterator[None]:
    """Prepare the history's tables, then run `sweep_forever` on Aegra's connection pool for the block (nothing on
    other servers)."""
    from graph.server.platform import AEGRA, server_kind, server_store

    if server_kind() != AEGRA:
        yield
        return
    pool = (await server_store()).conn
    await prepare_history(pool)
    task = asyncio.create_task(sweep_forever(pool), name="maistro-retention-sweep")
    try:
        yield
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task
