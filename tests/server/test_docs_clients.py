"""The docs' client examples, run as written against the open `langgraph dev` they describe (no token)."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from testing.langgraph_server import langgraph_dev, offline_environment
from testing.openai_stub import OpenAIStub, text_reply, tool_calls_reply
from testing.stub_script import Script, update
from tests.project.test_docs_examples import python_example

DOCUMENTED_URL = "http://127.0.0.1:2024"


@pytest.fixture(scope="module")
def server(stub: OpenAIStub, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An open server (no token variable), its model calls going to the stub."""
    scratch: Path = tmp_path_factory.mktemp("docs-clients")
    env = offline_environment(OPENAI_BASE_URL=stub.base_url, OPENAI_API_KEY="test", MAISTRO_DATA_DIR=str(scratch / "data"))
    with langgraph_dev(scratch, env) as url:
        yield url


def test_the_sdk_store_and_mcp_examples_run_on_an_open_server(server, script: Script, monkeypatch, capsys):
    monkeypatch.setenv("LANGGRAPH_API_URL", server)
    monkeypatch.delenv("LANGGRAPH_API_KEY", raising=False)
    script.add("chat", update("todo", content="I added the swim lessons to your list."))
    script.add("todo", tool_calls_reply(("ToDo", {"task": "Book swim lessons", "solutions": ["SF swim schools"]})))
    namespace: dict = {}

    exec(python_example("docs/operating/clients.md", 'config=config, stream_mode="values"').replace(DOCUMENTED_URL, server), namespace)
    assert "I added the swim lessons to your list." in capsys.readouterr().out

    exec(python_example("docs/operating/clients.md", "client.store.get_item("), namespace)
    printed = capsys.readouterr().out
    assert "Book swim lessons" in printed and printed.endswith("None None\n"), "no profile or instructions yet"

    script.add("chat", update("todo", content="Added, for the default user."))
    script.add("todo", tool_calls_reply(("ToDo", {"task": "Book swim lessons", "solutions": ["SF swim schools"]})))
    exec(python_example("docs/operating/clients.md", "get_sync_client(url=os.environ"), {})
    assert "Added, for the default user." in capsys.readouterr().out

    script.add("chat", text_reply("Your list has: Book swim lessons."))
    exec(python_example("docs/operating/clients.md", "streamable_http_client"), namespace)
    assert capsys.readouterr().out == "Your list has: Book swim lessons.\n"
    assert os.environ.get("LANGGRAPH_API_KEY") is None
