"""The ToDo change log: the database records which ToDo rows changed, so a turn reads only those.

Triggers on LangGraph's `store` table keep one row per ToDo (namespace, key) in `maistro_todo_changes`, stamped
with when it last changed: on SQLite a number that grows with every write (writers take turns, so the numbers
commit in order), on PostgreSQL the writing transaction's id (transactions commit in any order: a reader goes
back to the oldest transaction still running when it last read, see `graph.backends.todo_sql`). A deleted
row keeps its log row, so readers learn of the deletion. The triggers catch every writer of the database: the
update nodes, imports, the TTL sweeper, other processes, LangGraph's own store classes.

Forgetting a user (`forget_items`) deletes their items and their log rows in one transaction that no other
writer interleaves with, so the log keeps nothing of them and every ToDo row still stored keeps its log row;
it adds a row to `maistro_todo_forgets`: readers compare its count with the one of their last read and read
every list whole again when it changed, since the deletions they would have learned of are gone.

The log cannot follow a reset of the store table that no trigger sees: a backup restored into a live
database, `TRUNCATE store`, an older database put in the place of the current one. Readers detect one with
`IDENTITY`, read in the same statement as the changes: on SQLite the schema version (a restore through
SQLite's backup API or from an SQL dump changes it), on PostgreSQL the database, the store's and the log's
files (TRUNCATE and a restore give a table new files) and the server's system identifier. When it changed,
or the log is missing (a backup from before the log existed), the reader installs the log again
(`reinstall`) and reads the list whole.

`install_sqlite` / `install_postgres` create the tables and triggers when our storage opens and when a reader
found a reset (idempotent), and log every stored ToDo the log lacks, in the same transaction. `change_log` tells the
reader which stores it may read through the log; any other store is read through its own API.
"""

import weakref
from collections.abc import Sequence

from langgraph.store.base import BaseStore, PutOp

from graph.memory.store import TODO, namespace

PREFIX = f"{TODO}."
TABLE = "maistro_todo_changes"
FORGETS = "maistro_todo_forgets"
# pg_current_xact_id() and xid8, which the PostgreSQL log is stamped with, came in PostgreSQL 13.
OLDEST_POSTGRES = 130000
# What identifies the store table and its log as the ones a reader read before (see the module's docstring).
IDENTITY = {
    "sqlite": "(SELECT schema_version FROM pragma_schema_version)",
    "postgres": f"""concat_ws('/', (SELECT oid FROM pg_database WHERE datname = current_database()),
    pg_relation_filenode('store'), pg_relation_filenode('{TABLE}'), pg_relation_filenode('{FORGETS}'),
    (SELECT system_identifier FROM pg_control_system()))""",
}
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
_SQLITE_BACKFILL = f"""INSERT OR IGNORE INTO {TABLE} (prefix, key)
SELECT prefix, key FROM store WHERE substr(prefix, 1, {len(PREFIX)}) = '{PREFIX}'"""
_SQLITE_TRIGGERS = (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD"))
_SQLITE_INSTALLED = f"""SELECT count(*) FROM sqlite_master
WHERE (type = 'table' AND name IN ('{TABLE}', '{FORGETS}'))
OR (type = 'trigger' AND name IN ({", ".join(f"'{TABLE}_{event}'" for event, _ in _SQLITE_TRIGGERS)}))"""

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
]
_POSTGRES_BACKFILL = f"""INSERT INTO {TABLE} (prefix, key, xid)
SELECT prefix, key, pg_current_xact_id() FROM store WHERE left(prefix, {len(PREFIX)}) = '{PREFIX}'
ON CONFLICT (prefix, key) DO NOTHING"""
_POSTGRES_INSTALLED = f"""SELECT to_regclass('{TABLE}') IS NOT NULL AND to_regclass('{FORGETS}') IS NOT NULL
AND (SELECT count(*) FROM pg_trigger WHERE tgrelid = to_regclass('store')
     AND tgname IN ('{TABLE}_written', '{TABLE}_deleted')) = 2 AS installed"""
# Log rows of a forgotten user's namespace whose ToDo is gone (a ToDo written while the forget ran keeps its row).
_FORGET_LOG = f"""DELETE FROM {TABLE} WHERE prefix = {{todo}}
AND NOT EXISTS (SELECT 1 FROM store WHERE store.prefix = {TABLE}.prefix AND store.key = {TABLE}.key)"""


def install_sqlite(store: BaseStore) -> None:
    """Give a set-up SQLite store's database the change log and its triggers, log the ToDos it lacks, and read the
    store through the log."""
    triggers = [
        _SQLITE_TRIGGER.format(table=TABLE, event=event, row=row, length=len(PREFIX), prefix=PREFIX)
        for event, row in _SQLITE_TRIGGERS
    ]
    with store.lock:
        conn = store.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in [*_SQLITE_TABLE.split(";")[:-1], *triggers, _SQLITE_BACKFILL]:
                conn.execute(statement)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    _logged[store] = "sqlite"


def install_postgres(store: BaseStore) -> None:
    """Give a set-up PostgreSQL store's database the change log and its triggers, log the ToDos it lacks, and read
    the store through the log. The caller holds the setup lock (`graph.backends.postgres.setup_lock`)."""
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
        cur.execute(_POSTGRES_BACKFILL, prepare=False)
    _logged[store] = "postgres"


def installed(store: BaseStore) -> bool:
    """Whether the store's database has the change log's tables and triggers (a restore may have taken them)."""
    if change_log(store) == "sqlite":
        with store._cursor(transaction=False) as cur:
            cur.execute(_SQLITE_INSTALLED)
            return cur.fetchone()[0] == 2 + len(_SQLITE_TRIGGERS)
    with store._cursor() as cur:
        cur.execute(_POSTGRES_INSTALLED)
        return bool(cur.fetchone()["installed"])


def reinstall(store: BaseStore) -> None:
    """Install the log again on a store whose table was reset (see the module's docstring), as its storage opens."""
    if change_log(store) == "sqlite":
        install_sqlite(store)
        return
    from graph.backends.postgres import setup_lock

    with store._cursor() as cur, setup_lock(cur.connection):
        install_postgres(store)


def forget_items(store: BaseStore, user_id: str, deletions: Sequence[PutOp]) -> None:
    """Delete a user's items (`deletions`) and their ToDos' log rows in one transaction, and tell every reader to
    read afresh. No other writer writes in between: SQLite lets one writer at a time, and on PostgreSQL the
    transaction locks the store table against writes first (for the few milliseconds it lasts)."""
    sqlite = change_log(store) == "sqlite"
    with store._cursor() if sqlite else store._cursor(pipeline=True) as cur:
        if not sqlite:
            cur.execute("LOCK TABLE store IN SHARE ROW EXCLUSIVE MODE")
        cur.execute(f"INSERT INTO {FORGETS} DEFAULT VALUES")  # on SQLite, a write first: the transaction is the writer
        if deletions:
            store._batch_put_ops(list(enumerate(deletions)), cur)
        cur.execute(_FORGET_LOG.format(todo="?" if sqlite else "%s"), (".".join(namespace(TODO, user_id)),))


def change_log(store: BaseStore) -> str | None:
    """"sqlite" or "postgres" when our storage installed the ToDo change log for this store as it opened, else None."""
    return _logged.get(store)
