"""The PostgreSQL version of `graph.backends.checkpoints` (needs the postgres extra), sending fewer statements.

Besides pruning, the saver folds what `PostgresSaver` sends one row at a time into single statements: a
checkpoint's blobs and the checkpoint itself become one statement (the blobs' INSERT as a data-modifying
WITH clause), and a task's writes one multi-row INSERT. The SQL is LangGraph's own, only joined, so a turn
costs one statement per checkpoint and one per task's writes instead of one per row.
"""

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.postgres import PostgresSaver

from graph.backends.checkpoints import turn_start_parent

_PRUNE_THREAD = """
WITH gone_writes AS (
    DELETE FROM checkpoint_writes WHERE thread_id = %(thread)s AND checkpoint_ns = '' AND checkpoint_id < %(keep)s
), gone_checkpoints AS (
    DELETE FROM checkpoints WHERE thread_id = %(thread)s AND checkpoint_ns = '' AND checkpoint_id < %(keep)s
)
DELETE FROM checkpoint_blobs b
WHERE b.thread_id = %(thread)s AND b.checkpoint_ns = '' AND NOT EXISTS (
    SELECT 1 FROM checkpoints c
    WHERE c.thread_id = b.thread_id AND c.checkpoint_ns = '' AND c.checkpoint_id >= %(keep)s
    AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version
)
"""

_PRUNE_ALL = """
WITH latest AS (
    SELECT thread_id, max(checkpoint_id) AS keep FROM checkpoints WHERE checkpoint_ns = '' GROUP BY thread_id
), gone_writes AS (
    DELETE FROM checkpoint_writes w USING latest l
    WHERE w.thread_id = l.thread_id AND w.checkpoint_ns = '' AND w.checkpoint_id < l.keep
), gone_checkpoints AS (
    DELETE FROM checkpoints c USING latest l
    WHERE c.thread_id = l.thread_id AND c.checkpoint_ns = '' AND c.checkpoint_id < l.keep RETURNING 1
)
DELETE FROM checkpoint_blobs b
WHERE b.checkpoint_ns = '' AND b.thread_id IN (SELECT thread_id FROM latest) AND NOT EXISTS (
    SELECT 1 FROM checkpoints c JOIN latest l ON c.thread_id = l.thread_id AND c.checkpoint_id = l.keep
    WHERE c.thread_id = b.thread_id AND c.checkpoint_ns = ''
    AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version
)
"""


_VALUES = re.compile(r"VALUES\s*(\([^()]*\))")


def multi_row(statement: str, rows: int) -> str | None:
    """An `INSERT ... VALUES (...)` statement for `rows` rows at once, or None when it has another shape."""
    found = list(_VALUES.finditer(statement))
    if len(found) != 1:
        return None
    group = found[0].group(1)
    return statement[: found[0].start(1)] + ", ".join([group] * rows) + statement[found[0].end(1) :]


class JoiningCursor:
    """A cursor that holds back `executemany` and sends it joined: with the next `execute`, or on its own at the end."""

    def __init__(self, cursor: Any) -> None:
        self.cursor = cursor
        self.held: tuple[str, list[Sequence[Any]]] | None = None

    def executemany(self, statement: str, rows: Any) -> None:
        """Hold the rows (sending what was held before)."""
        self.flush()
        self.held = (statement, list(rows))

    def execute(self, statement: str, params: Sequence[Any] = ()) -> Any:
        """Run a statement, with the held rows' INSERT as its WITH clause when it is a single INSERT."""
        if self.held is not None and statement.lstrip().upper().startswith("INSERT"):
            held, rows = self.held
            joined = multi_row(held, len(rows)) if rows else None
            if joined is not None:
                self.held = None
                flat = [value for row in rows for value in row]
                return self.cursor.execute(f"WITH held AS ({joined.strip().rstrip(';')}) {statement}", [*flat, *params])
        self.flush()
        return self.cursor.execute(statement, params)

    def flush(self) -> None:
        """Send the held rows as one multi-row statement (or one by one when the statement cannot be joined)."""
        if self.held is None:
            return
        statement, rows = self.held
        self.held = None
        # An upsert may not touch one row twice in a statement: rows with the same key go one by one.
        repeated = "DO UPDATE" in statement and len({tuple(row[:-2]) for row in rows}) < len(rows)
        joined = multi_row(statement, len(rows)) if rows and not repeated else None
        if joined is not None:
            self.cursor.execute(joined, [value for row in rows for value in row])
        elif rows:
            self.cursor.executemany(statement, rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cursor, name)


class PruningPostgresSaver(PostgresSaver):
    """A `PostgresSaver` that deletes a thread's older checkpoints when a turn starts, and every thread's on open.

    Each prune is one statement (so one transaction): checkpoints, their writes, and the blobs that no kept
    checkpoint of the thread refers to.
    """

    def put(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> RunnableConfig:
        """Save the checkpoint; for a turn's input checkpoint, then delete what the turn no longer needs."""
        saved = super().put(config, checkpoint, metadata, new_versions)
        if parent := turn_start_parent(config, metadata):
            with self._cursor() as cur:
                cur.execute(_PRUNE_THREAD, {"thread": str(config["configurable"]["thread_id"]), "keep": parent})
        return saved

    @contextmanager
    def _cursor(self, *, pipeline: bool = False) -> Iterator[Any]:
        """LangGraph's cursor; for a pipelined group (a checkpoint, a task's writes), one that joins the rows."""
        with super()._cursor(pipeline=pipeline) as cur:
            if not pipeline:
                yield cur
                return
            joining = JoiningCursor(cur)
            yield joining
            joining.flush()

    def prune_all(self) -> None:
        """Cut every thread to its latest checkpoint."""
        with self._cursor() as cur:
            cur.execute(_PRUNE_ALL)
