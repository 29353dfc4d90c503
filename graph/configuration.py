"""Per-run settings of the agent, read from `config["configurable"]` as in the tutorial."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from graph.settings import current_settings

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

DEFAULT_ROLE = "You are a helpful chatbot."
AUTH_USER_KEY = "langgraph_auth_user_id"


@dataclass(kw_only=True)
class Configuration:
    """Settings a run may override through `config["configurable"]` (shown in LangGraph Studio)."""

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
        metadata={"description": "Memory-update rounds allowed per user turn before answering without tools."},
    )
    todo_prompt_limit: int = field(
        default=30,
        metadata={"description": "Most ToDo items a prompt carries; past it, the ones relevant to the turn."},
    )
    todo_update_limit: int = field(
        default=12,
        metadata={"description": "Most ToDo items one update may patch or delete: the ones relevant to the turn."},
    )
    summary_trigger_tokens: int = field(
        default=3000,
        metadata={"description": "Thread size (estimated tokens) past which older messages fold into a summary."},
    )
    messages_kept: int = field(
        default=8,
        metadata={"description": "How many recent messages stay verbatim when the thread is summarised."},
    )
    timezone: str = field(
        default_factory=lambda: current_settings().timezone,
        metadata={"description": "IANA time zone for dates in prompts (MAISTRO_TIMEZONE); empty means the system's."},
    )
    default_user_id: str = field(
        default_factory=lambda: current_settings().default_user,
        metadata={"description": "User id used when a run names none (MAISTRO_DEFAULT_USER)."},
    )

    @classmethod
    def from_runnable_config(cls, config: RunnableConfig | None = None) -> Configuration:
        """Build the settings from a run's config, ignoring unknown and empty values.

        On an API server with auth on, the user is the authenticated one (`langgraph_auth_user_id`, set by the
        server after it drops that key from client input), whatever `user_id` the client sent.
        """
        configurable = (config or {}).get("configurable") or {}
        values = {
            f.name: configurable[f.name]
            for f in fields(cls)
            if configurable.get(f.name) not in (None, "")
        }
        authenticated = configurable.get(AUTH_USER_KEY)
        if isinstance(authenticated, str) and authenticated.strip():
            values["user_id"] = authenticated
        return cls(**values)

    @property
    def resolved_user_id(self) -> str:
        """The user the run acts for: the given user id, or the default user when it is missing or empty."""
        return self.user_id.strip() or self.default_user_id

    def now(self) -> datetime:
        """The current time in the configured time zone (the system's when none is set)."""
        zone: tzinfo | None = ZoneInfo(self.timezone) if self.timezone else None
        return datetime.now(zone).astimezone(zone)

    def now_text(self) -> str:
        """The current date and time for prompts, e.g. `2026-11-29T14:05+08:00 (Sunday, CST)`."""
        now = self.now()
        return f"{now.isoformat(timespec='minutes')} ({now:%A}, {now.tzname()})"
