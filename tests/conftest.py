"""Shared fixtures: a scripted model and the durable graph on a temporary data directory; and the fast tier.

`pytest -m "not slow"` runs the in-process tests on SQLite. A test is marked slow here, by rule rather than by
hand, when it needs PostgreSQL or a browser (`SLOW_FIXTURES`, anywhere in its fixture closure), runs on a
PostgreSQL parametrization (`agent[postgres]`, any parameter `"postgres"`), or is named in `SLOW_TESTS` with its
reason (`langgraph dev`, the `maistro` CLI, crash workers, fresh interpreters, the embedding model).
`refuse_processes_and_postgres` holds every other test to that: one that starts a process or opens a PostgreSQL
connection fails, in every run."""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg
import pytest

from graph import build_graph, close_graph
from graph.backends.context_window import forget_windows
from testing import postgres_server
from testing.openai_stub import OpenAIStub
from testing.scripted_model import ScriptedChatModel
from testing.stub_script import Script

pytest_plugins = ["pytester"]

TESTS = Path(__file__).parent
# Fixtures that reach PostgreSQL (started as a process when MAISTRO_TEST_DATABASE_URL is unset) or Chromium.
SLOW_FIXTURES = {"postgres_url", "fresh_database", "browser"}
# A parametrization with this value runs on PostgreSQL: `agent[postgres]`, `backend="postgres"`.
SLOW_PARAMETER = "postgres"
# Tests slow for a reason of their own, by directory, file, or test (without its parameters), relative to tests/.
SLOW_TESTS = {
    "server/": "starts langgraph dev, and Chromium for the page",
    "real_models/": "runs llama-server and a real model (testing/llama_server.py)",
    "upstream/langgraph_store/test_upstream_postgres_store.py": "PostgreSQL, through the suite's own fixtures",
    "harness/test_aegra_venv.py": "runs stand-in interpreters",
    "nodes/test_graph_runtime.py::test_nothing_runs_in_a_thread_after_import": "a fresh interpreter",
    "cli/test_cli.py::test_chat_process_saves_memory_and_the_next_run_continues_the_thread": "runs the CLI twice",
    "project/test_cold_start.py": "a fresh interpreter per entry point",
    "models/test_model_faults.py::test_faults_through_the_chat_process": "runs the CLI",
    "models/test_model_faults.py::test_text_calls_through_the_chat_process": "runs the CLI",
    "storage/test_forget.py::test_the_cli_prints_what_it_removed_by_table": "runs the CLI",
    "storage/test_data_directory.py": "runs the CLI on each broken data directory",
    "bench/test_done_log.py": "runs `maistro todos` as a process, as the benchmark measures it",
    "models/test_json_mode.py::test_maistro_chat_on_a_model_without_tool_calls_saves_and_tells": "runs the CLI",
    "memory/test_custom_kinds.py::test_a_file_in_the_working_directory_shadows_neither_the_module_named_nor_what_it_imports": (
        "runs the CLI in a directory holding look-alike modules"
    ),
    "storage/test_exactly_once.py": "kills a worker process right after its commit",
    "storage/test_crash_safety.py": "kills worker processes at random points",
    "storage/test_persistence.py::test_a_new_process_sees_memories_and_thread_history": "a second process",
    "storage/test_persistence.py::test_two_processes_write_to_sqlite_at_once": "two processes",
    "project/test_public_surface.py::test_the_wheel_ships_py_typed_the_memory_page_the_demo_model_and_the_mit_license": "builds a wheel",
    "storage/test_semantic_index.py::test_a_differently_worded_item_is_found_only_through_the_index": "embeds 100 items",
    "settings/test_settings.py::test_the_cli_says_which_variable_is_wrong_without_a_traceback": "runs the CLI",
    "settings/test_settings.py::test_a_negative_retry_count_is_refused": "runs the CLI",
    "cli/test_terminal_processes.py": "runs the CLI, interrupts and kills it",
    "project/test_docs.py::test_shell_blocks_run_as_written": "runs the documentation's commands",
    "project/test_docs.py::test_python_blocks_run_in_order_as_one_session": "runs each page's Python in a fresh interpreter",
}
# Programs a library may run in any test: `platform.processor()` asks `uname -p` (the OpenAI client's headers).
HARMLESS_PROGRAMS = {"uname"}


def parameter_values(item: pytest.Item) -> list[object]:
    """The values `item` is parametrized with, tuples unpacked."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return [part for value in params.values() for part in (value if isinstance(value, tuple) else (value,))]


def is_slow(item: pytest.Item) -> bool:
    """Whether `item` needs PostgreSQL, a browser or processes of its own (the rules above)."""
    test = item.path.relative_to(TESTS).as_posix() if item.path.is_relative_to(TESTS) else ""
    name = f"{test}::{item.originalname}" if isinstance(item, pytest.Function) else test
    return (
        bool(SLOW_FIXTURES & set(item.fixturenames))
        or SLOW_PARAMETER in parameter_values(item)
        or any(test.startswith(path) if path.endswith("/") else path in (test, name) for path in SLOW_TESTS)
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the `slow` marker: `pytest -m "not slow"` is the fast tier, `pytest` runs everything (CI)."""
    config.addinivalue_line("markers", "slow: needs PostgreSQL, a browser or processes of its own (tests/conftest.py)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark slow the tests that `is_slow` names, so that `-m "not slow"` leaves them out."""
    for item in items:
        if is_slow(item):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def refuse_processes_and_postgres(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test not marked slow starts no process (PostgreSQL, Chromium, a server, the CLI; `HARMLESS_PROGRAMS` aside)
    and opens no PostgreSQL connection: either fails it with a sentence naming the rule to extend."""
    if request.node.get_closest_marker("slow"):
        return
    start_process = subprocess.Popen._execute_child

    def refuse(what: str) -> None:
        pytest.fail(f"{request.node.nodeid} is not marked slow but {what}; name it in SLOW_TESTS (tests/conftest.py).")

    def execute_child(process: subprocess.Popen, args, *rest) -> None:
        program = Path(args if isinstance(args, str | bytes | os.PathLike) else args[0]).name
        if program not in HARMLESS_PROGRAMS:
            refuse(f"starts a process ({program})")
        start_process(process, args, *rest)

    def connect(*args, **kwargs) -> None:
        refuse("opens a PostgreSQL connection")

    monkeypatch.setattr(subprocess.Popen, "_execute_child", execute_child)
    monkeypatch.setattr(psycopg, "connect", connect)
    monkeypatch.setattr(psycopg.Connection, "connect", classmethod(connect))
    monkeypatch.setattr(psycopg.AsyncConnection, "connect", classmethod(connect))


@pytest.fixture(autouse=True)
def no_real_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests never reach a real endpoint or the user's own data directory."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "MAISTRO_MODEL", "MAISTRO_DATABASE_URL", "LANGSMITH_TRACING"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MAISTRO_DATA_DIR", str(tmp_path / "default-data"))
    monkeypatch.setenv("MAISTRO_TIMEZONE", "America/Los_Angeles")
    # The suite's scripts play tool-calling models; under the default "auto" each endpoint would first get the
    # call mode's pre-check. The call mode's own tests (tests/models/test_call_mode.py, tests/models/test_json_mode.py) set it.
    monkeypatch.setenv("MAISTRO_CALL_MODE", "tools")
    # Context windows are remembered per endpoint URL, and a later stub may get an earlier one's port.
    forget_windows()


@pytest.fixture
def model() -> ScriptedChatModel:
    """A fresh scripted model; each test scripts its own replies."""
    return ScriptedChatModel()


@pytest.fixture
def script() -> Script:
    """Replies for the OpenAI-compatible stub, queued per kind of request."""
    return Script()


@pytest.fixture
def stub(script: Script, monkeypatch: pytest.MonkeyPatch):
    """A strict local OpenAI-compatible endpoint answering from `script`, set as OPENAI_BASE_URL."""
    with OpenAIStub(script) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("MAISTRO_MODEL", "gpt-stub")
        yield server


@pytest.fixture(scope="session")
def postgres_url():
    """A PostgreSQL server: MAISTRO_TEST_DATABASE_URL (CI starts one), else one started for this session."""
    if url := os.environ.get("MAISTRO_TEST_DATABASE_URL"):
        yield url
        return
    directory = Path(tempfile.mkdtemp(prefix="maistro-pg-"))
    yield postgres_server.start(directory)
    postgres_server.stop(directory)
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def fresh_database(postgres_url: str) -> str:
    """The URL of a new, empty database on the test server."""
    return postgres_server.create_database(postgres_url)


@pytest.fixture(params=["sqlite", "postgres"])
def agent(request, model: ScriptedChatModel, tmp_path: Path):
    """The agent as `build_graph()` returns it, on SQLite and on PostgreSQL, driven by the scripted model."""
    database_url = request.getfixturevalue("fresh_database") if request.param == "postgres" else None
    agent = build_graph(tmp_path / "data", database_url=database_url, chat_model=lambda _settings: model)
    yield agent
    close_graph(agent)


@pytest.fixture(params=["sqlite", "postgres"])
def database(request, tmp_path: Path) -> dict:
    """Where one database lives, as `open_store` arguments (no semantic index): SQLite in a directory, or a fresh
    PostgreSQL database."""
    if request.param == "sqlite":
        return {"data_dir": tmp_path / "data", "database_url": "", "embeddings": ""}
    return {"data_dir": None, "database_url": request.getfixturevalue("fresh_database"), "embeddings": ""}
