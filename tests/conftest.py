"""Shared fixtures: a scripted model and the durable graph on a temporary data directory."""

import itertools
import os
import shutil
import tempfile
from pathlib import Path

import psycopg
import pytest
from langchain_core.messages import AnyMessage, HumanMessage

from graph import build_graph, close_graph
from graph.memory_store import INSTRUCTIONS, PROFILE, TODO, namespace, search_all
from graph.scripted_model import ScriptedChatModel
from tests import postgres_server
from tests.openai_stub import OpenAIStub
from tests.stub_script import Script

_database_numbers = itertools.count()


@pytest.fixture(autouse=True)
def no_real_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests never reach a real endpoint or the user's own data directory."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "MAISTRO_MODEL", "MAISTRO_DATABASE_URL", "LANGSMITH_TRACING"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MAISTRO_DATA_DIR", str(tmp_path / "default-data"))
    monkeypatch.setenv("MAISTRO_TIMEZONE", "America/Los_Angeles")


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
    name = f"maistro_test_{os.getpid()}_{next(_database_numbers)}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return postgres_url.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture(params=["sqlite", "postgres"])
def agent(request, model: ScriptedChatModel, tmp_path: Path):
    """The agent as `build_graph()` returns it, on SQLite and on PostgreSQL, driven by the scripted model."""
    database_url = request.getfixturevalue("fresh_database") if request.param == "postgres" else None
    agent = build_graph(tmp_path / "data", database_url=database_url, chat_model=lambda _settings: model)
    yield agent
    close_graph(agent)


def config(user_id: str = "Lance", thread_id: str = "1", **extra) -> dict:
    """A run config as in the tutorial."""
    return {"configurable": {"thread_id": thread_id, "user_id": user_id, **extra}}


def turn(agent, text: str, user_id: str = "Lance", thread_id: str = "1", **extra) -> list[AnyMessage]:
    """Send one user message the tutorial's way (stream_mode="values") and return the thread afterwards."""
    chunks = list(
        agent.stream({"messages": [HumanMessage(content=text)]}, config(user_id, thread_id, **extra), stream_mode="values")
    )
    return chunks[-1]["messages"]


def todos(agent, user_id: str = "Lance") -> dict[str, dict]:
    """The user's ToDo items, by task."""
    return {item.value["task"]: item.value for item in search_all(agent.store, namespace(TODO, user_id))}


def profile_of(agent, user_id: str = "Lance") -> dict | None:
    """The user's profile document."""
    items = search_all(agent.store, namespace(PROFILE, user_id))
    assert len(items) <= 1, "one profile document per user"
    return items[0].value if items else None


def instructions_of(agent, user_id: str = "Lance") -> str | None:
    """The user's instruction text."""
    item = agent.store.get(namespace(INSTRUCTIONS, user_id), "user_instructions")
    return item.value["memory"] if item else None

