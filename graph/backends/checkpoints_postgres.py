"""The PostgreSQL version of `graph.backends.checkpoints` (needs the postgres extra), sending fewer statements.

Besides the retention policy, the saver folds what `PostgresSaver` sends one row at a time into single statements: a
checkpoint's blobs and the checkpoint itself become one statement (the blobs' INSERT as a data-modifying
WITH clause), and a task's writes one multi-row INSERT. The SQL is LangGraph's own, only joined, so a turn
costs one statement per checkpoint and one per task's writes instead of one per row.
"""

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata, CheckpointTuple
from langgraph.checkpoint.postgres import PostgresSaver

from graph.backends.checkpoints import RETENTION_TABLE, CheckpointNotKept, requested_checkpoint, starts_turn
from graph.backends.langgraph_private import CursorHook
from graph.settings import current_settings

CREATE_RETENTION_TABLE = f"CREATE TABLE IF NOT EXISTS {RETENTION_TABLE} (thread_id text PRIMARY KEY, kept_from text NOT NULL)"

# One statement, so one transaction (its parts see one snapshot). {thread} is "" (every thread) or a condition
# on one thread's rows. Records each thread's oldest kept input checkpoint; deletes the older checkpoints some
# checkpoint continues, their writes, and the blobs they used that no remaining checkpoint uses.
PRUNE = f"""
WITH cutoff AS (
    SELECT thread_id, checkpoint_id AS kept_from FROM (
        SELECT thread_id, checkpoint_id,
            row_number() OVER (PARTITION BY thread_id ORDER BY checkpoint_id DESC) AS turn
        FROM checkpoints WHERE checkpoint_ns = '' AND metadata ->> 'source' = 'input' {{thread}}
    ) turns WHERE turn = %(keep)s
), recorded AS (
    INSERT INTO {RETENTION_TABLE} (thread_id, kept_from) SELECT thread_id, kept_from FROM cutoff
    ON CONFLICT (thread_id) DO UPDATE SET kept_from = GREATEST({RETENTION_TABLE}.kept_from, EXCLUDED.kept_from)
    RETURNING thread_id, kept_from
), gone AS (
    DELETE FROM checkpoints c USING recorded r
    WHERE c.thread_id = r.thread_id AND c.checkpoint_ns = '' AND c.checkpoint_id < r.kept_from AND EXISTS (
        SELECT 1 FROM checkpoints child WHERE child.thread_id = c.thread_id AND child.checkpoint_ns = ''
        AND child.parent_checkpoint_id = c.checkpoint_id
    )
    RETURNING c.thread_id, c.checkpoint_id, c.checkpoint -> 'channel_versions' AS versions
), gone_writes AS (
    DELETE FROM checkpoint_writes w USING gone g
    WHERE w.thread_id = g.thread_id AND w.checkpoint_ns = '' AND w.checkpoint_id = g.checkpoint_id
), released AS (
    SELECT DISTINCT g.thread_id, v.key AS channel, v.value AS version FROM gone g, jsonb_each_text(g.versions) v
)
DELETE FROM checkpoint_blobs b USING released r
WHERE b.thread_id = r.thread_id AND b.checkpoint_ns = '' AND b.channel = r.channel AND b.version = r.version
AND NOT EXISTS (
    SELECT 1 FROM checkpoints c
    WHERE c.thread_id = b.thread_id AND c.checkpoint_ns = '' AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version
    AND NOT EXISTS (SELECT 1 FROM gone g WHERE g.thread_id = c.thread_id AND g.checkpoint_id = c.checkpoint_id)
)
"""

# After LangGraph's own `prune`: "keep_latest" kept each thread's latest checkpoint only; "delete" left nothing.
_PRUNED_TO_LATEST = f"""
INSERT INTO {RETENTION_TABLE} (thread_id, kept_from)
SELECT thread_id, max(checkpoint_id) FROM checkpoints WHERE checkpoint_ns = '' AND thread_id = ANY(%s) GROUP BY thread_id
ON CONFLICT (thread_id) DO UPDATE SET kept_from = GREATEST({RETENTION_TABLE}.kept_from, EXCLUDED.kept_from)
"""
_FORGET_RETENTION = f"DELETE FROM {RETENTION_TABLE} WHERE thread_id = ANY(%s)"
# Every row of the threads %(threads)s, in one statement (so one transaction), counted by table.
_FORGET_THREADS = f"""
WITH c AS (DELETE FROM checkpoints WHERE thread_id = ANY(%(threads)s::text[]) RETURNING 1),
b AS (DELETE FROM checkpoint_blobs WHERE thread_id = ANY(%(threads)s::text[]) RETURNING 1),
w AS (DELETE FROM checkpoint_writes WHERE thread_id = ANY(%(threads)s::text[]) RETURNING 1),
r AS (DELETE FROM {RETENTION_TABLE} WHERE thread_id = ANY(%(threads)s::text[]) RETURNING 1)
SELECT (SELECT count(*) FROM c) AS checkpoints, (SELECT count(*) FROM b) AS checkpoint_blobs,
    (SELECT count(*) FROM w) AS checkpoint_writes, (SELECT count(*) FROM r) AS {RETENTION_TABLE}
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


class PruningPostgresSaver(CursorHook, PostgresSaver):
    """A `PostgresSaver` that keeps the last `keep_turns` turns of each thread (see `graph.backends.checkpoints`).

    Each prune is one statement (so one transaction): checkpoints, their writes, and the blobs that no kept
    checkpoint of the thread refers to.
    """

    def __init__(self, conn: Any, *, keep_turns: int | None = None, **kwargs: Any) -> None:
        super().__init__(conn, **kwargs)
        self.keep_turns = current_settings().keep_turns if keep_turns is None else keep_turns

    def setup(self) -> None:
        """LangGraph's tables, and the table recording how far each thread was pruned."""
        super().setup()
        with self.sql_cursor() as cur:
            cur.execute(CREATE_RETENTION_TABLE)

    def put(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> RunnableConfig:
        """Save the checkpoint; when it starts a turn, then delete what the thread keeps no longer."""
        saved = super().put(config, checkpoint, metadata, new_versions)
        if starts_turn(config, metadata):
            self._prune("AND thread_id = %(thread)s", {"thread": str(config["configurable"]["thread_id"])})
        return saved

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """LangGraph's `get_tuple`; raises `CheckpointNotKept` for a checkpoint the retention policy deleted."""
        found = super().get_tuple(config)
        if found is None and (requested := requested_checkpoint(config)):
            thread_id, checkpoint_id = requested
            with self.sql_cursor() as cur:
                cur.execute(f"SELECT kept_from FROM {RETENTION_TABLE} WHERE thread_id = %s", (thread_id,))
                row = cur.fetchone()
            if row is not None and checkpoint_id < row["kept_from"]:
                raise CheckpointNotKept(thread_id, checkpoint_id, self.keep_turns)
        return found

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints, blobs and writes, and its retention record."""
        super().delete_thread(thread_id)
        with self.sql_cursor() as cur:
            cur.execute(f"DELETE FROM {RETENTION_TABLE} WHERE thread_id = %s", (str(thread_id),))

    def forget_threads(self, thread_ids: Sequence[str]) -> dict[str, int]:
        """Delete the threads' checkpoints, blobs, writes and retention records in one statement; returns the rows
        deleted, by table."""
        with self.sql_cursor() as cur:
            cur.execute(_FORGET_THREADS, {"threads": [str(thread_id) for thread_id in thread_ids]})
            return dict(cur.fetchone())

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """LangGraph's `prune`, with the threads' retention records following it (see `get_tuple`)."""
        super().prune(thread_ids, strategy=strategy)
        threads = [str(thread_id) for thread_id in thread_ids]
        with self.sql_cursor() as cur:
            cur.execute(_PRUNED_TO_LATEST if strategy == "keep_latest" else _FORGET_RETENTION, (threads,))

    @contextmanager
    def sql_cursor(self, *, pipeline: bool = False) -> Iterator[Any]:
        """LangGraph's cursor; for a pipelined group (a checkpoint, a task's writes), one that joins the rows."""
        with super().sql_cursor(pipeline=pipeline) as cur:
            if not pipeline:
                yield cur
                return
            joining = JoiningCursor(cur)
            yield joining
            joining.flush()

    def prune_all(self) -> None:
        """Apply the retention policy to every thread."""
        self._prune("", {})

    def _prune(self, thread: str, params: dict[str, Any]) -> None:
        with self.sql_cursor() as cur:
            cur.execute(PRUNE.format(thread=thread), {**params, "keep": self.keep_turns})
