"""A run's context: what a user may adjust per run, sent as LangGraph's run `context=` or, as in the tutorial, in
`config["configurable"]`, within the operator's bounds. (The operator's environment is `graph.settings.Settings`.)

`ResolvedRun.of` resolves a run's context and thread id once per run; every node takes them from there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, Field, InitVar, dataclass, field, fields
from datetime import datetime, timedelta, timezone, tzinfo
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from graph.recent import Recent
from graph.settings import REPLY_TIMINGS, current_settings

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.runtime import RunControl, Runtime

DEFAULT_ROLE = "You are a helpful chatbot."
# The caller the API server authenticated: both langgraph-api and Aegra set it and never take it from a client
# (Aegra passes a client's `langgraph_auth_user_id` through, so that key is not trusted).
AUTH_USER_KEY = "langgraph_auth_user"
# With auth on, the operator owns cost and behaviour: a client may set only these.
CLIENT_SETTINGS = ("user_id", "timezone", "message_time")
# How far a run's `message_time` may be from the server's clock.
MESSAGE_TIME_SKEW = timedelta(hours=24)
# Settings renamed, by their former names, which runs may still send: the limits served only the ToDos once.
FORMER_NAMES = {"todo_prompt_limit": "collection_prompt_limit", "todo_update_limit": "collection_update_limit"}


@dataclass(kw_only=True)
class RunContext:
    """What a run may adjust, sent as `context=` or in `config["configurable"]` (shown in LangGraph Studio); the
    operator bounds it (`graph.settings.Settings` is the operator's environment)."""

    user_id: str = field(
        default="",
        metadata={"description": "Whose memories to read and write. Empty means the default user."},
    )
    model: str = field(
        default_factory=lambda: current_settings().model,
        metadata={"description": "Chat model name at the OpenAI-compatible endpoint (MAISTRO_MODEL)."},
    )
    role: str = field(
        default=DEFAULT_ROLE,
        metadata={"description": "The first line of the system prompt: who the assistant is."},
    )
    max_memory_rounds: int = field(
        default=3,
        metadata={"description": "Memory-update rounds allowed per user turn before answering without tools.", "bounds": (0, 5)},
    )
    collection_prompt_limit: int = field(
        default=30,
        metadata={
            "description": "Most documents of each collection (the ToDos) a prompt carries; past it, the ones relevant "
            "to the turn (its former name, todo_prompt_limit, still sets it).",
            "bounds": (1, 100),
        },
    )
    collection_update_limit: int = field(
        default=12,
        metadata={
            "description": "Most documents of a collection (the ToDos) one update may patch or delete: the ones "
            "relevant to the turn (its former name, todo_update_limit, still sets it).",
            "bounds": (1, 50),
        },
    )
    summary_trigger_tokens: int = field(
        default=3000,
        metadata={"description": "Thread size (estimated tokens) past which older messages fold into a summary.", "bounds": (200, 20000)},
    )
    messages_kept: int = field(
        default=8,
        metadata={"description": "How many recent messages stay verbatim when the thread is summarised.", "bounds": (2, 40)},
    )
    summary_trigger_messages: int = field(
        default=24,
        metadata={
            "description": "Messages of past turns a chat prompt may carry before older ones fold into a summary.",
            "bounds": (4, 200),
        },
    )
    timezone: str = field(
        default="",
        metadata={
            "description": "The user's IANA time zone for this run (a client's, e.g. the device's); empty: the zone "
            "in the user's profile, else MAISTRO_TIMEZONE, else the system's."
        },
    )
    message_time: str = field(
        default="",
        metadata={
            "description": "When the user wrote the message, ISO 8601 with a UTC offset (at most 24 h from the "
            "server's clock); relative dates count from it. Empty: the server's clock."
        },
    )
    reply_timing: str = field(
        default_factory=lambda: current_settings().reply_timing,
        metadata={
            "description": "When a turn that saves memories replies: 'first' (beside the updates, one model call "
            "before the reply) or 'after_updates' (the tutorial's: once they are saved) (MAISTRO_REPLY_TIMING).",
            "choices": REPLY_TIMINGS,
        },
    )
    default_user_id: str = field(
        default_factory=lambda: current_settings().default_user,
        metadata={"description": "User id used when a run names none (MAISTRO_DEFAULT_USER)."},
    )
    # The limits' former names (`FORMER_NAMES`), taken when a run's context or a caller still uses them.
    todo_prompt_limit: InitVar[int | None] = field(
        default=None, metadata={"description": "The former name of collection_prompt_limit, still taken."}
    )
    todo_update_limit: InitVar[int | None] = field(
        default=None, metadata={"description": "The former name of collection_update_limit, still taken."}
    )

    def __post_init__(self, todo_prompt_limit: int | None, todo_update_limit: int | None) -> None:
        """Take a limit given by its former name, unless its current name is given too."""
        for current, value in (("collection_prompt_limit", todo_prompt_limit), ("collection_update_limit", todo_update_limit)):
            if value is not None and getattr(self, current) == _default(_FIELDS[current]):
                setattr(self, current, value)

    @classmethod
    def from_runnable_config(cls, config: RunnableConfig | None = None, context: Any = None) -> RunContext:
        """Build the settings from a run's config and its LangGraph `context`, ignoring unknown and empty values.

        A value in `context` (a `RunContext` or a mapping) wins over the same one in `configurable`; a
        `RunContext`'s fields left at their defaults count as not sent. On an API server with auth on, the
        user is the authenticated one (the identity of `langgraph_auth_user` in `configurable`, which the server
        sets over any client value; never taken from `context`), whatever `user_id` the client sent, and a
        client may set only `CLIENT_SETTINGS`, in either place: the rest are the operator's. Numbers are
        clamped to their bounds, a time zone must exist and a message time must carry a UTC offset and lie
        within 24 hours of the server's clock, whoever sets them (a bad one raises `ValueError` with one
        sentence). A setting may be sent by its former name (`FORMER_NAMES`); its current name wins.
        """
        configurable = (config or {}).get("configurable") or {}
        sent = {**_current_names(configurable), **_current_names(_sent_in_context(context))}
        authenticated = _identity(configurable.get(AUTH_USER_KEY))
        allowed = [f for f in fields(cls) if not authenticated or f.name in CLIENT_SETTINGS]
        values = {f.name: _checked(f, sent[f.name]) for f in allowed if sent.get(f.name) not in (None, "")}
        if authenticated:
            values["user_id"] = authenticated
        return cls(**{name: value for name, value in values.items() if value is not None})

    @property
    def resolved_user_id(self) -> str:
        """The user the run acts for: the given user id, or the default user when it is missing or empty."""
        return self.user_id.strip() or self.default_user_id

    def zone_name(self, profile_zone: str | None = None) -> str:
        """The user's time zone: the run's `timezone`, else the profile's (`profile_zone`, when it exists), else
        MAISTRO_TIMEZONE; "" when none is known (the system's zone is used)."""
        return self.timezone or (profile_zone if known_zone(profile_zone) else "") or current_settings().timezone

    def now(self, profile_zone: str | None = None) -> datetime:
        """The time of the user's message (`message_time`, else the server's clock) in the user's zone
        (`zone_name`)."""
        zone: tzinfo | None = ZoneInfo(name) if (name := self.zone_name(profile_zone)) else None
        moment = datetime.fromisoformat(self.message_time) if self.message_time else datetime.now(timezone.utc)
        return moment.astimezone(zone)

    def now_text(self, profile_zone: str | None = None) -> str:
        """The current date and time for prompts, e.g. `2026-11-29T14:05+08:00 (Sunday, CST)`."""
        return time_text(self.now(profile_zone))


def time_text(moment: datetime) -> str:
    """A moment for prompts, with its weekday and zone: `2026-11-29T14:05+08:00 (Sunday, CST)`."""
    return f"{moment.isoformat(timespec='minutes')} ({moment:%A}, {moment.tzname()})"


def known_zone(name: str | None) -> bool:
    """Whether `name` is an IANA time zone this machine knows."""
    if not isinstance(name, str) or not name:
        return False
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def message_moment(text: str, server_now: datetime | None = None) -> datetime:
    """A run's `message_time` read: an ISO 8601 date-time with a UTC offset, at most `MESSAGE_TIME_SKEW` from the
    server's clock (`server_now`, default now); else `ValueError` with one sentence."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise ValueError(
            f"message_time {text!r} is not an ISO 8601 date-time with a UTC offset, such as 2026-12-03T21:30+09:00."
        )
    if abs(moment - (server_now or datetime.now(timezone.utc))) > MESSAGE_TIME_SKEW:
        raise ValueError(f"message_time {text!r} is more than 24 hours from the server's clock; send the time the user wrote.")
    return moment


_FIELDS = {setting.name: setting for setting in fields(RunContext)}


def _identity(user: Any) -> str:
    """The identity of the server's authenticated user (a dict or a user object), "" for none or anonymous."""
    identity = user.get("identity") if isinstance(user, dict) else getattr(user, "identity", "")
    return identity.strip() if isinstance(identity, str) else ""


def _default(setting: Field) -> Any:
    """The value a `RunContext` field takes when none is given."""
    return setting.default_factory() if setting.default is MISSING else setting.default


def _current_names(sent: Mapping[str, Any]) -> dict[str, Any]:
    """`sent` with each setting sent by its former name (`FORMER_NAMES`) under its current one, unless that is
    sent too."""
    renamed = {FORMER_NAMES.get(name, name): value for name, value in sent.items() if name in FORMER_NAMES}
    return {**renamed, **{name: value for name, value in sent.items() if name not in FORMER_NAMES}}


def _sent_in_context(context: Any) -> dict[str, Any]:
    """The settings a run's `context` carries: a mapping's setting entries, or a `RunContext`'s non-default fields.

    Only setting names are taken, so the context can never name the authenticated user (`AUTH_USER_KEY`).
    """
    names = {setting.name for setting in fields(RunContext)} | set(FORMER_NAMES)
    if isinstance(context, Mapping):
        return {name: value for name, value in context.items() if name in names}
    if isinstance(context, RunContext):
        return {
            setting.name: value
            for setting in fields(RunContext)
            if (value := getattr(context, setting.name)) != _default(setting)
        }
    return {}


# The configurable keys a run's settings and ids are resolved from.
RUN_KEYS = (*(setting.name for setting in fields(RunContext)), *FORMER_NAMES, AUTH_USER_KEY, "thread_id")
# How many runs' resolved settings a graph keeps (a run normally finishes long before this many others start).
RUNS_KEPT = 1024


@dataclass(frozen=True)
class ResolvedRun:
    """A run's context and thread id, resolved once per run by `ResolvedRun.of`."""

    context: RunContext
    thread_id: str

    @property
    def user_id(self) -> str:
        """The user the run acts for (see `RunContext.resolved_user_id`)."""
        return self.context.resolved_user_id

    @classmethod
    def of(
        cls,
        config: RunnableConfig | None,
        runtime: Runtime | None = None,
        kept: Recent[RunControl, tuple[tuple, ResolvedRun]] | None = None,
    ) -> ResolvedRun:
        """The context of the run a node belongs to, parsed on the run's first call and then reused from `kept`
        (the graph's record of its runs, `graph.runtime.GraphRuntime.runs`).

        They come from `runtime.context` (what a caller passed as `context=`) and `config["configurable"]`
        (the tutorial's way, and where an API server puts the authenticated user), by the rules of
        `RunContext.from_runnable_config`. A run is known by its `RunControl`, which LangGraph makes once
        per run and shares with every node; a run that passes the same control with other values is
        resolved anew.
        """
        configurable = (config or {}).get("configurable") or {}
        context = runtime.context if runtime is not None else None
        control = runtime.control if runtime is not None else None
        inputs = (context, tuple(configurable.get(key) for key in RUN_KEYS))
        known = kept.get(control) if kept is not None and control is not None else None
        if known is not None and known[0] == inputs:
            return known[1]
        resolved = cls(RunContext.from_runnable_config(config, context), str(configurable.get("thread_id", "")))
        if kept is not None and control is not None:
            kept.put(control, (inputs, resolved))
        return resolved


def _checked(setting: Field, value: Any) -> Any:
    """A client-sent value made safe: numbers clamped to the setting's bounds (None if not a number), strings
    as strings, one of the setting's choices, and a time zone that exists."""
    bounds = setting.metadata.get("bounds")
    if bounds:
        try:
            number = int(value)
        except (TypeError, ValueError):
            return None
        return min(max(number, bounds[0]), bounds[1])
    text = str(value)
    choices = setting.metadata.get("choices")
    if choices and text not in choices:
        raise ValueError(f"{setting.name} {text!r} is not one of {', '.join(map(repr, choices))}.")
    if setting.name == "timezone" and not known_zone(text):
        raise ValueError(f"timezone {text!r} is not a known IANA time zone, such as Asia/Shanghai.")
    if setting.name == "message_time":
        message_moment(text)
    return text
