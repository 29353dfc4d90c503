"""The model's context window: how many tokens a prompt and its answer may take together, per endpoint.

It is what the endpoint says (llama.cpp's `GET /props`: `default_generation_settings.n_ctx`, or `n_ctx`), asked once
per process and endpoint; else MAISTRO_CONTEXT_TOKENS; the smaller when both are known. A server that refuses a
prompt as too long (llama.cpp's HTTP 400 `exceed_context_size_error`, with `n_prompt_tokens` and `n_ctx`) teaches
the window, and how many of its tokens the agent's estimate (`graph.thread.tokens`) undercounts, so the next prompt
is made to fit (`graph.nodes.window`). With no window known (OpenAI, which does not say), prompts are not cut.
"""

import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx
import openai
from langchain_core.language_models import BaseChatModel

from graph.settings import current_settings

PROPS_TIMEOUT_SECONDS = 5.0
# How long an endpoint whose `/props` did not answer is taken as saying nothing before it is asked again.
REASK_SECONDS = 60.0
# The estimate counts about four characters a token; a server's tokenizer and chat template may count more.
ESTIMATE_MARGIN = 1.15
EXCEEDED_TYPE = "exceed_context_size_error"

_lock = threading.Lock()
_said: dict[str, tuple[int | None, float]] = {}
_learned: dict[str, tuple[int, float]] = {}


@dataclass(frozen=True)
class Window:
    """A context window of `tokens`, an answer's room in it (`reply_tokens`), and how many server tokens one
    estimated token is (`ratio`, at least 1)."""

    tokens: int
    reply_tokens: int
    ratio: float = 1.0

    @property
    def prompt_tokens(self) -> int:
        """The most estimated tokens a prompt may take: the window less the answer's room (at most a quarter of
        it), over the ratio and the estimate's margin."""
        room = min(self.reply_tokens, self.tokens // 4)
        return int((self.tokens - room) / (self.ratio * ESTIMATE_MARGIN))


def endpoint_of(model: Any) -> tuple[str, str] | None:
    """The base URL and API key of the OpenAI-compatible client behind `model` (a `JsonCallModel` wraps one), or None
    for OpenAI itself or a model that is not such a client."""
    client = getattr(model, "inner", model)
    base_url = getattr(client, "openai_api_base", None)
    if not isinstance(base_url, str) or not base_url:
        return None
    key = getattr(client, "openai_api_key", None)
    return base_url, key.get_secret_value() if key is not None else ""


def props_url(base_url: str) -> str:
    """Where a llama.cpp server at `base_url` (`http://host:port/v1`) reports its settings: `http://host:port/props`."""
    return base_url.rstrip("/").removesuffix("/v1") + "/props"


def read_props(base_url: str, api_key: str) -> int | None:
    """The context window (per slot) a llama.cpp server reports at `/props`, or None for an endpoint that does not say."""
    try:
        answer = httpx.get(
            props_url(base_url), headers={"Authorization": f"Bearer {api_key}"}, timeout=PROPS_TIMEOUT_SECONDS
        )
        props = answer.json() if answer.status_code == 200 else {}
    except (httpx.HTTPError, ValueError):
        return None
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    n_ctx = n_ctx if n_ctx is not None else props.get("n_ctx")
    return n_ctx if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0 else None


def _endpoint_window(base_url: str, api_key: str) -> int | None:
    """What the endpoint says of its window, asked once (again after REASK_SECONDS when it did not answer)."""
    with _lock:
        known = _said.get(base_url)
    if known is not None and time.monotonic() < known[1]:
        return known[0]
    said = read_props(base_url, api_key)
    with _lock:
        _said[base_url] = (said, float("inf") if said is not None else time.monotonic() + REASK_SECONDS)
    return said


def forget_windows() -> None:
    """Forget what every endpoint said of its window and what refusals taught: each is asked again at its next call
    (an endpoint restarted with another window; tests whose stubs may reuse a port)."""
    with _lock:
        _said.clear()
        _learned.clear()


def model_window(model: BaseChatModel) -> Window | None:
    """The context window of `model`'s endpoint (see the module's docstring), or None when nothing says it."""
    endpoint = endpoint_of(model)
    said = _endpoint_window(*endpoint) if endpoint is not None else None
    with _lock:
        learned = _learned.get(endpoint[0]) if endpoint is not None else None
    sizes = [size for size in (said, current_settings().context_tokens, learned and learned[0]) if size]
    if not sizes:
        return None
    return Window(min(sizes), current_settings().max_reply_tokens, learned[1] if learned else 1.0)


def exceeded(error: BaseException) -> tuple[int | None, int | None] | None:
    """For a refusal of a prompt as too long for the context window: the prompt's tokens and the window the server
    gave (`n_prompt_tokens`, `n_ctx`, None when not said); None for any other error."""
    if not isinstance(error, openai.BadRequestError):
        return None
    body = error.body if isinstance(error.body, dict) else {}
    if body.get("type") != EXCEEDED_TYPE and "context_length_exceeded" not in str(error):
        return None
    sizes = (body.get("n_prompt_tokens"), body.get("n_ctx"))
    return tuple(size if isinstance(size, int) and size > 0 else None for size in sizes)  # type: ignore[return-value]


def learn(model: BaseChatModel, error: BaseException, estimated: int) -> Window | None:
    """Learn from a refusal of a prompt of `estimated` tokens as too long: the window the server gave, and how many of
    its tokens an estimated token is; the window to fit the next prompt in, or None when `error` is no such refusal
    or nothing says the window."""
    sizes = exceeded(error)
    endpoint = endpoint_of(model)
    if sizes is None:
        return None
    prompt_tokens, n_ctx = sizes
    if endpoint is not None and n_ctx is not None:
        ratio = max(1.0, prompt_tokens / estimated) if prompt_tokens and estimated else 1.0
        with _lock:
            before = _learned.get(endpoint[0], (n_ctx, 1.0))
            _learned[endpoint[0]] = (n_ctx, max(ratio, before[1]))
    return model_window(model)
