"""History reads at the cost of what is shown, on this project's SQLite and PostgreSQL stores.

A user's history entries are rows of LangGraph's `store` table under the prefix `history.<user>`. An index of
our own orders them by the entry's `time` as written (every entry this project writes is in UTC), then its
`order` and key, newest first: a page of the newest N, a count, and an id-prefix lookup each read only the
rows they return. The index, and the table recording how many entries the retention setting pruned per user,
are migrations of the change log (`graph.backends.collection_changes`, each store class's `CHANGE_LOG_MIGRATIONS`).

Retention (MAISTRO_HISTORY_KEEP, `graph.settings.HistoryKeep`) runs in the store's TTL sweep (`sweep_ttl`, which
LangGraph's `start_ttl_sweeper` calls every MAISTRO_TTL_SWEEP_MINUTES), at most once per
`PRUNE_INTERVAL_SECONDS`: it deletes each user's entries beyond the newest N and those older than the age kept,
and adds what it deleted to `PRUNED`, so that an undo can say why a change is gone. The same sweep moves every
user's done ToDos due for the done log there, so a user who has no turn for weeks has a short list too.
"""

import time
from datetime import datetime, timedelta, timezone
from typing import Any

import orjson

from graph.memory.store import HISTORY, namespace
from graph.settings import current_settings

HISTORY_PREFIX = f"{HISTORY}."
INDEX = "maistro_history_newest"
PRUNED = "maistro_history_pruned"
PRUNE_INTERVAL_SECONDS = 3600.0
# More entries than any history keeps: a count limit of "no limit".
NO_COUNT_LIMIT = 2**62
# Below every ISO time: an age limit of "no limit".
NO_AGE_LIMIT = ""
# Above every character an id holds: the end of the range of ids starting with a prefix.
AFTER_EVERY_CHARACTER = "\U0010ffff"


def history_prefix(user_id: str) -> str:
    """The `prefix` column of the user's history rows."""
    return ".".join(namespace(HISTORY, user_id))


def retention_bounds(now: datetime | None = None) -> tuple[int, str]:
    """How many entries per user MAISTRO_HISTORY_KEEP keeps, and the ISO time older entries are pruned below."""
    keep = current_settings().history_keep
    now = now or datetime.now(timezone.utc)
    cutoff = (now - timedelta(days=keep.days)).isoformat() if keep.days is not None else NO_AGE_LIMIT
    return (keep.count if keep.count is not None else NO_COUNT_LIMIT), cutoff


class HistorySql:
    """Mixin for this project's SQL stores: the newest history entries, their count and ids, and retention.

    A store class supplies the dialect: the `HISTORY_*` statements (named parameters `prefix`, `limit`,
    `offset`, `start`, `end`, `keep`, `cutoff`) and `_history_rows` (run one statement, return its rows);
    `_prune_history` runs the prune in one transaction.
    """

    HISTORY_NEWEST = ""
    HISTORY_COUNT = ""
    HISTORY_IDS = ""
    _history_pruned_at = float("-inf")
    # The memory kinds whose done logs the sweep keeps: the graph's, which `build_graph` gives (none: no such sweep).
    swept_kinds: tuple = ()

    def _history_rows(self, statement: str, parameters: dict[str, Any]) -> list[tuple]:
        raise NotImplementedError

    def _prune_history(self, keep: int, cutoff: str) -> None:
        raise NotImplementedError

    def newest_history_rows(self, prefix: str, limit: int, offset: int = 0) -> list[tuple[str, Any]]:
        """(key, value) of the history entries under `prefix`, newest first, `limit` of them from `offset`."""
        rows = self._history_rows(self.HISTORY_NEWEST, {"prefix": prefix, "limit": limit, "offset": offset})
        return [(key, orjson.loads(value)) for key, value in rows]

    def history_size(self, prefix: str) -> tuple[int, int]:
        """How many items the history under `prefix` holds, and how many entries retention has pruned from it."""
        ((stored, pruned),) = self._history_rows(self.HISTORY_COUNT, {"prefix": prefix})
        return stored, pruned

    def history_ids_starting(self, prefix: str, start: str, limit: int) -> list[str]:
        """Up to `limit` keys of the history under `prefix` that begin with `start`, in key order."""
        end = start + AFTER_EVERY_CHARACTER
        rows = self._history_rows(self.HISTORY_IDS, {"prefix": prefix, "start": start, "end": end, "limit": limit})
        return [key for (key,) in rows]

    def prune_history(self, now: datetime | None = None) -> None:
        """Delete every user's history entries beyond what MAISTRO_HISTORY_KEEP keeps, counting them in `PRUNED`."""
        keep, cutoff = retention_bounds(now)
        if keep == NO_COUNT_LIMIT and cutoff == NO_AGE_LIMIT:
            return
        self._prune_history(keep, cutoff)

    def sweep_ttl(self) -> int:
        """Delete expired items (LangGraph's sweep), and once per `PRUNE_INTERVAL_SECONDS` prune the history and move
        every user's done documents due for their done log there (`graph.memory.done_log.sweep_done_logs`, for
        `swept_kinds`)."""
        deleted = super().sweep_ttl()
        if time.monotonic() - self._history_pruned_at >= PRUNE_INTERVAL_SECONDS:
            self._history_pruned_at = time.monotonic()
            self.prune_history()
            if self.swept_kinds:
                from graph.memory.done_log import sweep_done_logs  # the memory code: only when a sweep runs

                sweep_done_logs(self, self.swept_kinds)
        return deleted

