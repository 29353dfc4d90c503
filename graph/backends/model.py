"""The chat model factory: OpenAI by default, any OpenAI-compatible endpoint through OPENAI_BASE_URL."""

import functools
import json
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import openai
import pydantic
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_openai import ChatOpenAI
from langgraph.constants import TAG_NOSTREAM

from graph.backends.call_mode import endpoint_call_mode
from graph.backends.json_calls import JsonCallModel
from graph.run_context import RunContext
from graph.settings import current_settings

ChatModelFactory = Callable[[RunContext], BaseChatModel]

NO_MODEL_MESSAGE = (
    "No chat model is configured: set OPENAI_API_KEY for OpenAI, or OPENAI_BASE_URL (plus OPENAI_API_KEY "
    "if the endpoint needs one) for an OpenAI-compatible endpoint, and MAISTRO_MODEL to pick the model."
)
MODEL_UNAVAILABLE_MESSAGE = (
    "The model endpoint did not answer ({reason}), also after retrying. Your message is kept in the thread: "
    "send it again to retry."
)
UNUSABLE_ANSWER_MESSAGE = (
    "The model endpoint's answer could not be used ({reason}). Your message is kept in the thread: "
    "send it again to retry."
)


CONTEXT_TOO_SMALL_MESSAGE = (
    "The model's context window ({window}) cannot hold even the shortest prompt for this message (the rules, your "
    "memories and the start of your message): give the model a larger context (llama-server -c), or set "
    "MAISTRO_CONTEXT_TOKENS to what it takes."
)


class ModelUnavailableError(RuntimeError):
    """The model endpoint kept failing (server error, rate limit, timeout or no connection, a stream cut short)
    after retries, or answered with something that is not a chat completion (a body that is not JSON)."""


class ContextWindowError(ModelUnavailableError):
    """The endpoint refused a prompt as too long for the model's context window, and no smaller prompt could be made
    (the message is kept; sending it again cannot help until the window grows)."""


# The packages that read an endpoint's answer into a message: a shape error raised in them means the answer
# was not a chat completion (e.g. `choices` missing or empty, a call whose arguments are not an object).
ANSWER_READERS = ("openai", "langchain_openai", "langchain_core")
SHAPE_ERRORS = (TypeError, IndexError, KeyError, pydantic.ValidationError)


def _raised_reading_answer(error: BaseException) -> bool:
    """Whether `error` was raised by the code that reads the endpoint's answer (pydantic's own frames skipped)."""
    frames = [frame for frame, _ in traceback.walk_tb(error.__traceback__)]
    modules = [frame.f_globals.get("__name__", "") for frame in frames]
    innermost = next((name for name in reversed(modules) if not name.startswith("pydantic")), "")
    return innermost.split(".")[0] in ANSWER_READERS


def unusable_reason(error: BaseException) -> str | None:
    """Why an error raised while reading the endpoint's answer means the answer is unusable, or None.

    The openai client raises `json.JSONDecodeError` for a body (or a stream event) that is not JSON;
    langchain-openai and langchain-core raise shape errors for JSON that is not a chat completion.
    """
    if isinstance(error, json.JSONDecodeError):
        return "the response body is not valid JSON"
    if isinstance(error, SHAPE_ERRORS) and _raised_reading_answer(error):
        return "the response is not a chat completion the client can read"
    return None


def unavailable_reason(error: BaseException) -> str | None:
    """Why an endpoint error means the model is unavailable (down, overloaded, too slow, unusable), or None."""
    if (reason := unusable_reason(error)) is not None:
        return reason
    if isinstance(error, openai.APITimeoutError):
        return "timed out"
    if isinstance(error, openai.APIConnectionError):
        return "no connection"
    if isinstance(error, openai.APIStatusError) and (error.status_code >= 500 or error.status_code == 429):
        return f"HTTP {error.status_code}"
    return None


@contextmanager
def model_errors() -> Iterator[None]:
    """Turn an endpoint that is down, overloaded or too slow, or whose answer is unusable, into one
    `ModelUnavailableError` sentence."""
    try:
        yield
    except (openai.APIError, json.JSONDecodeError, *SHAPE_ERRORS) as error:
        if (reason := unusable_reason(error)) is not None:
            raise ModelUnavailableError(UNUSABLE_ANSWER_MESSAGE.format(reason=reason)) from error
        if (reason := unavailable_reason(error)) is None:
            raise
        raise ModelUnavailableError(MODEL_UNAVAILABLE_MESSAGE.format(reason=reason)) from error


class EndpointCircuit(BaseCallbackHandler):
    """Fails every further model call of a run fast once the endpoint was unavailable.

    trustcall retries failed update extractions in a loop; without this, a down endpoint would be asked
    again (with the client's own retries and timeouts) on every iteration.
    """

    raise_error = True

    def __init__(self) -> None:
        self.failure: BaseException | None = None

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        """Refuse the call when the endpoint already failed in this run."""
        if self.failure is not None:
            raise self.failure

    def on_llm_error(self, error: BaseException, **kwargs: Any) -> None:
        """Remember an unavailable endpoint."""
        if self.failure is None and unavailable_reason(error):
            self.failure = error


class ModelCallLimitError(RuntimeError):
    """A run asked for more model calls than the operator allows per message (MAISTRO_MAX_MODEL_CALLS)."""


class ModelCallBudget(BaseCallbackHandler):
    """Caps the model calls of each run (one user message) at the operator's MAISTRO_MAX_MODEL_CALLS.

    Attached to the compiled graph, it sees every run it is part of: a run without a parent starts a
    budget, and each chat-model call counts against the budget of the run it belongs to, however deep
    (the update nodes' trustcall loops included). Whatever a client sets, a message never costs more.
    """

    raise_error = True
    run_inline = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._root_of: dict[Any, Any] = {}
        self._calls: dict[Any, int] = {}

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: Any, parent_run_id: Any = None, **kwargs: Any) -> None:
        """Remember which run a chain belongs to (a chain without a parent is a new run)."""
        with self._lock:
            root = self._root_of.get(parent_run_id, run_id) if parent_run_id else run_id
            self._root_of[run_id] = root
            self._calls.setdefault(root, 0)

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: Any, parent_run_id: Any = None, **kwargs: Any
    ) -> None:
        """Count the call; refuse it past the limit."""
        limit = current_settings().max_model_calls
        with self._lock:
            root = self._root_of.get(parent_run_id, parent_run_id)
            self._calls[root] = self._calls.get(root, 0) + 1
            over = self._calls[root] > limit
        if over:
            raise ModelCallLimitError(
                f"This message needed more than {limit} model calls, the most one message may use "
                "(MAISTRO_MAX_MODEL_CALLS); the memories show what was saved."
            )

    def _end(self, run_id: Any) -> None:
        with self._lock:
            root = self._root_of.pop(run_id, None)
            if root == run_id:
                self._calls.pop(root, None)
                for child in [child for child, owner in self._root_of.items() if owner == root]:
                    del self._root_of[child]

    def on_chain_end(self, outputs: Any, *, run_id: Any, **kwargs: Any) -> None:
        """Forget a finished run."""
        self._end(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
        """Forget a failed run."""
        self._end(run_id)


class ModelNotConfiguredError(RuntimeError):
    """Raised before any model call when neither OPENAI_API_KEY nor OPENAI_BASE_URL is set."""


def ensure_model_configured() -> None:
    """Raise `ModelNotConfiguredError` with one actionable sentence when no endpoint credentials are set."""
    if not current_settings().model_configured():
        raise ModelNotConfiguredError(NO_MODEL_MESSAGE)


@functools.lru_cache(maxsize=16)
def _chat_openai(
    model: str, api_key: str, base_url: str | None, max_retries: int | None, timeout: float, max_tokens: int
) -> ChatOpenAI:
    return ChatOpenAI(
        model=model,
        temperature=0,
        api_key=api_key,
        base_url=base_url,
        max_retries=max_retries,
        timeout=timeout,
        max_tokens=max_tokens,
    )


@functools.lru_cache(maxsize=16)
def _json_calls(
    model: str, api_key: str, base_url: str | None, max_retries: int | None, timeout: float, max_tokens: int
) -> JsonCallModel:
    return JsonCallModel(inner=_chat_openai(model, api_key, base_url, max_retries, timeout, max_tokens))


def load_chat_model(settings: RunContext, *, max_retries: int | None = None) -> BaseChatModel:
    """The configured chat model at temperature 0, shared by runs with the same settings.

    Sharing keeps HTTP connections alive and lets the update nodes reuse their trustcall extractors.
    `max_retries` is how often the client retries a failed request, with backoff (None: the client's
    default of 2); MAISTRO_MODEL_TIMEOUT bounds each request in seconds (default 60), MAISTRO_MAX_REPLY_TOKENS each
    answer in tokens (`max_tokens`, default 1024; a request may ask for more). MAISTRO_CALL_MODE decides
    whether tool calls are asked for as such or as schema-constrained JSON (`JsonCallModel`); under "auto" the
    endpoint's answer to a tiny tool-call request decides, once per process (`endpoint_call_mode`).
    """
    ensure_model_configured()
    environment = current_settings()
    client = (
        settings.model,
        environment.openai_api_key or "not-needed",
        environment.openai_base_url,
        max_retries,
        environment.model_timeout,
        environment.max_reply_tokens,
    )
    model = _chat_openai(*client)
    mode = environment.call_mode if environment.call_mode != "auto" else endpoint_call_mode(model)
    return _json_calls(*client) if mode == "json" else model


def quiet(model: BaseChatModel) -> BaseChatModel:
    """A copy of the model whose tokens are not streamed to the user (extraction and summary calls are internal)."""
    return model.model_copy(update={"tags": [*(model.tags or []), TAG_NOSTREAM]})
