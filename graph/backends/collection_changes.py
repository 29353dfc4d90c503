"""The memory change log: the database records which memory rows changed, so a turn reads only those.

Triggers on LangGraph's `store` table keep one row per memory document (namespace, key) in `maistro_todo_changes`
(named when it logged the ToDos alone, a name existing databases keep; it logs every namespace but the history
now, so every collection kind, declared or not, is read by its changes), stamped with when it last changed: on SQLite a number that grows with every write (writers take turns, so the numbers
commit in order), on PostgreSQL the writing transaction's id (transactions commit in any order: a reader goes
back to the oldest transaction still running when it last read, see `graph.backends.collection_sql`). A deleted
row keeps its log row, so readers learn of the deletion. The triggers catch every writer of the database: the
update nodes, imports, the TTL sweeper, other processes, LangGraph's own store classes.

Forgetting a user (`forget_user_items`) deletes everything stored in their namespaces — their items, those items'
embeddings and list-index rows, and their log rows — in one transaction that no other writer interleaves with,
so the log keeps nothing of them and every row still stored keeps its log row; it adds a row to
`maistro_todo_forgets`: readers compare its count with the one of their last read and read every list whole again
when it changed, since the deletions they would have learned of are gone.

The log cannot follow a reset of the store table that no trigger sees: a backup restored into a live
database, `TRUNCATE store`, an older database put in the place of the current one. Readers detect one with
the identity of the table and its log (each store class's `CHANGE_LOG_IDENTITY`), read in the same statement
as the changes: on SQLite the schema version (a restore through
SQLite's backup API or from an SQL dump changes it), on PostgreSQL the database, the store's and the log's
files (TRUNCATE and a restore give a table new files) and the server's system identifier. When it changed,
or the log is missing (a backup from before the log existed), the reader installs the log again
(`reinstall_change_log`) and reads every list whole.

`CollectionChangeLog` is what the project's store classes share: the read through the log and its recovery. Each
class holds its dialect's SQL (`graph.backends.atomic.AtomicSqliteStore`,
`graph.backends.atomic_postgres.AtomicPostgresStore`): its `install_change_log` runs when our storage opens
and when a reader found a reset, and logs every stored memory row the log lacks, in one transaction. The tables and
triggers come from the class's `CHANGE_LOG_MIGRATIONS`, run in order like LangGraph's store migrations: each
database records in `MIGRATIONS` the ones it has, and gets only those it lacks. A database whose log is not
all there (a restore took part of it) runs them all again, so each migration may run again safely where it
already ran (`IF NOT EXISTS`, `OR REPLACE`, `DROP ... IF EXISTS` first). Until the log was installed for a store, the memory code reads
the store through its own API (`graph.memory.change_log.change_log`).
"""

from collections.abc import Mapping, Sequence
from typing import Any

from graph.backends.collection_sql import log_state, memory_rows
from graph.backends.list_index import INDEX as LIST_INDEX
from graph.memory.change_log import MemoryRows
from graph.memory.kinds import MemoryKind
from graph.memory.store import HISTORY

# What the first migration logged (the ToDos' namespace, as it ran in databases made then); the later ones log
# every prefix but the history's.
FIRST_LOGGED_PREFIX = "todo."
UNLOGGED_PREFIX = f"{HISTORY}."
# The log's tables keep the names they were created with (when only the ToDos were logged): existing databases
# have them.
TABLE = "maistro_todo_changes"
FORGETS = "maistro_todo_forgets"
# Which of a store class's `CHANGE_LOG_MIGRATIONS` the database has run, by their index.
MIGRATIONS = "maistro_todo_changes_migrations"
# LangGraph's table of the semantic index's embeddings (one row per indexed field of a store row).
VECTORS = "store_vectors"
# The tables whose rows a forget deletes by namespace (`{table}`), in this order: the embeddings first (so they are
# counted, those a delete without foreign keys left behind too), the list index, then the store rows themselves.
FORGOTTEN_TABLES = (VECTORS, LIST_INDEX, "store")
FORGET_ROWS = "DELETE FROM {table} WHERE {prefixes}"
# Then the log rows of the forgotten namespaces (`{prefixes}`), all of them gone.
FORGET_LOG = f"""DELETE FROM {TABLE} WHERE {{prefixes}}
AND NOT EXISTS (SELECT 1 FROM store WHERE store.prefix = {TABLE}.prefix AND store.key = {TABLE}.key)"""


class CollectionChangeLog:
    """Mixin for this project's SQL stores: the memory change log, and a turn's memories read through it.

    A store class supplies its dialect: `install_change_log`, `change_log_present`, `forget_user_items` and
    `_changed_rows` (the statement of `graph.backends.collection_sql`, each list read from its position, and the
    next positions).
    """

    change_log_installed = False

    def install_change_log(self) -> None:
        """Give the store's database the change log and its triggers, log the memory rows it lacks, and read the
        store through the log from now on."""
        raise NotImplementedError

    def reinstall_change_log(self) -> None:
        """Install the log again on a store whose table was reset (see the module's docstring)."""
        self.install_change_log()

    def change_log_present(self) -> bool:
        """Whether the store's database has the change log's tables and triggers (a restore may have taken them)."""
        raise NotImplementedError

    def forget_user_items(self, user_id: str, namespaces: Sequence[tuple[str, ...]]) -> dict[str, int]:
        """Delete every row of the user's `namespaces` — store items, embeddings, list-index and log rows — and their
        count of pruned history in one transaction, and tell every reader to read afresh; no other writer writes in
        between. Returns the rows deleted, by table."""
        raise NotImplementedError

    def _changed_rows(
        self,
        user_id: str,
        collections: Sequence[MemoryKind],
        documents: Sequence[MemoryKind],
        positions: Mapping[str, Any],
        stored: Sequence[tuple[tuple[str, ...], str]],
    ) -> tuple[list[tuple], dict[str, Any]]:
        raise NotImplementedError

    CHANGE_LOG_MIGRATIONS: Sequence[Sequence[str]] = ()

    def _pending_migrations(self, present: bool, version: int) -> list[tuple[int, Sequence[str]]]:
        """The migrations a database needs, with their indexes: those after `version`, the last one it ran,
        or all of them when its log is not all `present`."""
        start = version + 1 if present else 0
        return list(enumerate(self.CHANGE_LOG_MIGRATIONS))[start:]

    def _log_present_after(self, error: Exception) -> bool:
        """Whether the change log is in place after a read failed with `error`: then it failed for another reason.
        When even that cannot be found out (the database is gone), the read's own error is the one to see."""
        try:
            return self.change_log_present()
        except Exception:
            raise error from None

    def read_memory_rows(
        self,
        user_id: str,
        kinds: Sequence[MemoryKind],
        marks: Mapping[str, Any],
        stored: Sequence[tuple[tuple[str, ...], str]] = (),
    ) -> MemoryRows:
        """The user's documents of `kinds` in one statement: of each collection the rows changed since its mark in
        `marks` (without one: all of them), each single document, and the documents named by (namespace, key) in
        `stored` (the done log's bookkeeping a turn reads). When a user was forgotten since a mark, it reads again,
        every list whole; when the store table was reset or the log is missing, it installs the log again first."""
        collections = [kind for kind in kinds if kind.collection]
        documents = [kind for kind in kinds if not kind.collection]
        positions = {name: mark[1] for name, mark in marks.items()}
        try:
            rows, positions = self._changed_rows(user_id, collections, documents, positions, stored)
        except Exception as error:
            if self._log_present_after(error):
                raise
            self.reinstall_change_log()
            return self.read_memory_rows(user_id, kinds, {}, stored)
        log = log_state(rows)
        if any(mark[0] != log for mark in marks.values()):
            if any(mark[0][1] != log[1] for mark in marks.values()):
                self.reinstall_change_log()
            return self.read_memory_rows(user_id, kinds, {}, stored)
        next_marks = {kind.name: (log, positions[kind.name]) for kind in collections}
        whole = frozenset(kind.name for kind in collections if kind.name not in marks)
        return memory_rows(rows, user_id, kinds, next_marks, whole, stored)
