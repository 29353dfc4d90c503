"""The model endpoint the eval measures: its client, and the call mode's pre-check (one tiny tool call) up front.

The client is the one the agent uses (langchain-openai's `ChatOpenAI` at temperature 0) with streamed usage on,
so that token counts come back from streamed replies too.
"""

from dataclasses import dataclass

import openai
from langchain_openai import ChatOpenAI

from graph.backends.call_mode import calls_the_tool, precheck_reply, refuses_tools


class EndpointError(RuntimeError):
    """The endpoint cannot be evaluated: unreachable, refusing the request, or its model does not call tools."""


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible endpoint and model (`base_url` None: OpenAI's API)."""

    model: str
    base_url: str | None
    api_key: str
    timeout: float = 60.0

    @property
    def where(self) -> str:
        """The endpoint's address for sentences."""
        return self.base_url or "api.openai.com"

    def client(self) -> ChatOpenAI:
        """The chat model client every case of the run shares."""
        return ChatOpenAI(
            model=self.model,
            base_url=self.base_url,
            api_key=self.api_key or "not-needed",
            temperature=0,
            timeout=self.timeout,
            stream_usage=True,
        )


def _error_detail(error: openai.APIStatusError) -> str:
    """The endpoint's own error message (the OpenAI client's message wraps it in "Error code: …")."""
    body = error.body.get("error", error.body) if isinstance(error.body, dict) else None
    message = body.get("message") if isinstance(body, dict) else None
    return str(message or error.message).strip().rstrip(".")


def check_endpoint(endpoint: Endpoint, call_mode: str = "tools") -> str:
    """Make the call mode's pre-check (one tiny tool-call request) and return the mode the run uses, "tools" or
    "json"; `EndpointError` with one sentence when the endpoint is unreachable or refuses the request, or, under
    `call_mode` "tools", when its model answers without calling the tool (then it cannot save memories that way).
    Under "auto" such a model, or an endpoint that refuses tools, is measured in JSON; under "json" any answer
    will do."""
    name = f"The model {endpoint.model!r} at {endpoint.where}"
    try:
        reply = precheck_reply(endpoint.client())
    except openai.APIConnectionError as error:
        kind = "timed out" if isinstance(error, openai.APITimeoutError) else "is unreachable"
        raise EndpointError(f"The endpoint {endpoint.where} {kind}: is the server running, and is the URL (with /v1) right?") from None
    except openai.AuthenticationError:
        raise EndpointError(f"The endpoint {endpoint.where} rejected the API key (HTTP 401): set OPENAI_API_KEY.") from None
    except openai.NotFoundError:
        raise EndpointError(f"{name} was not found (HTTP 404): check --model and the URL.") from None
    except openai.APIStatusError as error:
        detail = _error_detail(error)
        if refuses_tools(error) and call_mode != "tools":
            return "json"
        if refuses_tools(error):
            raise EndpointError(
                f"{name} cannot call tools (HTTP 400: {detail}); measure it with --call-mode json, or pick a model that does."
            ) from None
        raise EndpointError(f"{name} refused a tiny tool-call request (HTTP {error.status_code}: {detail}).") from None
    if call_mode == "json" or (call_mode == "auto" and not calls_the_tool(reply)):
        return "json"
    if not calls_the_tool(reply):
        said = reply.text.strip().replace("\n", " ")[:120]
        raise EndpointError(
            f"{name} answered a tiny tool-call request without calling the tool ({said!r}), so it cannot save "
            "memories with tool calls; measure it with --call-mode json (or auto), or pick a model with tool calling "
            "(for vLLM, serve it with --enable-auto-tool-choice)."
        )
    return "tools"
