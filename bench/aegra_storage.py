"""Storage per user on Aegra: `python -m bench.aegra_storage [--turns 200] [--keep-turns 20] [--postgres URL]`.

One user sends `--turns` one-memory turns ("add chore: ...") on one thread to one Aegra instance on a fresh
database, streamed to their end through the SDK, with the benchmark's chore-keeping model stub answering at once.
The database holds nothing but that user's data, so its growth is the user's: every table's size (heap, indexes
and TOAST, `pg_total_relation_size`) is read after the first turn and again after the last one, once the server's
retention sweep has run (MAISTRO_TTL_SWEEP_MINUTES, set short here), each time after a `VACUUM FULL`, which
rewrites the tables without the space deleted rows left (that space autovacuum makes reusable on a running
server; how much of it there is at a time depends on how fast the server writes, not on the user, and is printed
apart). kB per turn by table are the difference over the turns between; the tables that grow with every turn (the memories) are extrapolated to 1,000 turns linearly, and the
growth of the ones the retention bounds (checkpoints and runs, once past MAISTRO_KEEP_TURNS turns) is taken as
measured, which the last line says. Target: 1,000 turns grow the database by <= 4 MB.
"""

import argparse
import asyncio
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import psycopg
from langgraph_sdk import get_client

from bench.aegra_load import model_process, postgres
from graph.memory.store import user_label
from graph.names import AGENT_NAME
from testing import postgres_server
from testing.aegra_server import aegra_instances
from testing.chore_endpoint import ADD
from testing.langgraph_server import token_environment
from testing.stored_names import TODO

USER, TOKEN = "storage-user", "storage-user-token-0123456789"
TARGET_MB_PER_1000_TURNS = 4.0
# Tables the retention keeps at a bounded size per thread; every other table grows with the memories.
BOUNDED_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "runs", "maistro_checkpoint_retention")
SWEEP_MINUTES = 0.05
PAGE = 500
TABLE_SIZES = """
SELECT c.relname AS name, pg_total_relation_size(c.oid) AS bytes, c.reltuples AS rows
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'r' AND n.nspname = 'public'
"""


def table_sizes(database_url: str, vacuum: str) -> dict[str, int]:
    """Bytes per table of the database after `vacuum` ("VACUUM" or "VACUUM FULL") of every table."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(vacuum)
        return {name: size for name, size, _ in conn.execute(TABLE_SIZES).fetchall()}


async def converse(url: str, turns: int) -> tuple[float, int]:
    """`turns` one-memory turns on one thread; the seconds they took and the ToDos the user has at the end."""
    client = get_client(url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120)
    thread = await client.threads.create()
    started = time.perf_counter()
    for number in range(turns):
        parts = client.runs.stream(thread["thread_id"], AGENT_NAME,
                                   input={"messages": [{"role": "user", "content": f"{ADD}chore {number}"}]})
        errors = [part.data async for part in parts if part.event == "error"]
        if errors:
            raise RuntimeError(f"turn {number}: {errors[0]}")
    seconds = time.perf_counter() - started
    todos = 0
    while page := (await client.store.search_items((TODO, user_label(USER)), limit=PAGE, offset=todos))["items"]:
        todos += len(page)  # in pages: the server refuses a longer one
    await client.aclose()
    return seconds, todos


def main() -> None:
    """Run the turns, print kB per turn by table and the 1,000-turn figure against the target."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=200, help="one-memory turns of the user (at least 30)")
    parser.add_argument("--keep-turns", type=int, default=20, help="MAISTRO_KEEP_TURNS of the server")
    parser.add_argument("--postgres", help="a PostgreSQL server URL (default: a throwaway server)")
    options = parser.parse_args()
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="maistro-storage-") as scratch:
        model = stack.enter_context(model_process(0.0))
        database = postgres_server.create_database(stack.enter_context(postgres(options.postgres)))
        env = token_environment(Path(scratch), model, {USER: TOKEN}, MAISTRO_TTL_SWEEP_MINUTES=str(SWEEP_MINUTES),
                                MAISTRO_KEEP_TURNS=str(options.keep_turns))
        (url,) = stack.enter_context(aegra_instances(Path(scratch), env, database))
        asyncio.run(converse(url, 1))
        before = table_sizes(database, "VACUUM FULL")
        seconds, todos = asyncio.run(converse(url, options.turns - 1))
        time.sleep(2 * SWEEP_MINUTES * 60)
        high_water = sum(table_sizes(database, "VACUUM").values()) - sum(before.values())
        after = table_sizes(database, "VACUUM FULL")
    measured = options.turns - 1
    print(f"\n{options.turns} one-memory turns of one user on one thread, Aegra on PostgreSQL, "
          f"MAISTRO_KEEP_TURNS={options.keep_turns} "
          f"({seconds / measured:.2f} s a turn; the user has {todos} ToDos)")
    print(f"{'table':<36} {'kB per turn':>12} {'MB at the end':>14}")
    grows = bounded = 0.0
    for name in sorted(after, key=lambda table: -(after[table] - before.get(table, 0))):
        added = after[name] - before.get(name, 0)
        if abs(added) < 1024 and after[name] < 64 * 1024:
            continue
        print(f"{name:<36} {added / measured / 1024:>12.2f} {after[name] / 2**20:>14.2f}")
        if name in BOUNDED_TABLES:
            bounded += added
        else:
            grows += added / measured
    per_1000 = (grows * 1000 + bounded) / 2**20
    print(f"Before VACUUM FULL the tables had grown by {high_water / 2**20:.2f} MB: the space deleted rows left, "
          "which autovacuum makes reusable and which depends on how fast the server writes, not on the user")
    print(f"1,000 turns: {per_1000:.2f} MB = {grows / 1024:.2f} kB per turn of the tables that grow with the memories x "
          f"1,000 + {bounded / 2**20:.2f} MB the retention bounds (checkpoints, runs: their growth over these "
          f"{measured} turns) (target <= {TARGET_MB_PER_1000_TURNS:.0f} MB: "
          f"{'met' if per_1000 <= TARGET_MB_PER_1000_TURNS else 'NOT met'})")


if __name__ == "__main__":
    main()
