"""The ToDo change log: the database records which ToDo rows changed, so a turn reads only those.

Triggers on LangGraph's `store` table keep one row per ToDo (namespace, key) in `maistro_todo_changes`, stamped
with when it last changed: on SQLite a number that grows with every write (writers take turns, so the numbers
commit in order), on PostgreSQL the writing transaction's id (transactions commit in any order: a reader goes
back to the oldest transaction still running when it last read, see `graph.backends.todo_sql`). A deleted
row keeps its log row, so readers learn of the deletion. The triggers catch every writer of the database: the
update nodes, imports, the TTL sweeper, other processes, LangGraph's own store classes.

Forgetting a user (`forget_changes`) deletes their log rows too, so the log keeps nothing of them, and adds a
row to `maistro_todo_forgets`: readers compare its count with the one of their last read and read every
list whole again when it changed, since the deletions they would have learned of are gone.

`install_sqlite` / `install_postgres` create the table and triggers when our storage opens (idempotent), and on
a database that had no log yet, log every ToDo already stored, in the same transaction. `change_log` tells
the reader which stores it may read through the log; any other store is read through its own API.
"""

import weakref

from langgraph.store.base import BaseStore

from graph.memory.store import TODO, namespace

PREFIX = f"{TODO}."
TABLE = "maistro_todo_changes"
FORGETS = "maistro_todo_forgets"
# pg_current_xact_id() and xid8, which the PostgreSQL log is stamped with, came in PostgreSQL 13.
OLDEST_POSTGRES = 130000
_logged: "weakref.WeakKeyDictionary[BaseStore, str]" = weakref.WeakKeyDictionary()

_SQLITE_TABLE = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, prefix TEXT NOT NULL, key TEXT NOT NULL, UNIQUE (prefix, key)
);
CREATE INDEX IF NOT EXISTS {TABLE}_since ON {TABLE} (prefix, seq);
CREATE TABLE IF NOT EXISTS {FORGETS} (id INTEGER PRIMARY KEY AUTOINCREMENT);
"""
# INSERT OR REPLACE gives the (prefix, key) a new, higher `seq` (AUTOINCREMENT never reuses one).
_SQLITE_TRIGGER = """
CREATE TRIGGER IF NOT EXISTS {table}_{event} AFTER {event} ON store
WHEN substr({row}.prefix, 1, {length}) = '{prefix}'
BEGIN
    INSERT OR REPLACE INTO {table} (prefix, key) VALUES ({row}.prefix, {row}.key);
END;
"""
_SQLITE_BACKFILL = f"INSERT OR IGNORE INTO {TABLE} (prefix, key) SELECT prefix, key FROM store WHERE substr(prefix, 1, {len(PREFIX)}) = '{PREFIX}'"

_POSTGRES_SETUP = [
    f"CREATE TABLE IF NOT EXISTS {TABLE} (prefix text NOT NULL, key text NOT NULL, xid xid8 NOT NULL, PRIMARY KEY (prefix, key))",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_since ON {TABLE} (prefix, xid)",
    f"CREATE TABLE IF NOT EXISTS {FORGETS} (id bigserial PRIMARY KEY)",
    f"""CREATE OR REPLACE FUNCTION {TABLE}_log() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed store%ROWTYPE;
BEGIN
    IF TG_OP = 'DELETE' THEN changed := OLD; ELSE changed := NEW; END IF;
    INSERT INTO {TABLE} (prefix, key, xid) VALUES (changed.prefix, changed.key, pg_current_xact_id())
    ON CONFLICT (prefix, key) DO UPDATE SET xid = EXCLUDED.xid;
    RETURN NULL;
END
$$""",
]
_POSTGRES_TRIGGERS = [
    f"""CREATE TRIGGER {TABLE}_written AFTER INSERT OR UPDATE ON store FOR EACH ROW
WHEN (left(NEW.prefix, {len(PREFIX)}) = '{PREFIX}') EXECUTE FUNCTION {TABLE}_log()""",
    f"""CREATE TRIGGER {TABLE}_deleted AFTER DELETE ON store FOR EACH ROW
WHEN (left(OLD.prefix, {len(PREFIX)}) = '{PREFIX}') EXECUTE FUNCTION {TABLE}_log()""",
    f"""INSERT INTO {TABLE} (prefix, key, xid)
SELECT prefix, key, pg_current_xact_id() FROM store WHERE left(prefix, {len(PREFIX)}) = '{PREFIX}'
ON CONFLICT (prefix, key) DO NOTHING""",
]


def install_sqlite(store: BaseStore) -> None:
    """Give a set-up SQLite store's database the change log and its triggers (once), and read it through the log."""
    triggers = [
        _SQLITE_TRIGGER.format(table=TABLE, event=event, row=row, length=len(PREFIX), prefix=PREFIX)
        for event, row in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD"))
    ]
    with store.lock:
        conn = store.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            new = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,)).fetchone() is None
            for statement in [*_SQLITE_TABLE.split(";")[:-1], *triggers]:
                conn.execute(statement)
            if new:
                conn.execute(_SQLITE_BACKFILL)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    _logged[store] = "sqlite"


def install_postgres(store: BaseStore) -> None:
    """Give a set-up PostgreSQL store's database the change log and its triggers (once), and read it through the log."""
    with store._cursor(pipeline=True) as cur:  # one transaction (the store has no pipeline mode)
        cur.execute("SHOW server_version_num")
        version = int(cur.fetchone()["server_version_num"])
        if version < OLDEST_POSTGRES:
            raise RuntimeError(f"task-maistro needs PostgreSQL 13 or later; this server is version {version // 10000}.")
        for statement in _POSTGRES_SETUP:
            cur.execute(statement, prepare=False)
        cur.execute("SELECT 1 FROM pg_trigger WHERE tgname = %s AND tgrelid = 'store'::regclass", (f"{TABLE}_written",))
        if cur.fetchone() is None:
            for statement in _POSTGRES_TRIGGERS:
                cur.execute(statement, prepare=False)
    _logged[store] = "postgres"


def forget_changes(store: BaseStore, user_id: str) -> None:
    """Delete the user's ToDo log rows (after their ToDos were deleted) and tell every reader to read afresh."""
    backend = change_log(store)
    if backend is None:
        return
    sqlite = backend == "sqlite"
    # One transaction either way: the SQLite store's cursor opens one, the PostgreSQL store's pipeline cursor too.
    with store._cursor() if sqlite else store._cursor(pipeline=True) as cur:
        cur.execute(f"DELETE FROM {TABLE} WHERE prefix = {'?' if sqlite else '%s'}", (".".join(namespace(TODO, user_id)),))
        cur.execute(f"INSERT INTO {FORGETS} DEFAULT VALUES")


def change_log(store: BaseStore) -> str | None:
    """"sqlite" or "postgres" when our storage installed the ToDo change log for this store as it opened, else None."""
    return _logged.get(store)
