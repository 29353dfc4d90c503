"""What forgetting one user costs in a shared database: `python -m bench.forget [--postgres auto|URL|off]
[--users 200] [--todos 50]`.

Every user holds `--todos` ToDos, each with its history entry (200 × 50: 10,000 ToDos, 20,000 rows), and the
forgotten user a thread of 3 turns as well (scripted model, no endpoint). On SQLite and on PostgreSQL (`auto`
starts a throwaway server) it prints the database's size and the wall time of `maistro forget`'s work
(`graph.memory.admin.forget_user`): all of it, and the part spent erasing what the deletes freed — SQLite
rebuilds its file (VACUUM) and empties its write-ahead log, PostgreSQL rewrites each table it deleted from
(VACUUM FULL, which locks the table meanwhile) — measured by running that step once more on the same tables.
The erasure costs what rewriting the database's tables costs: it grows with the whole database, not the user.
"""

import argparse
import tempfile
import time
from pathlib import Path

import psycopg
from langchain_core.messages import HumanMessage
from langgraph.store.base import PutOp

from bench.run import create_database, database_url, directory_bytes, postgres_admin
from graph import build_graph, close_graph
from graph.memory.admin import forget_user
from graph.memory.change_log import change_log
from graph.memory.store import HISTORY, namespace
from testing.scripted_session import REQUEST, task_keeper
from testing.stored_names import TODO

FORGOTTEN = "user-00000"
TURNS = 3


def populate(agent, users: int, todos: int) -> None:
    """Give every user `todos` ToDos with a history entry each, one batch per user, and the forgotten user a thread."""
    for u in range(users):
        user_id = f"user-{u:05d}"
        puts = []
        for n in range(todos):
            todo = {"task": f"Chore {n} of {user_id}", "time_to_complete": 15, "deadline": None,
                    "solutions": ["Saturday morning"], "status": "not started"}
            entry = {"id": f"h-{n:05d}", "time": "2026-01-01T00:00:00+00:00", "order": 0, "thread_id": "", "message": "",
                     "kind": "todo", "key": f"t-{n:05d}", "action": "created", "before": None, "after": todo}
            puts += [PutOp(namespace(TODO, user_id), f"t-{n:05d}", todo, index=False),
                     PutOp(namespace(HISTORY, user_id), f"h-{n:05d}", entry, index=False)]
        agent.store.batch(puts)
    for turn in range(TURNS):
        agent.invoke({"messages": [HumanMessage(f"{REQUEST}errand {turn}")]},
                     {"configurable": {"thread_id": "forgotten-thread", "user_id": FORGOTTEN}})


def postgres_bytes(url: str) -> int:
    """The database's size on disk."""
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]


def measure(agent, size: int) -> dict:
    """Forget the user; the figures: database MB, rows deleted, seconds for all of it and for the erasure alone."""
    started = time.perf_counter()
    receipt = forget_user(agent.store, agent.checkpointer, FORGOTTEN)
    total = time.perf_counter() - started
    started = time.perf_counter()
    change_log(agent.store).erase_deleted([table for table, count in receipt.rows.items() if count])
    erase = time.perf_counter() - started
    return {"MB": size / 1e6, "rows": sum(receipt.rows.values()), "forget s": total, "erase s": erase}


def main() -> None:
    """Build each database, forget one user, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--postgres", default="auto", help="'auto' (start one), a postgresql:// URL, or 'off'")
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--todos", type=int, default=50)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="maistro-bench-forget-"))
    model = task_keeper()
    figures = {}
    with postgres_admin(args.postgres, workdir) as admin_url:
        agent = build_graph(workdir / "sqlite", chat_model=lambda _: model)
        populate(agent, args.users, args.todos)
        figures["sqlite"] = measure(agent, directory_bytes(workdir / "sqlite"))
        close_graph(agent)
        if admin_url:
            url = database_url(admin_url, create_database(admin_url, "maistro_bench_forget"))
            agent = build_graph(database_url=url, chat_model=lambda _: model)
            populate(agent, args.users, args.todos)
            figures["postgres"] = measure(agent, postgres_bytes(url))
            close_graph(agent)
    print(f"{args.users} users x {args.todos} ToDos (each with its history entry); forgetting one of them:")
    print("| backend | database MB | rows deleted | forget s | of which erasure s |")
    print("|---|---|---|---|---|")
    for backend, row in figures.items():
        print(f"| {backend} | {row['MB']:.1f} | {row['rows']} | {row['forget s']:.2f} | {row['erase s']:.2f} |")


if __name__ == "__main__":
    main()
