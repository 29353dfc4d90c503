"""Pydantic models for the three long-term memories and the `UpdateMemory` routing tool.

The names (`UpdateMemory`, `update_type`, `Profile`, `ToDo`) and field names follow the LangChain Academy
task_mAIstro tutorial: clients and saved data depend on them. Every schema carries a docstring and field
descriptions because several providers (Anthropic among them) reject tools without them.
"""

from datetime import datetime
from typing import Annotated, Literal, Optional

from typing_extensions import TypedDict

from pydantic import BaseModel, Field

UpdateType = Literal["user", "todo", "instructions"]


class UpdateMemory(TypedDict):
    """Decide which long-term memory to update: the user's profile, their ToDo list, or their instructions."""

    update_type: Annotated[
        UpdateType,
        ...,
        "Which memory to update: 'user' for profile facts, 'todo' for tasks, "
        "'instructions' for how the user wants ToDo items written.",
    ]


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
    solutions: list[str] = Field(
        description="List of specific, actionable solutions (e.g., specific ideas, service providers, "
        "or concrete options relevant to completing the task)",
        min_length=1,
        default_factory=list,
    )
    status: Literal["not started", "in progress", "done", "archived"] = Field(
        description="Current status of the task", default="not started"
    )
