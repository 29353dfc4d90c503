"""A real `langgraph dev` server for tests: free port, scratch folder, offline environment, the model stub.

The server runs in a scratch directory: the in-memory runtime keeps its data in `.langgraph_api/` under the
working directory (flushed every few seconds, reloaded at start), so running it in the project folder would
mix test data with the developer's own, and a developer's `.env` could point the test at a real endpoint.
Test modules import the `script` and `stub` fixtures to get one stub per module.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.schema import StreamPart

from graph.names import AGENT_NAME
from testing.helpers import free_port
from testing.openai_stub import OpenAIStub

ROOT = Path(__file__).resolve().parents[1]
STARTUP_SECONDS = 90
STOP_SECONDS = 15
LOG_TAIL_CHARS = 4000
SCRUBBED_PREFIXES = ("OPENAI_", "LANGSMITH_", "LANGCHAIN_", "MAISTRO_")


def langgraph_executable() -> str:
    """The `langgraph` CLI of the running Python's environment, else the one on PATH."""
    beside = Path(sys.executable).with_name("langgraph")
    found = str(beside) if beside.exists() else shutil.which("langgraph")
    assert found, 'the langgraph CLI is missing: pip install -e ".[dev]"'
    return found


def scratch_config(directory: Path, name: str = "langgraph.json") -> Path:
    """The project's server config (`name`), runnable from `directory`: paths made absolute, `env` read from there."""
    spec = json.loads((ROOT / name).read_text())
    spec["dependencies"] = [str((ROOT / dependency).resolve()) for dependency in spec["dependencies"]]
    spec["graphs"] = {graph_id: {**graph, "path": str(ROOT / graph["path"])} for graph_id, graph in spec["graphs"].items()}
    index = spec["store"].get("index") or {}
    if ".py:" in index.get("embed", ""):
        index["embed"] = str(ROOT / index["embed"])
    spec["auth"]["path"] = str(ROOT / spec["auth"]["path"])
    spec["http"]["app"] = str(ROOT / spec["http"]["app"])
    spec["env"] = str(directory / spec["env"])
    path = directory / name
    path.write_text(json.dumps(spec))
    return path


def offline_environment(**settings: str) -> dict[str, str]:
    """This process's environment without model or tracing settings, plus `settings`; nothing goes online."""
    env = {name: value for name, value in os.environ.items() if not name.startswith(SCRUBBED_PREFIXES)}
    env.update(
        MAISTRO_TIMEZONE="America/Los_Angeles",
        MAISTRO_CALL_MODE="tools",  # the stub scripts tool-calling models (tests/conftest.py's no_real_model)
        LANGSMITH_TRACING="false",
        LANGGRAPH_NO_VERSION_CHECK="true",
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        **settings,
    )
    return env


def log_tail(log: Path) -> str:
    """The end of the server log, for failure messages."""
    return log.read_text(errors="replace")[-LOG_TAIL_CHARS:] if log.exists() else "(no log)"


def wait_until_ready(process: subprocess.Popen, url: str, log: Path, health: str = "/ok") -> None:
    """Poll the health check until the server answers; fail with the log tail if it exits or takes too long."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the server exited with code {process.returncode}:\n{log_tail(log)}")
        try:
            with urllib.request.urlopen(f"{url}{health}", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    pytest.fail(f"the server did not answer {url}{health} within {STARTUP_SECONDS} s:\n{log_tail(log)}")


def stop(process: subprocess.Popen) -> None:
    """Stop the server's process group: SIGTERM, then SIGKILL if it does not exit in time."""
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(STOP_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(STOP_SECONDS)


def start_server(
    directory: Path, env: dict[str, str], flags: tuple[str, ...] = (), *, reload: bool = False
) -> tuple[subprocess.Popen, str, Path]:
    """Start `langgraph dev --no-browser --no-reload [flags]` (without `--no-reload` if `reload`) from `directory` on
    a free port: (process, URL, log).

    The config is the scratch copy of langgraph.json in `directory`, made unless a test already made (and changed) it.
    """
    config = directory / "langgraph.json"
    if not config.exists():
        scratch_config(directory)
    port = free_port()
    log = directory / "server.log"
    command = [langgraph_executable(), "dev", "--no-browser", *([] if reload else ["--no-reload"]), "--port", str(port),
               "--config", str(config), *flags]
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, cwd=directory, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    return process, f"http://127.0.0.1:{port}", log


def refused_start(directory: Path, env: dict[str, str], *, reload: bool = False) -> str:
    """Start a server that must refuse to run (`--reload` on or off): wait for it to exit with an error, and return
    its log."""
    process, _, log = start_server(directory, env, reload=reload)
    try:
        process.wait(STARTUP_SECONDS)
    except subprocess.TimeoutExpired:
        stop(process)
        pytest.fail(f"langgraph dev kept running:\n{log_tail(log)}")
    assert process.returncode != 0
    return log.read_text(errors="replace")


def token_environment(directory: Path, stub: OpenAIStub, tokens: dict[str, str], **settings: str) -> dict[str, str]:
    """The environment of a server with one token per user (`{user: token}`), its model calls going to `stub`."""
    return offline_environment(
        OPENAI_BASE_URL=stub.base_url,
        OPENAI_API_KEY="test",
        MAISTRO_DATA_DIR=str(directory / "data"),
        MAISTRO_AUTH_TOKENS=",".join(f"{token}:{user}" for user, token in tokens.items()),
        **settings,
    )


@contextmanager
def token_server(directory: Path, stub: OpenAIStub, tokens: dict[str, str], **settings: str) -> Iterator[str]:
    """A `langgraph dev` with one token per user (`{user: token}`), its model calls going to `stub`; yield its URL."""
    with langgraph_dev(directory, token_environment(directory, stub, tokens, **settings)) as url:
        yield url


@contextmanager
def langgraph_dev(directory: Path, env: dict[str, str], flags: tuple[str, ...] = ()) -> Iterator[str]:
    """Run `langgraph dev --no-browser --no-reload [flags]` from `directory` on a free port; yield its URL, then stop it."""
    process, url, log = start_server(directory, env, flags)
    try:
        wait_until_ready(process, url, log)
        yield url
    finally:
        stop(process)


@dataclass
class Turn:
    """What one streamed run sent back."""

    parts: list[StreamPart] = field(default_factory=list)

    @property
    def messages(self) -> list[dict]:
        """The thread's messages in the last `values` event."""
        return [part.data for part in self.parts if part.event == "values"][-1]["messages"]

    @property
    def reply(self) -> dict:
        """The final assistant message of the run."""
        return self.messages[-1]

    def streamed(self) -> list[dict]:
        """Every message state sent in `messages/partial` events (token-by-token streaming), subgraphs included."""
        return [
            message
            for part in self.parts
            if part.event.split("|")[0] == "messages/partial"
            for message in part.data
        ]

    def partials(self, message_id: str) -> list[str]:
        """The successive contents of one message as it streamed."""
        return [message.get("content") or "" for message in self.streamed() if message.get("id") == message_id]


def stream_run(client: SyncLangGraphClient, thread_id: str, text: str, assistant_id: str = AGENT_NAME, **run) -> Turn:
    """Stream one user message with `stream_mode` values and messages, subgraphs included as Studio does."""
    return Turn(
        list(
            client.runs.stream(
                thread_id,
                assistant_id,
                input={"messages": [{"role": "user", "content": text}]},
                stream_mode=["values", "messages"],
                stream_subgraphs=True,
                **run,
            )
        )
    )


def play(client: SyncLangGraphClient, thread_id: str, text: str, **run) -> Turn:
    """Stream one user message and fail on an error event."""
    turn = stream_run(client, thread_id, text, **run)
    errors = [part.data for part in turn.parts if part.event == "error"]
    assert not errors, errors
    return turn


def new_thread(client: SyncLangGraphClient) -> str:
    """Create a thread on the server and return its id."""
    return client.threads.create()["thread_id"]
