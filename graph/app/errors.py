"""One sentence for a storage problem the user can fix (a read-only or blocked data directory, a damaged
database, a full disk), so the CLI can say what is wrong and what to do instead of printing a traceback.

Errors are recognised by what they are, not by where they were raised: SQLite errors by their result code
(`sqlite_errorname`, set by `sqlite3` and `pysqlite3`), OS errors only when they name a path of the data
directory (any such error: a name too long, a path the system refuses, a broken link...). Anything else is not
a storage problem (`storage_problem` returns None) and stays a bug to see.
"""

import errno
import os
from pathlib import Path

from graph.backends.sqlite import DATABASE_FILE

CHOOSE_ANOTHER = "choose another with --data-dir or MAISTRO_DATA_DIR"
DAMAGED = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
NOT_WRITABLE = ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM")
FULL = ("SQLITE_FULL",)
BUSY = ("SQLITE_BUSY", "SQLITE_LOCKED")


def _absolute(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.abspath(path))


def _blocking_file(directory: Path) -> Path | None:
    """The file standing where `directory` or one of its parents should be, if any."""
    return next((path for path in (directory, *directory.parents) if path.exists() and not path.is_dir()), None)


def _sqlite_problem(name: str, error: BaseException, directory: Path) -> str | None:
    if name.startswith(DAMAGED):
        return (
            f"The database {directory / DATABASE_FILE} is damaged ({error}): move it (with its -wal and -shm files) "
            "aside to start fresh, "
            "or copy a backup of it into another directory and run `maistro export --data-dir DIR` there to get "
            "your memories back."
        )
    if name.startswith(NOT_WRITABLE):
        return (
            f"Cannot write to the data directory {directory} ({error}): make it and {DATABASE_FILE} writable, "
            f"or {CHOOSE_ANOTHER}."
        )
    if name.startswith(FULL):
        return f"The disk holding the data directory {directory} is full: free some space and try again."
    if name.startswith(BUSY):
        return f"The database {directory / DATABASE_FILE} is busy: another process holds it; try again in a moment."
    return None


def _broken_link(directory: Path) -> Path | None:
    """The symbolic link standing where `directory` or one of its parents should be that leads to no directory."""
    return next((path for path in (directory, *directory.parents) if path.is_symlink() and not path.is_dir()), None)


def _os_problem(error: OSError, directory: Path) -> str | None:
    """Any OS error on a path of the data directory, in one sentence; None for an error on another path."""
    paths = [_absolute(name) for name in (error.filename, error.filename2) if name]
    if not any(path.is_relative_to(directory) or directory.is_relative_to(path) for path in paths):
        return None
    if isinstance(error, (NotADirectoryError, FileExistsError)) and (blocking := _blocking_file(directory)):
        return (
            f"The data directory {directory} cannot be used: {blocking} is a file, not a directory; {CHOOSE_ANOTHER}."
        )
    if (isinstance(error, FileExistsError) or error.errno == errno.ELOOP) and (link := _broken_link(directory)):
        return (
            f"The data directory {directory} cannot be used: {link} is a symbolic link that leads to no directory; "
            f"{CHOOSE_ANOTHER}."
        )
    if isinstance(error, PermissionError) or error.errno == errno.EROFS:
        return (
            f"Cannot write to the data directory {directory} ({error.strerror}: {paths[0]}): make it writable, "
            f"or {CHOOSE_ANOTHER}."
        )
    if error.errno == errno.ENOSPC:
        return f"The disk holding the data directory {directory} is full: free some space and try again."
    where = "" if paths[0] == directory else f": {paths[0]}"
    return f"The data directory {directory} cannot be used ({error.strerror or error}{where}); {CHOOSE_ANOTHER}."


def storage_problem(error: BaseException, data_dir: Path) -> str | None:
    """One sentence saying what is wrong with the SQLite storage in `data_dir` and what to do, or None when
    `error` is not a storage problem."""
    directory = _absolute(data_dir)
    name = getattr(error, "sqlite_errorname", None)
    if isinstance(name, str):
        return _sqlite_problem(name, error, directory)
    if isinstance(error, OSError):
        return _os_problem(error, directory)
    return None
