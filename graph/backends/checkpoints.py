"""Checkpointers with a retention policy: LangGraph's SQLite and PostgreSQL savers, keeping each thread's last turns.

With "sync" durability every step of a turn writes a checkpoint holding the thread, and LangGraph keeps
them all. These savers keep the last `MAISTRO_KEEP_TURNS` turns (default 20) of every thread whole, so
time travel works on them exactly as with LangGraph's own savers: `get_state_history`, replaying from a
checkpoint (`invoke(None, config)`), forking (`invoke(input, config)`) and `update_state(config, ...)`.

- A turn starts with a root "input" checkpoint. When one is saved, the thread's root checkpoints older
  than its K-th newest input checkpoint (K = keep_turns) are deleted with their pending writes (and on
  PostgreSQL the blobs no kept checkpoint uses), in one transaction. A checkpoint that no other checkpoint
  continues (the latest of a branch left by a fork) is kept whatever its age.
- Each prune records, per thread, the oldest input checkpoint kept (`maistro_checkpoint_retention`). Asked
  for a checkpoint older than that which is gone, `get_tuple` raises `CheckpointNotKept` instead of
  returning None (on None LangGraph would start the run from an empty thread); an id the thread never had
  (or a thread never pruned) still gets None.
- When storage is opened, every thread is cut the same way (a database written by LangGraph's own savers
  shrinks on its first open; SQLite then vacuums the file).

Only the root graph's checkpoints (namespace "") are pruned, and only ones older than a kept checkpoint,
so a crash at any point leaves a resumable thread. The PostgreSQL saver is in
`graph.backends.checkpoints_postgres`.
"""

import json
import logging
import sqlite3
from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata, CheckpointTuple
from langgraph.checkpoint.sqlite import SqliteSaver

from graph.backends.sqlite_errors import operational_error
from graph.settings import current_settings

logger = logging.getLogger(__name__)

RETENTION_TABLE = "maistro_checkpoint_retention"


class CheckpointNotKept(LookupError):
    """A fork, replay, update or read from a checkpoint the retention policy has deleted."""

    def __init__(self, thread_id: str, checkpoint_id: str, keep: int) -> None:
        super().__init__(
            f"Checkpoint {checkpoint_id} of thread {thread_id!r} is no longer kept: a thread keeps its last "
            f"{keep} turn{'' if keep == 1 else 's'} (MAISTRO_KEEP_TURNS={keep}), so fork, replay or update from a "
            "checkpoint of those."
        )
        self.thread_id = thread_id
        self.checkpoint_id = checkpoint_id


def starts_turn(config: RunnableConfig, metadata: CheckpointMetadata) -> bool:
    """Whether `put` is saving a root graph's input checkpoint: the start of a turn."""
    return metadata.get("source") == "input" and not config["configurable"].get("checkpoint_ns", "")


def requested_checkpoint(config: RunnableConfig) -> tuple[str, str] | None:
    """(thread id, checkpoint id) of a config naming a root checkpoint explicitly, else None."""
    configurable = config["configurable"]
    checkpoint_id = configurable.get("checkpoint_id")
    if not checkpoint_id or configurable.get("checkpoint_ns", ""):
        return None
    return str(configurable["thread_id"]), checkpoint_id


_SQLITE_RETENTION_TABLE = f"CREATE TABLE IF NOT EXISTS {RETENTION_TABLE} (thread_id TEXT PRIMARY KEY, kept_from TEXT NOT NULL)"

# {thread} is "" (every thread) or a condition on one thread's rows. In one transaction: record each thread's
# oldest kept input checkpoint, then delete the older checkpoints some checkpoint continues, then the writes
# of the deleted ones.
_SQLITE_RECORD = f"""INSERT INTO {RETENTION_TABLE} (thread_id, kept_from)
    SELECT thread_id, checkpoint_id FROM (
        SELECT thread_id, checkpoint_id,
            row_number() OVER (PARTITION BY thread_id ORDER BY checkpoint_id DESC) AS turn
        FROM checkpoints
        WHERE checkpoint_ns = '' AND json_extract(CAST(metadata AS TEXT), '$.source') = 'input' {{thread}}
    ) WHERE turn = :keep
    ON CONFLICT (thread_id) DO UPDATE SET kept_from = max(kept_from, excluded.kept_from)"""
_SQLITE_DELETES = (
    f"""DELETE FROM checkpoints WHERE checkpoint_ns = '' {{thread}}
    AND checkpoint_id < (SELECT kept_from FROM {RETENTION_TABLE} r WHERE r.thread_id = checkpoints.thread_id)
    AND EXISTS (
        SELECT 1 FROM checkpoints child WHERE child.thread_id = checkpoints.thread_id
        AND child.checkpoint_ns = '' AND child.parent_checkpoint_id = checkpoints.checkpoint_id
    )""",
    f"""DELETE FROM writes WHERE checkpoint_ns = '' {{thread}}
    AND checkpoint_id < (SELECT kept_from FROM {RETENTION_TABLE} r WHERE r.thread_id = writes.thread_id)
    AND NOT EXISTS (
        SELECT 1 FROM checkpoints c WHERE c.thread_id = writes.thread_id
        AND c.checkpoint_ns = '' AND c.checkpoint_id = writes.checkpoint_id
    )""",
)


class PruningSqliteSaver(SqliteSaver):
    """A `SqliteSaver` that keeps the last `keep_turns` turns of each thread (see the module's docstring)."""

    def __init__(self, conn: sqlite3.Connection, *, keep_turns: int | None = None, **kwargs: Any) -> None:
        super().__init__(conn, **kwargs)
        self.keep_turns = current_settings().keep_turns if keep_turns is None else keep_turns

    def setup(self) -> None:
        """LangGraph's tables, and the table recording how far each thread was pruned."""
        if self.is_setup:
            return
        try:
            super().setup()  # called by `cursor()` with the lock held, as LangGraph's own setup is
        except Exception as error:
            self._column_added_before(error)
        self.conn.execute(_SQLITE_RETENTION_TABLE)
        self.conn.commit()

    def _column_added_before(self, error: Exception) -> None:
        """Finish LangGraph's setup when adding the `task_path` column failed because an earlier setup added it: its
        setup expects that error from the standard library's `sqlite3` only, and the connection may be pysqlite3's."""
        if isinstance(error, operational_error(self.conn)) and "duplicate column name" in str(error):
            self.is_setup = True
            return
        raise error

    def put(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> RunnableConfig:
        """Save the checkpoint; when it starts a turn, then delete what the thread keeps no longer."""
        saved = super().put(config, checkpoint, metadata, new_versions)
        if starts_turn(config, metadata):
            self._prune("AND thread_id = :thread", {"thread": str(config["configurable"]["thread_id"])})
        return saved

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """LangGraph's `get_tuple`; raises `CheckpointNotKept` for a checkpoint the retention policy deleted."""
        found = super().get_tuple(config)
        if found is None and (requested := requested_checkpoint(config)):
            thread_id, checkpoint_id = requested
            with self.cursor(transaction=False) as cur:
                cur.execute(f"SELECT kept_from FROM {RETENTION_TABLE} WHERE thread_id = ?", (thread_id,))
                row = cur.fetchone()
            if row is not None and checkpoint_id < row[0]:
                raise CheckpointNotKept(thread_id, checkpoint_id, self.keep_turns)
        return found

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints and writes, and its retention record."""
        super().delete_thread(thread_id)
        with self.cursor() as cur:
            cur.execute(f"DELETE FROM {RETENTION_TABLE} WHERE thread_id = ?", (str(thread_id),))

    def forget_threads(self, thread_ids: Sequence[str]) -> dict[str, int]:
        """Delete the threads' checkpoints, writes and retention records in one transaction; returns the rows
        deleted, by table."""
        rows = {}
        with self.cursor() as cur:
            for table in ("checkpoints", "writes", RETENTION_TABLE):
                cur.execute(
                    f"DELETE FROM {table} WHERE thread_id IN (SELECT value FROM json_each(?))",
                    (json.dumps([str(thread_id) for thread_id in thread_ids]),),
                )
                rows[table] = cur.rowcount
        return rows

    def prune_all(self) -> int:
        """Apply the retention policy to every thread and vacuum the file if that freed anything; returns rows deleted."""
        deleted = self._prune("", {})
        if deleted:
            try:
                with self.lock:
                    self.conn.execute("VACUUM")
            except operational_error(self.conn) as error:
                logger.warning("The checkpoints were pruned but the database could not be vacuumed now: %s", error)
        return deleted

    def _prune(self, thread: str, params: dict[str, Any]) -> int:
        deleted = 0
        with self.cursor() as cur:
            cur.execute(_SQLITE_RECORD.format(thread=thread), {**params, "keep": self.keep_turns})
            for statement in _SQLITE_DELETES:
                cur.execute(statement.format(thread=thread), params)
                deleted += cur.rowcount
        return deleted
