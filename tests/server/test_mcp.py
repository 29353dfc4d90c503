"""task_mAIstro as an MCP tool: the API server's `/mcp` endpoint on a real `langgraph dev`, used through the
official `mcp` Python client the way Claude Desktop or Cursor would use it, with two users' tokens.

The server builds the tool from the graph: its name from the graph's name, its description from
`langgraph.json`, its input schema from the graph's input schema. A call is a stateless run for the token's
user, so what one call saves, a later call (a new conversation) recalls, and another user never sees.
"""

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx
import httpx2
import pytest
from langgraph_sdk import get_sync_client
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from graph.memory.store import user_label
from graph.names import AGENT_NAME
from testing.langgraph_server import ROOT, token_server
from testing.openai_stub import OpenAIStub, system_text, text_reply, tool_calls_reply
from testing.stored_names import TODO
from testing.stub_script import Script, update

ALICE, BOB = "alice", "bob"
TOKENS = {ALICE: "alice-mcp-51c0e2-token", BOB: "bob-mcp-7e2a44-token"}
PASSPORT = {"task": "Renew the passport", "solutions": ["Book an appointment at the post office"]}
RPC_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def server(stub: OpenAIStub, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server with alice's and bob's tokens, its model calls going to the stub."""
    scratch = tmp_path_factory.mktemp("mcp")
    with token_server(scratch, stub, TOKENS) as url:
        yield url


def with_mcp(url: str, token: str, use: Callable[[Client], Awaitable[Any]]) -> Any:
    """Connect the official MCP client to the server's `/mcp` with the token as a bearer token, and `use` it."""

    async def session() -> Any:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
            async with Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
                return await use(client)

    return asyncio.run(session())


def call(url: str, token: str, text: str) -> str:
    """Call the agent's tool with one message; its text answer (the call must not fail)."""

    async def use(client: Client) -> Any:
        return await client.call_tool(AGENT_NAME, {"messages": text})

    result = with_mcp(url, token, use)
    assert not result.is_error, result
    return "".join(part.text for part in result.content)


def tasks(url: str, user: str) -> list[str]:
    """The tasks in the user's ToDo list on the server, read with the user's own token."""
    client = get_sync_client(url=url, api_key=TOKENS[user])
    return sorted(item["value"]["task"] for item in client.store.search_items((TODO, user_label(user)), limit=100)["items"])


def recall(request: dict) -> dict:
    """The model's answer to "what is on my list?": whatever the agent put in its system prompt."""
    listed = PASSPORT["task"] in system_text(request)
    return text_reply(f"Your ToDo list has: {PASSPORT['task']}." if listed else "Your ToDo list is empty.")


def test_the_agent_is_one_tool_that_says_what_it_does(server):
    async def use(client: Client) -> Any:
        return (await client.list_tools()).tools

    (tool,) = with_mcp(server, TOKENS[ALICE], use)

    described = json.loads((ROOT / "langgraph.json").read_text())["graphs"][AGENT_NAME]["description"]
    assert tool.name == AGENT_NAME == "task_maistro"
    assert tool.description == described and "ToDo list" in described and "profile" in described
    assert tool.input_schema["properties"].keys() == {"messages"}, "no internal state fields (summary, remaining_steps)"
    assert tool.input_schema["required"] == ["messages"]
    assert tool.input_schema["properties"]["messages"]["type"] == "string"


def test_a_todo_saved_by_one_call_is_recalled_by_another_for_that_user_only(server, script: Script):
    script.add("chat", update("todo"), text_reply("Added the passport renewal to your list."))
    script.add("todo", tool_calls_reply(("ToDo", PASSPORT)))

    answer = call(server, TOKENS[ALICE], "Remind me to renew my passport.")

    assert "Added the passport renewal to your list." in answer
    assert tasks(server, ALICE) == [PASSPORT["task"]] and tasks(server, BOB) == []
    script.add("chat", recall, recall)
    assert f"Your ToDo list has: {PASSPORT['task']}." in call(server, TOKENS[ALICE], "What is on my ToDo list?")
    assert "Your ToDo list is empty." in call(server, TOKENS[BOB], "What is on my ToDo list?")
    assert script.remaining() == {}


def test_the_user_comes_from_the_token_not_the_caller(server, script: Script):
    script.add("chat", update("todo"), text_reply("Added."))
    script.add("todo", tool_calls_reply(("ToDo", {"task": "Feed Bob's cat", "solutions": ["Twice a day"]})))
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": AGENT_NAME, "arguments": {"messages": "Remind me to feed the cat."}, "context": {"user_id": BOB}},
    }

    answered = httpx.post(f"{server}/mcp", json=request, headers={**RPC_HEADERS, "X-Api-Key": TOKENS[ALICE]}, timeout=120)

    assert answered.status_code == 200 and not answered.json()["result"].get("isError"), answered.text
    assert "Feed Bob's cat" in tasks(server, ALICE) and "Feed Bob's cat" not in tasks(server, BOB)
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"X-Api-Key": "wrong"}):
        assert httpx.post(f"{server}/mcp", json=listing, headers={**RPC_HEADERS, **headers}).status_code == 401
        assert httpx.post(f"{server}/mcp", json=request, headers={**RPC_HEADERS, **headers}).status_code == 401
