"""How the agent asks the endpoint's model for memory updates: tool calls, or schema-constrained JSON.

MAISTRO_CALL_MODE is "tools", "json" (`graph.backends.json_calls`) or "auto" (the default): tool calls, unless the
endpoint's model answers the pre-check, one tiny tool-call request, without calling the tool (natively or written
as text the boundary reads, `graph.thread.text_calls`) or the endpoint refuses tools (HTTP 400 naming them).
The pre-check is made once per process for each endpoint and model, the first time a model is loaded, not on
every turn; an endpoint that did not answer it (down, too slow, refusing the key) is taken at its tools for
`RECHECK_SECONDS`, then asked again.
"""

import threading
import time

import openai
from langchain_core.messages import AIMessage, HumanMessage
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field

from graph.thread.text_calls import written_calls

PRECHECK_TIMEOUT_SECONDS = 60
PRECHECK_PROMPT = "Call the SaveNote tool with the text 'ping'. Do not answer in text."
RECHECK_SECONDS = 60.0
_modes: dict[tuple[str | None, str], tuple[str, float]] = {}
_modes_lock = threading.Lock()


class SaveNote(BaseModel):
    """Save a short note."""

    text: str = Field(description="The note to save.")


def precheck_reply(client: ChatOpenAI) -> AIMessage:
    """The endpoint's answer to one tiny tool-call request, from a client like `client` that retries once and
    waits at most PRECHECK_TIMEOUT_SECONDS (a copy would keep the original's HTTP client, built with its retries
    and timeout); the endpoint's errors are raised as the client raises them."""
    timeout = client.request_timeout if isinstance(client.request_timeout, int | float) else PRECHECK_TIMEOUT_SECONDS
    quick = ChatOpenAI(
        model=client.model_name,
        base_url=client.openai_api_base,
        api_key=client.openai_api_key,
        temperature=0,
        max_retries=1,
        timeout=min(timeout, PRECHECK_TIMEOUT_SECONDS),
    )
    return quick.bind_tools([SaveNote]).invoke([HumanMessage(PRECHECK_PROMPT)])


def calls_the_tool(reply: AIMessage) -> bool:
    """Whether the pre-check's answer called SaveNote: in `tool_calls`, or written as text in a format the
    boundary reads."""
    if any(call["name"] == SaveNote.__name__ for call in reply.tool_calls):
        return True
    return any(call.name == SaveNote.__name__ for call in written_calls(reply.text) or [])


def refuses_tools(error: openai.APIStatusError) -> bool:
    """Whether an endpoint's error says it does not take tools (HTTP 400 whose message names them)."""
    return error.status_code == 400 and "tool" in str(error.message).lower()


def endpoint_call_mode(client: ChatOpenAI) -> str:
    """"json" when the client's endpoint and model answer the pre-check without calling the tool or refuse tools,
    else "tools"; remembered per endpoint and model (see the module's docstring)."""
    key = (str(client.openai_api_base or ""), client.model_name)
    with _modes_lock:
        known = _modes.get(key)
    if known is not None and (known[1] == float("inf") or time.monotonic() < known[1]):
        return known[0]
    try:
        mode, until = ("tools" if calls_the_tool(precheck_reply(client)) else "json"), float("inf")
    except openai.APIStatusError as error:
        mode, until = ("json", float("inf")) if refuses_tools(error) else ("tools", time.monotonic() + RECHECK_SECONDS)
    except openai.APIError:
        mode, until = "tools", time.monotonic() + RECHECK_SECONDS
    with _modes_lock:
        _modes[key] = (mode, until)
    return mode
