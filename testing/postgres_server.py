"""A throwaway PostgreSQL server on 127.0.0.1 for tests, from the `pgserver` wheel's binaries (with pgvector).

`python -m testing.postgres_server start DIR` prints a connection URL (CI exports it as
MAISTRO_TEST_DATABASE_URL); `python -m testing.postgres_server stop DIR` stops it. Tests call `start`
themselves when no URL is given. PostgreSQL refuses to run as root, so under root the server runs as the
system user `pgserver`, created if missing.
"""

import importlib.util
import itertools
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg

from testing.helpers import free_port

# Located without importing pgserver, whose import warns about XDG_RUNTIME_DIR.
BIN = Path(importlib.util.find_spec("pgserver").submodule_search_locations[0]) / "pginstall" / "bin"
SYSTEM_USER = "pgserver"
_database_numbers = itertools.count()


def _ensure_system_user() -> None:
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", SYSTEM_USER], check=True)


def _as_server_user(command: list[str]) -> list[str]:
    return ["runuser", "-u", SYSTEM_USER, "--", *command] if os.geteuid() == 0 else command


def _binaries(directory: Path) -> Path:
    """Where the server's programs run from: under root, a copy in `directory` that the server user can reach.

    The wheel may sit in a folder only root may enter (a clone made with `mktemp -d` is mode 700).
    """
    if os.geteuid() != 0:
        return BIN
    site, copy = BIN.parents[2], directory / "wheel"
    if not copy.exists():
        # The programs find their libraries at $ORIGIN/../../../pgserver.libs: keep that layout.
        for part in ("pgserver/pginstall", "pgserver.libs"):
            shutil.copytree(site / part, copy / part, symlinks=True)
    return copy / "pgserver" / "pginstall" / "bin"


def start(directory: Path) -> str:
    """Create a cluster in `directory`, start it on a free loopback port, and return its URL."""
    directory = Path(directory)
    data = directory / "pgdata"
    data.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        _ensure_system_user()
        shutil.chown(data, SYSTEM_USER)
        directory.chmod(0o755)
    bin_dir = _binaries(directory)
    subprocess.run(
        _as_server_user([str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"]),
        check=True,
        capture_output=True,
    )
    port = free_port()
    options = f"-h 127.0.0.1 -p {port} -k {data} -c max_connections=200 -c fsync=off"
    subprocess.run(
        _as_server_user([str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(data / "log"), "-w", "start"]),
        check=True,
        capture_output=True,
    )
    return f"postgresql://postgres@127.0.0.1:{port}/postgres"


def create_database(server_url: str) -> str:
    """Create a new, empty database on the server at `server_url` and return its URL."""
    name = f"maistro_test_{os.getpid()}_{next(_database_numbers)}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + f"/{name}"


def stop(directory: Path) -> None:
    """Stop the server started in `directory`."""
    data = Path(directory) / "pgdata"
    subprocess.run(
        _as_server_user([str(_binaries(Path(directory)) / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
        check=True,
        capture_output=True,
    )


if __name__ == "__main__":
    action, folder = sys.argv[1:3]
    if action == "start":
        print(start(Path(folder)))
    else:
        stop(Path(folder))
