"""Whether per-user semantic search uses the store's HNSW index: `python -m bench.vector_index [--users 200] [--items 50]`.

LangGraph's `PostgresStore` creates an HNSW index on `store_vectors.embedding` when the store has a semantic index.
The agent searches one user's ToDos at a time: the store's search query filters by the user's namespace prefix
and orders by distance to the query's vector. This benchmark fills a fresh database (a throwaway PostgreSQL with
pgvector, or `--postgres`) with `--users` users of `--items` ToDos each (random 384-dimension vectors), analyses
it, and runs that query (the SQL the store sends, for one user, asking for 10 items) with and without the index:
the plan, the items found, and the time. A plan that walks the index finds the nearest vectors of all users and
keeps only the user's among them, so it finds fewer than asked for once the user's share of the table is small.
"""

import argparse
import random
import shutil
import tempfile
import time
from pathlib import Path

import psycopg
from langgraph.store.postgres import PostgresStore

from testing import postgres_server

DIMS = 384
LIMIT = 10
INDEX = "store_vectors_embedding_idx"
# The vector search of `PostgresStore.search(("todo", user), query=..., limit=10)`, as langgraph-checkpoint-postgres
# builds it (its `_prepare_batch_search_queries`), without the final de-duplication.
SEARCH = """
SELECT store.key FROM store JOIN store_vectors sv ON store.prefix = sv.prefix AND store.key = sv.key
WHERE (store.prefix = %(prefix)s OR store.prefix LIKE %(below)s) AND (store.expires_at IS NULL OR store.expires_at > NOW())
ORDER BY sv.embedding <=> %(vector)s::vector ASC LIMIT %(limit)s
"""


def vector(rng: random.Random) -> str:
    """A random vector in pgvector's text form."""
    return "[" + ",".join(f"{rng.random():.4f}" for _ in range(DIMS)) + "]"


def search(conn: psycopg.Connection, prefix: str, query: str) -> tuple[str, int, float]:
    """The plan's access to store_vectors, the items found and the milliseconds of the store's search query."""
    params = {"prefix": prefix, "below": f"{prefix}.%", "vector": query, "limit": 2 * LIMIT + 1}
    plan = "\n".join(row[0] for row in conn.execute("EXPLAIN " + SEARCH, params).fetchall())
    access = "HNSW index scan" if INDEX in plan else "the user's rows by prefix, sorted exactly"
    started = time.perf_counter()
    found = len(conn.execute(SEARCH, params).fetchall())
    return access, found, 1000 * (time.perf_counter() - started)


def main() -> None:
    """Fill the store, run the search with and without the HNSW index, print both."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--items", type=int, default=50, help="ToDos per user")
    parser.add_argument("--postgres", help="a PostgreSQL server URL (default: a throwaway server)")
    options = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="maistro-vector-index-"))
    try:
        url = postgres_server.create_database(options.postgres or postgres_server.start(directory))
        rng = random.Random(1)
        with psycopg.connect(url, autocommit=True) as conn:
            PostgresStore(conn, index={"dims": DIMS, "embed": lambda texts: [[0.0] * DIMS for _ in texts],
                                       "fields": ["task"]}).setup()
            rows = [(f"todo.user{user}", f"item{item}") for user in range(options.users) for item in range(options.items)]
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO store (prefix, key, value) VALUES (%s, %s, '{\"task\": \"x\"}')", rows)
                cur.executemany("INSERT INTO store_vectors (prefix, key, field_name, embedding) VALUES (%s, %s, 'task', %s)",
                                [(prefix, key, vector(rng)) for prefix, key in rows])
            conn.execute("ANALYZE")
            size = conn.execute(f"SELECT pg_relation_size('{INDEX}')").fetchone()[0]
            query = vector(rng)
            print(f"{options.users} users x {options.items} ToDos; the HNSW index holds {size / 2**20:.1f} MB "
                  f"({size / len(rows) / 1024:.2f} kB per ToDo); one user's search for {LIMIT} items (asks for {2 * LIMIT + 1}):")
            for label in ("with the index", "without it"):
                if label == "without it":
                    conn.execute(f"DROP INDEX {INDEX}")
                access, found, ms = search(conn, "todo.user7", query)
                print(f"  {label:<15} {access:<45} found {found:>3} of {min(2 * LIMIT + 1, options.items)}  {ms:6.1f} ms")
    finally:
        if not options.postgres:
            postgres_server.stop(directory)
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
