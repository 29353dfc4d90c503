"""Memory kinds of every shape the memory page edits from a JSON schema, for its browser tests
(MAISTRO_MEMORY_KINDS names `KINDS`): a habit list whose documents hold an enum, a date, numbers, a boolean, a list of
choices, an optional nested record and a nested list of records, and a free-text tone, besides `testing.custom_kinds`' contacts and health notes."""

from datetime import date
from typing import Literal, Optional

from pydantic import BaseModel, Field

from graph import MemoryKind
from testing.custom_kinds import KINDS as CUSTOM_KINDS


class Step(BaseModel):
    """One step of a habit."""

    what: str = Field(description="What to do.")
    minutes: Optional[int] = Field(None, description="How long it takes (minutes).")


class Buddy(BaseModel):
    """Someone who keeps the habit with the user."""

    name: str = Field(description="Their name.")
    phone: Optional[str] = Field(None, description="Their phone number.")


class Habit(BaseModel):
    """A habit the user is building."""

    name: str = Field(description="The habit.")
    frequency: Literal["daily", "weekly", "monthly"] = Field("daily", description="How often.")
    started: Optional[date] = Field(None, description="When the user started it.")
    target: Optional[float] = Field(None, description="Times a week the user aims for.")
    shared: bool = Field(False, description="Whether a friend does it too.")
    days: list[Literal["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]] = Field(
        default_factory=list, description="The days of the week it is done on."
    )
    buddy: Optional[Buddy] = Field(None, description="Who does it with the user.")
    steps: list[Step] = Field(default_factory=list, description="The steps, in order.")


class Tone(BaseModel):
    """How the user wants the assistant to sound."""

    memory: str = Field(description="The tone, as free text.")


HABIT = MemoryKind(name="habit", schema=Habit, collection=True, description="habits the user is building", label="habit")
TONE = MemoryKind(
    name="tone",
    schema=Tone,
    collection=False,
    text=True,
    description="how the user wants the assistant to sound",
    label="tone",
)
KINDS = [*CUSTOM_KINDS, HABIT, TONE]
