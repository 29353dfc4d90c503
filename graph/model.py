"""The chat model factory: OpenAI by default, any OpenAI-compatible endpoint through OPENAI_BASE_URL."""

import functools
import os
from collections.abc import Callable

from langchain_core.language_models import BaseChatModel
from langchain_openai import ChatOpenAI

from graph.configuration import Configuration

ChatModelFactory = Callable[[Configuration], BaseChatModel]

NO_MODEL_MESSAGE = (
    "No chat model is configured: set OPENAI_API_KEY for OpenAI, or OPENAI_BASE_URL (plus OPENAI_API_KEY "
    "if the endpoint needs one) for an OpenAI-compatible endpoint, and MAISTRO_MODEL to pick the model."
)


class ModelNotConfiguredError(RuntimeError):
    """Raised before any model call when neither OPENAI_API_KEY nor OPENAI_BASE_URL is set."""


def ensure_model_configured() -> None:
    """Raise `ModelNotConfiguredError` with one actionable sentence when no endpoint credentials are set."""
    if not (os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")):
        raise ModelNotConfiguredError(NO_MODEL_MESSAGE)


@functools.lru_cache(maxsize=16)
def _chat_openai(model: str, api_key: str, base_url: str | None, max_retries: int | None) -> ChatOpenAI:
    return ChatOpenAI(model=model, temperature=0, api_key=api_key, base_url=base_url, max_retries=max_retries)


def load_chat_model(settings: Configuration, *, max_retries: int | None = None) -> BaseChatModel:
    """The configured chat model at temperature 0, shared by runs with the same settings.

    Sharing keeps HTTP connections alive and lets the update nodes reuse their trustcall extractors.
    `max_retries` is how often the client retries a failed request (None: the client's default of 2).
    """
    ensure_model_configured()
    return _chat_openai(
        settings.model,
        os.environ.get("OPENAI_API_KEY") or "not-needed",
        os.environ.get("OPENAI_BASE_URL"),
        max_retries,
    )
