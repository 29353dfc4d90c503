"""The model endpoint the eval measures: its client, and one tiny tool call to check it up front.

The client is the one the agent uses (langchain-openai's `ChatOpenAI` at temperature 0) with streamed usage on,
so that token counts come back from streamed replies too.
"""

from dataclasses import dataclass

import openai
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field

PING_TIMEOUT_SECONDS = 60


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


class SaveNote(BaseModel):
    """Save a short note."""

    text: str = Field(description="The note to save.")


def _error_detail(error: openai.APIStatusError) -> str:
    """The endpoint's own error message (the OpenAI client's message wraps it in "Error code: …")."""
    body = error.body.get("error", error.body) if isinstance(error.body, dict) else None
    message = body.get("message") if isinstance(body, dict) else None
    return str(message or error.message).strip().rstrip(".")


def check_endpoint(endpoint: Endpoint) -> None:
    """Make one tiny tool-call request; `EndpointError` with one sentence when the endpoint is unreachable,
    refuses it, or its model answers without calling the tool (then it cannot save memories)."""
    client = endpoint.client().model_copy(update={"max_retries": 1, "timeout": min(endpoint.timeout, PING_TIMEOUT_SECONDS)})
    prompt = [HumanMessage("Call the SaveNote tool with the text 'ping'. Do not answer in text.")]
    name = f"The model {endpoint.model!r} at {endpoint.where}"
    try:
        reply = client.bind_tools([SaveNote]).invoke(prompt)
    except openai.APIConnectionError as error:
        kind = "timed out" if isinstance(error, openai.APITimeoutError) else "is unreachable"
        raise EndpointError(f"The endpoint {endpoint.where} {kind}: is the server running, and is the URL (with /v1) right?") from None
    except openai.AuthenticationError:
        raise EndpointError(f"The endpoint {endpoint.where} rejected the API key (HTTP 401): set OPENAI_API_KEY.") from None
    except openai.NotFoundError:
        raise EndpointError(f"{name} was not found (HTTP 404): check --model and the URL.") from None
    except openai.APIStatusError as error:
        detail = _error_detail(error)
        if error.status_code == 400 and "tool" in detail.lower():
            raise EndpointError(f"{name} cannot call tools (HTTP 400: {detail}); the agent needs a model that does.") from None
        raise EndpointError(f"{name} refused a tiny tool-call request (HTTP {error.status_code}: {detail}).") from None
    if not any(call["name"] == "SaveNote" for call in reply.tool_calls):
        said = reply.text.strip().replace("\n", " ")[:120]
        raise EndpointError(
            f"{name} answered a tiny tool-call request without calling the tool ({said!r}), so it cannot save "
            "memories; pick a model with tool calling (for vLLM, serve it with --enable-auto-tool-choice)."
        )
