"""Real Aegra servers for tests (`aegra serve`, from aegra.json), on a fresh PostgreSQL database, with a Redis.

Aegra needs Python >= 3.12 and lives in its own virtualenv, which `testing.aegra_venv` finds or builds. The
server loads this tree's code (PYTHONPATH) and runs from a scratch folder, as `langgraph dev` does in
`testing.langgraph_server`, with the same offline environment. Several instances on one database
and one Redis (`redis_server`) are what a deployment behind a load balancer runs.
"""

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from testing.aegra_venv import aegra_venv
from testing.helpers import free_port
from testing.langgraph_server import ROOT, langgraph_dev, log_tail, scratch_config, stop, wait_until_ready
from testing.postgres_server import create_database
from testing.system_programs import system_program

HEALTH = "/health"


@contextmanager
def redis_server(directory: Path) -> Iterator[str]:
    """Debian's `redis-server` on a free loopback port, nothing saved to disk; yield its URL."""
    port = free_port()
    log = directory / f"redis-{port}.log"
    command = [system_program("redis-server"), "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no",
               "--dir", str(directory), "--logfile", str(log)]
    process = subprocess.Popen(command, start_new_session=True)
    try:
        for _ in range(100):
            if process.poll() is not None:
                pytest.fail(f"redis-server exited with code {process.returncode}:\n{log_tail(log)}")
            if subprocess.run([system_program("redis-cli"), "-p", str(port), "ping"], capture_output=True, text=True).stdout.strip() == "PONG":
                break
            time.sleep(0.1)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(process)


@contextmanager
def embedding_server(directory: Path, port: int | None = None) -> Iterator[str]:
    """The project's embedding server (`graph.backends.embedding_server`) on `port` (default: a free one); yield its URL."""
    port = port or free_port()
    log = directory / f"embeddings-{port}.log"
    command = [sys.executable, "-m", "graph.backends.embedding_server", "--port", str(port)]
    with log.open("wb") as output:
        process = subprocess.Popen(command, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_ready(process, url, log, "/")
        yield url
    finally:
        stop(process)


def start_aegra(directory: Path, env: dict[str, str], name: str) -> tuple[subprocess.Popen, str, Path]:
    """Start `aegra serve` on a free port with the scratch copy of aegra.json in `directory`: (process, URL, log)."""
    config = directory / "aegra.json"
    if not config.exists():
        scratch_config(directory, "aegra.json")
    port = free_port()
    log = directory / f"{name}.log"
    command = [str(aegra_venv() / "bin" / "aegra"), "serve", "--host", "127.0.0.1", "--port", str(port), "--config", str(config)]
    server_env = {**env, "PYTHONPATH": str(ROOT), "LOG_LEVEL": "WARNING"}
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, cwd=directory, env=server_env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    return process, f"http://127.0.0.1:{port}", log


@contextmanager
def aegra_instances(directory: Path, env: dict[str, str], database_url: str, redis_url: str = "",
                    count: int = 1) -> Iterator[list[str]]:
    """`count` Aegra instances sharing the database, the embedding server (aegra.json's `store.index`) and the
    Redis, which more than one needs; yield their URLs. The first one runs the migrations before the others start.
    """
    assert count == 1 or redis_url, "several instances need a Redis"
    env = {**env, "DATABASE_URL": database_url}
    if redis_url:
        env.update(REDIS_BROKER_ENABLED="true", REDIS_URL=redis_url)
    with ExitStack() as running:
        env["OLLAMA_HOST"] = running.enter_context(embedding_server(directory))
        urls = []
        for number in range(count):
            process, url, log = start_aegra(directory, env, f"aegra-{number}")
            running.callback(stop, process)
            wait_until_ready(process, url, log, HEALTH)
            urls.append(url)
        yield urls


SERVER_KINDS = ("langgraph-dev", "aegra")


@contextmanager
def api_server(kind: str, directory: Path, env: dict[str, str], postgres_url: str) -> Iterator[str]:
    """One server of `kind` (`langgraph-dev`, or `aegra` on a fresh database of `postgres_url`); yield its URL.

    Test modules parametrize their server over `SERVER_KINDS`, so that one test checks both servers.
    """
    if kind == "aegra":
        with aegra_instances(directory, env, create_database(postgres_url)) as (url,):
            yield url
    else:
        with langgraph_dev(directory, env) as url:
            yield url
