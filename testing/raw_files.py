"""Where a text lies in a database's raw files: a SQLite file, its write-ahead log and its free pages, or every
file of a PostgreSQL data directory. Forget tests look for a forgotten text here rather than through SQL."""

from pathlib import Path

import psycopg

from graph.backends.sqlite import DATABASE_FILE


def copies(path: Path, text: str) -> int:
    """How many times `text` (UTF-8) occurs in the file at `path`; 0 when there is no such file (any more)."""
    try:
        return path.read_bytes().count(text.encode())
    except FileNotFoundError:
        return 0


def sqlite_files(data_dir: Path) -> dict[str, Path]:
    """The SQLite database file of a data directory and its write-ahead log, by role."""
    database = Path(data_dir) / DATABASE_FILE
    return {"main": database, "wal": database.with_name(f"{DATABASE_FILE}-wal")}


def sqlite_copies(data_dir: Path, text: str) -> dict[str, int]:
    """Copies of `text` in the main database file, its write-ahead log, and its free pages (the freelist's trunk and
    leaf pages, read from the file's header), by role."""
    files = sqlite_files(data_dir)
    found = {role: copies(path, text) for role, path in files.items()}
    found["freelist"] = sum(page.count(text.encode()) for page in freelist_pages(files["main"]))
    return found


def freelist_pages(database: Path) -> list[bytes]:
    """The free pages of a SQLite database file as stored in it: every trunk page of the freelist and every leaf page
    it lists (the file format: the page size at byte 16 of the header, the first trunk page at 32, the count at 36;
    a trunk page holds the next trunk's number, its leaf count and the leaves' numbers)."""
    data = database.read_bytes()
    size = int.from_bytes(data[16:18], "big")
    size = 65536 if size == 1 else size

    def page(number: int) -> bytes:
        return data[(number - 1) * size : number * size]

    pages, trunk = [], int.from_bytes(data[32:36], "big")
    while trunk:
        content = page(trunk)
        leaves = int.from_bytes(content[4:8], "big")
        pages.append(content)
        pages.extend(page(int.from_bytes(content[8 + 4 * n : 12 + 4 * n], "big")) for n in range(leaves))
        trunk = int.from_bytes(content[:4], "big")
    assert len(pages) == int.from_bytes(data[36:40], "big"), "the freelist holds as many pages as the header says"
    return pages


def postgres_copies(server_url: str, text: str) -> dict[str, int]:
    """Copies of `text` in the files of the PostgreSQL server's data directory, by path relative to it, after a
    checkpoint wrote every changed page to them (the test server's superuser asks for both)."""
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        directory = Path(conn.execute("SHOW data_directory").fetchone()[0])
    found = {}
    for path in directory.rglob("*"):
        if path.is_file() and (count := copies(path, text)):
            found[path.relative_to(directory).as_posix()] = count
    return found
