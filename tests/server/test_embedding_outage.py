"""A stopped embedding server fails no run on `langgraph dev` or Aegra, and loses no memory (issue 22.7).

Each server's store index embeds through a server of its own: on Aegra the project's embedding server
(`graph.backends.embedding_server`, Ollama's API, as aegra.json names it); on `langgraph dev` an OpenAI-compatible
endpoint (`testing.embedding_stub`) that the index's LangChain OpenAI embeddings call. Both are down for the
first turn and back for the second.
"""

import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from langgraph_sdk import get_sync_client

from graph.memory.store import user_label
from testing.aegra_server import HEALTH, SERVER_KINDS, embedding_server, start_aegra
from testing.embedding_stub import EmbeddingStub
from testing.helpers import ReservedPort
from testing.langgraph_server import (
    langgraph_dev,
    new_thread,
    play,
    scratch_config,
    stop,
    token_environment,
    wait_until_ready,
)
from testing.openai_stub import OpenAIStub, text_reply, tool_calls_reply
from testing.postgres_server import create_database
from testing.stored_names import TODO
from testing.stub_script import update

USER = "Lance"
TOKEN = "lance-token-7f3a9e1b"
SWIM = "Book swim lessons for my daughter"
BILL = "Pay the electricity bill"
OUTAGE_LINE = "The semantic index is unavailable"
OPENAI_INDEX = '''from langchain_openai import OpenAIEmbeddings

embeddings = OpenAIEmbeddings(model="text-embedding-3-small", base_url="{url}", api_key="not-needed",
                              check_embedding_ctx_length=False)
'''


@contextmanager
def server_with_index_down(kind: str, directory: Path, stub: OpenAIStub, postgres_url: str
                           ) -> Iterator[tuple[str, Path, Callable[[], None]]]:
    """A server of `kind` whose embedding server is stopped: its URL, its log and a function that starts it."""
    env = token_environment(directory, stub, {USER: TOKEN})
    with ExitStack() as running:
        if kind == "aegra":
            port = running.enter_context(ReservedPort()).port  # held until the embedding server takes it
            env.update(DATABASE_URL=create_database(postgres_url), OLLAMA_HOST=f"http://127.0.0.1:{port}")
            process, url, log = start_aegra(directory, env, "aegra")
            running.callback(stop, process)
            wait_until_ready(process, url, log, HEALTH)
            yield url, log, lambda: running.enter_context(embedding_server(directory, port))
            return
        endpoint = running.enter_context(EmbeddingStub())
        endpoint.stop()
        (directory / "openai_index.py").write_text(OPENAI_INDEX.format(url=endpoint.base_url))
        config = scratch_config(directory)
        spec = json.loads(config.read_text())
        spec["store"]["index"] = {"embed": f"{directory / 'openai_index.py'}:embeddings", "dims": 1536, "fields": ["task"]}
        config.write_text(json.dumps(spec))
        url = running.enter_context(langgraph_dev(directory, env))
        yield url, directory / "server.log", endpoint.start


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_a_stopped_embedding_server_fails_no_run_and_the_memory_is_found_by_meaning_once_it_is_back(
    kind, script, stub, tmp_path, postgres_url
):
    with server_with_index_down(kind, tmp_path, stub, postgres_url) as (url, log, restart_embeddings):
        sdk = get_sync_client(url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
        script.add("chat", update("todo"), text_reply("I noted the swim lessons."))
        script.add("todo", tool_calls_reply(("ToDo", {"task": SWIM, "solutions": ["Call the community pool"]})))
        play(sdk, new_thread(sdk), "I need to book swim lessons for my daughter.")

        def tasks(**search) -> list[str]:
            found = sdk.store.search_items((TODO, user_label(USER)), limit=10, **search)["items"]
            return [item["value"]["task"] for item in found]

        assert tasks() == [SWIM]
        restart_embeddings()
        script.add("chat", update("todo"), text_reply("I added the bill."))
        script.add("todo", tool_calls_reply(("ToDo", {"task": BILL, "solutions": ["Pay online"]})))
        play(sdk, new_thread(sdk), "Remind me to pay the electricity bill.")

        assert sorted(tasks()) == sorted([SWIM, BILL])
        assert tasks(query="Did I sign my kid up for swimming?")[0] == SWIM
        assert tasks(query="power company invoice")[0] == BILL
        assert log.read_text(errors="replace").count(OUTAGE_LINE) == 1
        assert script.remaining() == {}
