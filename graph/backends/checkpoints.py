"""Checkpointers that keep each thread small: LangGraph's SQLite and PostgreSQL savers, pruned as threads go.

With "sync" durability every step of a turn writes a checkpoint holding the thread's messages, and
LangGraph keeps them all. Resuming a run and `graph.get_state()` need only a thread's latest checkpoint (and
its pending writes), so:

- when a turn starts (its input checkpoint is written), the checkpoints of the thread older than the one
  the turn starts from are deleted, with their writes (and on PostgreSQL the blobs no kept checkpoint
  uses), in one transaction after the input checkpoint is saved. A thread at rest holds the previous
  turn's last checkpoint and the current turn's;
- when storage is opened, every thread is cut to its latest checkpoint (databases written before pruning
  existed shrink on their first open; SQLite then vacuums the file).

Only the root graph's checkpoints (namespace "") are pruned, and only ones older than a checkpoint that is
kept, so a crash at any point leaves a resumable thread. `graph.get_state_history()` therefore lists the
current and previous turn only. The PostgreSQL saver is in `graph.backends.checkpoints_postgres`.
"""

import logging
import sqlite3

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.sqlite import SqliteSaver

logger = logging.getLogger(__name__)


def turn_start_parent(config: RunnableConfig, metadata: CheckpointMetadata) -> str | None:
    """The checkpoint a turn starts from, when `put` saves a root thread's input checkpoint (else None)."""
    configurable = config["configurable"]
    if metadata.get("source") != "input" or configurable.get("checkpoint_ns", ""):
        return None
    return configurable.get("checkpoint_id")


class PruningSqliteSaver(SqliteSaver):
    """A `SqliteSaver` that deletes a thread's older checkpoints when a turn starts, and every thread's on open."""

    def put(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> RunnableConfig:
        """Save the checkpoint; for a turn's input checkpoint, then delete the thread's checkpoints before the turn's."""
        saved = super().put(config, checkpoint, metadata, new_versions)
        if parent := turn_start_parent(config, metadata):
            thread_id = str(config["configurable"]["thread_id"])
            with self.cursor() as cur:
                for table in ("writes", "checkpoints"):
                    cur.execute(
                        f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id < ?",
                        (thread_id, parent),
                    )
        return saved

    def prune_all(self) -> int:
        """Cut every thread to its latest checkpoint and vacuum the file if that freed anything; returns rows deleted."""
        latest = (
            "(SELECT max(c.checkpoint_id) FROM checkpoints c WHERE c.thread_id = {table}.thread_id "
            "AND c.checkpoint_ns = '')"
        )
        deleted = 0
        with self.cursor() as cur:
            for table in ("writes", "checkpoints"):
                cur.execute(
                    f"DELETE FROM {table} WHERE checkpoint_ns = '' AND checkpoint_id < {latest.format(table=table)}"
                )
                deleted += cur.rowcount
        if deleted:
            try:
                with self.lock:
                    self.conn.execute("VACUUM")
            except sqlite3.OperationalError as error:
                logger.warning("The checkpoints were pruned but the database could not be vacuumed now: %s", error)
        return deleted
