"""One chat per thread: a lock a chat holds on its thread, so two chats never write one thread at once.

Two processes continuing one thread both read its last checkpoint and both write a successor; the later
write wins and the other's turns vanish from the thread. A chat therefore holds its thread's lock for as
long as it uses the thread, and a chat that finds the lock taken starts a new thread instead.

- SQLite: a file lock per thread (`filelock`, `flock` on Unix) under the data directory, so every process
  on this machine that uses the database sees it.
- PostgreSQL: a session-level advisory lock keyed on the thread id, on a connection of its own, so chats
  on other machines sharing the database see it too (a file lock would not).

The operating system or the database server releases a lock when its process or connection ends, even
after a crash.
"""

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from filelock import FileLock, Timeout

from graph.settings import current_settings

LOCK_DIRECTORY = "thread-locks"


def _digest(thread_id: str, size: int) -> bytes:
    return hashlib.blake2b(thread_id.encode("utf-8"), digest_size=size, person=b"maistro-thread").digest()


class ThreadLocks(Protocol):
    """Locks on threads, held by this process until released or closed."""

    def acquire(self, thread_id: str) -> bool:
        """Take the thread's lock without waiting; False when another chat holds it."""

    def release(self, thread_id: str) -> None:
        """Let go of the thread's lock (nothing happens when it is not held)."""

    def close(self) -> None:
        """Release every lock held."""


class FileThreadLocks:
    """Thread locks as lock files in `<data dir>/thread-locks/`, one per thread (named by a hash of its id)."""

    def __init__(self, data_dir: Path) -> None:
        """Keep the lock files under `data_dir`."""
        self.directory = Path(data_dir) / LOCK_DIRECTORY
        self._held: dict[str, FileLock] = {}

    def acquire(self, thread_id: str) -> bool:
        """Take the thread's lock file without waiting; False when another chat holds it."""
        if thread_id in self._held:
            return True
        self.directory.mkdir(parents=True, exist_ok=True)
        lock = FileLock(self.directory / f"{_digest(thread_id, 16).hex()}.lock", thread_local=False)
        try:
            lock.acquire(blocking=False)
        except Timeout:
            return False
        self._held[thread_id] = lock
        return True

    def release(self, thread_id: str) -> None:
        """Let go of the thread's lock file."""
        lock = self._held.pop(thread_id, None)
        if lock is not None:
            lock.release()

    def close(self) -> None:
        """Release every lock file held."""
        for thread_id in list(self._held):
            self.release(thread_id)


class PostgresThreadLocks:
    """Thread locks as PostgreSQL session-level advisory locks, on one connection kept open for them."""

    def __init__(self, url: str) -> None:
        """Connect to the database at `url`."""
        import psycopg

        self._conn = psycopg.connect(url, autocommit=True)
        self._held: set[str] = set()

    @staticmethod
    def key(thread_id: str) -> int:
        """The advisory lock key of a thread: a signed 64-bit hash of its id."""
        return int.from_bytes(_digest(thread_id, 8), "big", signed=True)

    def acquire(self, thread_id: str) -> bool:
        """Take the thread's advisory lock without waiting; False when another session holds it."""
        if thread_id in self._held:
            return True
        (locked,) = self._conn.execute("SELECT pg_try_advisory_lock(%s)", (self.key(thread_id),)).fetchone()
        if locked:
            self._held.add(thread_id)
        return bool(locked)

    def release(self, thread_id: str) -> None:
        """Let go of the thread's advisory lock."""
        if thread_id in self._held:
            self._held.discard(thread_id)
            self._conn.execute("SELECT pg_advisory_unlock(%s)", (self.key(thread_id),))

    def close(self) -> None:
        """Release every advisory lock held, then close the connection."""
        if not self._conn.closed:
            self._conn.execute("SELECT pg_advisory_unlock_all()")
            self._conn.close()
        self._held.clear()


@contextmanager
def open_thread_locks(data_dir: Path | str | None = None, database_url: str | None = None) -> Iterator[ThreadLocks]:
    """The thread locks for the storage that `open_storage` would open with the same arguments; closed on exit."""
    url = current_settings().database_url if database_url is None else database_url
    if url:
        locks: ThreadLocks = PostgresThreadLocks(url)
    else:
        from graph.backends.storage import default_data_dir

        locks = FileThreadLocks(Path(data_dir) if data_dir else default_data_dir())
    try:
        yield locks
    finally:
        locks.close()
