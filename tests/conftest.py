"""Shared fixtures: a scripted model and the durable graph on a temporary data directory."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from graph import build_graph, close_graph
from graph.app.scripted_model import ScriptedChatModel
from tests.support import postgres_server
from tests.support.openai_stub import OpenAIStub
from tests.support.stub_script import Script


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
    return postgres_server.create_database(postgres_url)


@pytest.fixture(params=["sqlite", "postgres"])
def agent(request, model: ScriptedChatModel, tmp_path: Path):
    """The agent as `build_graph()` returns it, on SQLite and on PostgreSQL, driven by the scripted model."""
    database_url = request.getfixturevalue("fresh_database") if request.param == "postgres" else None
    agent = build_graph(tmp_path / "data", database_url=database_url, chat_model=lambda _settings: model)
    yield agent
    close_graph(agent)
