"""Eval cases: the conversation a case plays, how a correct model plays it, and what it must leave behind.

A case is one JSON file under `graph/eval/cases/` (shipped with the package); its fields are the models below.
`threads` are conversations in order (each a list of user turns; a new thread keeps the memories but not the
messages). A turn's `play` is what a model that gets it right does (only the scripted players of
`graph.eval.player` read it; a real model never sees it); `mention` are facts its reply must contain and
`language` the language it must be in, and `confirm` what the turn's memory notes must say (the old → new of a
change, `graph.memory.replaced`). `expect` is the memory the store must hold after the last turn (and the
updates left pending, `graph.memory.pending`), and `must_not_store` are strings that must appear nowhere in the
store.

A case may set the `user`'s own time: their IANA time zone and when they write (`message_time`, a date of
`graph.eval.dates.resolve_date` counted from the run's today and a wall time in that zone, "today-1 23:30"),
sent as the run's `timezone` and `message_time`; the case's other dates are then counted from the user's today
(the date of that moment where they are), not from the run's. A case may `seed` ToDos the user had before its
first turn, done ones with the date they were `completed` (put in through the import path: those finished long ago
are in the done log when the case starts).
"""

import fnmatch
import json
from datetime import date, datetime, time
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from graph.eval.dates import cron_dates, resolve_date

CATEGORIES = (
    "single-fact",
    "multi-memory",
    "updates",
    "completion-deletion",
    "dates",
    "cross-thread-recall",
    "instructions",
    "secrets",
    "no-invention",
    "chinese",
    "long-list",
    "pending-changes",
    "time-zones",
    "what-is-due",
    "stale",
    "provenance",
    "reminders",
    "done-log",
)
Alternatives = str | list[str]


class CaseError(ValueError):
    """A case file that cannot be read, or a pattern that selects no case."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TodoFields(_Strict):
    """A ToDo as a correct model writes it."""

    task: str
    time_to_complete: int | None = None
    deadline: str | None = Field(None, description="A date of `graph.eval.dates.resolve_date`.")
    solutions: list[str] = Field(default_factory=list)
    status: Literal["not started", "in progress", "done", "archived"] = "not started"


class SeedTodo(TodoFields):
    """A ToDo the user had before the case's first turn; a done one may say when it was `completed` (a date of
    `graph.eval.dates.resolve_date`, at noon UTC)."""

    completed: str | None = None

    @model_validator(mode="after")
    def _completed_when_done(self) -> "SeedTodo":
        if self.completed is not None and self.status != "done":
            raise ValueError(f"the seeded ToDo {self.task!r} has a completion date but is not done")
        return self


class Seed(_Strict):
    """The memory the user had before the case's first turn (`graph.eval.seed` puts it in)."""

    todos: list[SeedTodo] = Field(default_factory=list)


class TodoChange(_Strict):
    """A change to the existing ToDo whose task contains `match`."""

    match: str
    set: dict[str, str | int | None]


class TodoPlay(_Strict):
    """What a correct model does to the ToDo list in one turn."""

    add: list[TodoFields] = Field(default_factory=list)
    update: list[TodoChange] = Field(default_factory=list)
    remove: list[str] = Field(default_factory=list, description="Tasks (a part of their text) to delete.")


class ReminderPlay(_Strict):
    """The `Remind` request a correct model makes: a cron line in the user's local time (a `{SPEC}` in it is a date
    of `resolve_date`, written as its day and month: `graph.eval.dates.cron_dates`), and what to remind of ("" for
    the digest of what is due)."""

    schedule: str
    message: str = ""


class ExpectedReminder(_Strict):
    """A reminder the turn must ask for (scored from the model's `Remind` request: the eval runs without a server):
    its cron line (`{SPEC}` dates as in `ReminderPlay`), and the facts its message must contain (none: the message
    is empty, a digest of what is due)."""

    schedule: str
    about: list[Alternatives] = Field(default_factory=list)


class Play(_Strict):
    """How a model that gets the turn right plays it: its reply, and the memory updates it makes."""

    reply: str
    profile: dict[str, str | list[str]] | None = None
    todos: TodoPlay | None = None
    instructions: str | None = Field(None, description="The complete new instructions text.")
    secret: str | None = Field(None, description="What a model that keeps secrets would store (the flaw).")
    unusable: bool = Field(
        False, description="The endpoint's fault the case plays: every extraction of the turn is answered in text."
    )
    due: Literal["today", "week"] | None = Field(
        None, description="The turn asks what is due: today (with what is overdue) or this week; the reply names it."
    )
    remind: ReminderPlay | None = None
    done: Literal["last month", "all"] | None = Field(
        None,
        description="The turn asks how many ToDos the user finished last month (UTC) or in all; the reply gives the "
        "count the prompt's done log line says.",
    )

    @property
    def update_types(self) -> list[str]:
        """The UpdateMemory update types the turn calls for, in the tutorial's names."""
        wanted = {"user": self.profile, "todo": self.todos, "instructions": self.instructions}
        return [update_type for update_type, play in wanted.items() if play is not None]


class Turn(_Strict):
    """One user message, how it is played, and what the reply must say."""

    user: str = Field(min_length=1)
    play: Play
    mention: list[Alternatives] = Field(default_factory=list, description="Facts the reply must contain.")
    not_mention: list[str] = Field(default_factory=list, description="What the reply must not name (not due).")
    language: Literal["en", "zh"] | None = None
    confirm: list[Alternatives] = Field(default_factory=list, description="What the turn's memory notes must say.")
    reminder: ExpectedReminder | None = None


class ExpectedTodo(_Strict):
    """A ToDo the list must hold: `task` names it by keywords (each must appear in the stored task)."""

    task: str
    status: str | None = None
    deadline: str | None = None
    time_to_complete: int | None = None
    solutions_contain: list[Alternatives] = Field(default_factory=list)


class Expected(_Strict):
    """The memory after the last turn. Anything stored beyond it counts as spurious."""

    profile: dict[str, Alternatives | list[Alternatives]] = Field(default_factory=dict)
    todos: list[ExpectedTodo] = Field(default_factory=list)
    instructions: list[Alternatives] = Field(default_factory=list, description="What the instructions must contain.")
    pending: list[str] = Field(
        default_factory=list, description="The memory kinds whose failed update must be kept as a pending change."
    )


class UserTime(_Strict):
    """Where the user is and when they write: an IANA zone, and a date spec with a wall time there."""

    timezone: str
    message_time: str = Field(pattern=r"^.+ \d{2}:\d{2}$", description="'<date spec> HH:MM', e.g. 'today-1 23:30'.")

    @field_validator("timezone")
    @classmethod
    def _known(cls, value: str) -> str:
        from graph.run_context import known_zone

        if not known_zone(value):
            raise ValueError(f"{value!r} is not a known IANA time zone")
        return value

    def moment(self, today: date) -> datetime:
        """When the user writes, for a run whose today is `today`: the date spec's day at the wall time, in the zone."""
        from zoneinfo import ZoneInfo

        spec, clock = self.message_time.rsplit(" ", 1)
        return datetime.combine(resolve_date(spec, today), time.fromisoformat(clock), ZoneInfo(self.timezone))


class Case(_Strict):
    """One scripted conversation and the memory it must leave."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    category: Literal[CATEGORIES]  # type: ignore[valid-type]
    description: str
    threads: list[list[Turn]] = Field(min_length=1)
    expect: Expected = Field(default_factory=Expected)
    must_not_store: list[str] = Field(default_factory=list)
    user: UserTime | None = Field(None, description="The user's own zone and message time (default: the run's).")
    seed: Seed | None = Field(None, description="The memory the user had before the first turn (default: none).")

    @field_validator("threads")
    @classmethod
    def _distinct_turns(cls, threads: list[list[Turn]]) -> list[list[Turn]]:
        said = [turn.user for thread in threads for turn in thread]
        if not all(threads) or len(set(said)) != len(said):
            raise ValueError("every thread needs a turn, and no user message may repeat within a case")
        return threads

    @property
    def turns(self) -> list[Turn]:
        """Every turn of every thread, in order."""
        return [turn for thread in self.threads for turn in thread]

    @property
    def plays_fault(self) -> bool:
        """Whether the case plays an endpoint's fault (`Play.unusable`), which only the scripted players can play."""
        return any(turn.play.unusable for turn in self.turns)

    def check_dates(self) -> None:
        """Raise `DateSpecError` for a date in the case that `resolve_date` cannot read."""
        specs = [todo.deadline for todo in self.expect.todos]
        for todo in self.seed.todos if self.seed else []:
            specs += [todo.deadline, todo.completed]
        for turn in self.turns:
            todos = turn.play.todos or TodoPlay()
            specs += [todo.deadline for todo in todos.add]
            specs += [change.set.get("deadline") for change in todos.update]
        for spec in specs:
            if isinstance(spec, str):
                resolve_date(spec, date(2026, 1, 1))
        for turn in self.turns:
            for reminder in (turn.play.remind, turn.reminder):
                if reminder is not None:
                    cron_dates(reminder.schedule, date(2026, 1, 1))
        if self.user is not None:
            self.user.moment(date(2026, 1, 1))

    def user_today(self, today: date, timezone: str) -> tuple[date, str]:
        """The day the case's dates count from and the zone its deadlines are read in: the user's (`user`), else
        the run's `today` and `timezone`."""
        if self.user is None:
            return today, timezone
        return self.user.moment(today).date(), self.user.timezone


def _first_problem(error: ValidationError) -> str:
    problem = error.errors()[0]
    where = ".".join(str(part) for part in problem["loc"]) or "the case"
    return f"{where}: {problem['msg']}"


def load_case(path: Path) -> Case:
    """The case in a JSON file; `CaseError` with one sentence when it is not valid JSON or not a valid case."""
    try:
        case = Case.model_validate(json.loads(path.read_text(encoding="utf-8")))
        case.check_dates()
    except (OSError, json.JSONDecodeError) as error:
        raise CaseError(f"The eval case {path.name} cannot be read: {error}.") from None
    except ValidationError as error:
        raise CaseError(f"The eval case {path.name} is not valid ({_first_problem(error)}).") from None
    except ValueError as error:
        raise CaseError(f"The eval case {path.name} is not valid: {error}") from None
    if case.id != path.stem:
        raise CaseError(f"The eval case {path.name} has the id {case.id!r}; a case's id is its file name.")
    return case


def case_files(directory: Path | None = None) -> list[Path]:
    """The case files of a directory (default: the suite shipped in the package), sorted by name."""
    root = directory or Path(str(resources.files("graph.eval") / "cases"))
    return sorted(root.glob("*.json"))


def load_cases(pattern: str | None = None, directory: Path | None = None) -> list[Case]:
    """The suite's cases whose id or category matches the glob `pattern` (all when None), in file order.

    Several patterns may be given separated by commas; `CaseError` when none matches.
    """
    cases = [load_case(path) for path in case_files(directory)]
    if not pattern:
        return cases
    patterns = [part.strip() for part in pattern.split(",") if part.strip()]
    chosen = [case for case in cases if any(fnmatch.fnmatch(case.id, p) or fnmatch.fnmatch(case.category, p) for p in patterns)]
    if not chosen:
        raise CaseError(f"No eval case matches {pattern!r}; case ids and categories are listed by `maistro eval --list`.")
    return chosen
