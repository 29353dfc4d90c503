"""Pydantic models: the default memories' shapes and history entries.

The names (`Profile`, `ToDo`) and field names follow the LangChain Academy task_mAIstro tutorial: clients and
saved data depend on them (the routing tool, `UpdateMemory`, is built from the memory kinds by the chat node). Every schema carries a docstring and field
descriptions because several providers (Anthropic among them) reject tools without them.
"""

import re
from datetime import date, datetime, time
from typing import Literal, Optional
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator


class Profile(BaseModel):
    """The profile of the user you are chatting with."""

    name: Optional[str] = Field(description="The user's name", default=None)
    location: Optional[str] = Field(description="The user's location", default=None)
    job: Optional[str] = Field(description="The user's job", default=None)
    connections: list[str] = Field(
        description="Personal connection of the user, such as family members, friends, or coworkers",
        default_factory=list,
    )
    interests: list[str] = Field(description="Interests that the user has", default_factory=list)
    timezone: Optional[str] = Field(
        description="The user's time zone as an IANA name, when they say where they are (a city or a zone): "
        "Asia/Tokyo for Tokyo, Europe/Berlin for Berlin, America/New_York for New York, Asia/Shanghai for 上海",
        default=None,
    )

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: Optional[str]) -> Optional[str]:
        if value is None:
            return None
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{value!r} is not a known IANA time zone, such as Asia/Tokyo") from None
        return value


class ToDo(BaseModel):
    """One item on the user's ToDo list."""

    task: str = Field(description="The task to be completed.")
    time_to_complete: Optional[int] = Field(
        description="Estimated time to complete the task (minutes).", default=None
    )
    deadline: Optional[datetime] = Field(
        description="When the task needs to be completed by (if applicable), as an absolute ISO 8601 "
        "date-time with the year and time zone offset.",
        default=None,
    )

    @field_validator("deadline", mode="before")
    @classmethod
    def _date_only_ends_its_day(cls, value: object) -> object:
        """An ISO 8601 date-time read; a date without a time ("2026-12-04") means by the end of that day: 23:59:59,
        in the user's zone once the update gives it one (`graph.memory.deadlines`)."""
        if not isinstance(value, str):
            return value
        text = value.strip()
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            return datetime.combine(date.fromisoformat(text), time(23, 59, 59))
        try:
            return datetime.fromisoformat(text)
        except ValueError:
            raise ValueError("must be an ISO 8601 date-time, such as 2026-12-04T18:00:00+01:00") from None
    solutions: list[str] = Field(
        description="List of specific, actionable solutions (e.g., specific ideas, service providers, "
        "or concrete options relevant to completing the task)",
        min_length=1,
        default_factory=list,
    )
    status: Literal["not started", "in progress", "done", "archived"] = Field(
        description="Current status of the task", default="not started"
    )
    completed_at: Optional[AwareDatetime] = Field(
        description="When the task was marked done (the app sets it; leave it out).", default=None
    )


class Instructions(BaseModel):
    """The stored instructions document: how the user wants ToDo items written."""

    model_config = ConfigDict(extra="forbid", strict=True)

    memory: str = Field(description="The instructions, as free text.")


class HistoryEntry(BaseModel):
    """One recorded change to a memory document: what it was before and after, and the message behind it.

    Strict: every field but `undoes`, `source` and `sources_before` is required, none may be added, and none is coerced from another type.
    Every entry this project has written carries them all; `graph.memory.changes.list_history` still reads
    hand-made entries that lack `order`, `thread_id` or `message`.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    id: str = Field(min_length=1, description="The change id (stable across replays of the same update).")
    time: str = Field(description="When the change was written, ISO 8601 with a UTC offset.")
    order: int = Field(ge=0, description="Position among the changes written at the same time.")
    thread_id: str = Field(description="The thread whose turn made the change ('' for CLI edits and undos).")
    kind: str = Field(min_length=1, description="Which memory changed (its kind's name: its store namespace).")
    message: str = Field(description="The user's message that caused the change, secrets redacted.")
    action: Literal["created", "updated", "deleted"] = Field(description="What happened to the document.")
    key: str = Field(min_length=1, description="The document's store key.")
    before: Optional[dict] = Field(description="The document before the change (None: it was created).")
    after: Optional[dict] = Field(description="The document after the change (None: it was deleted).")
    undoes: Optional[str] = Field(None, description="The id of the change this one reverts, for an undo.")
    source: Optional[dict[str, str]] = Field(
        None,
        description="Where the change came from: message id, when said, model; its thread and quoted words are the entry's "
        "own (`graph.memory.provenance.source_from_entry`; entries written before kept them here too; older ones: none).",
    )
    sources_before: Optional[dict[str, Optional[dict[str, str]]]] = Field(
        None, description="The sources of the values the change replaced, by source key, restored by its undo (a key it "
        "touched that is not listed had none)."
    )

    @field_validator("time")
    @classmethod
    def _dated(cls, value: str) -> str:
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError("must be an ISO 8601 date-time") from None
        if moment.tzinfo is None:
            raise ValueError("must carry a UTC offset")
        return value
