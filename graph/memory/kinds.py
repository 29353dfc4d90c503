"""The memory kinds: each long-term memory the agent keeps is declared once, as a `MemoryKind`, and the code
loops over a list of them (`DEFAULT_MEMORY_KINDS` holds the tutorial's three).

A kind is one document per user (its `key`) or a collection of documents, each a `schema` instance; or free
text (`text`), stored as `{"memory": text}` and rewritten whole by one model call. Its `name` is its store
namespace and the one name the code uses for it; `update_type` is the value of `UpdateMemory.update_type`
that routes a turn to it (the name unless given: the tutorial routes its profile as "user").

A declaration that cannot work is refused when it is made, with one sentence naming the field (`MemoryKind`);
a list of kinds when the graph is built (`check_kinds`). `configured_kinds` reads the list MAISTRO_MEMORY_KINDS
names.
"""

import functools
import importlib
import importlib.machinery
import importlib.util
import os
import re
import string
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from langgraph.constants import END, START
from pydantic import BaseModel, ConfigDict

from graph.memory.formats import OPEN_TODO_STATUSES, Column, bullets, date_time_text, minutes_text, todo_lines
from graph.names import AGENT_NAME
from graph.settings import SettingsError, current_settings
from prompts import (
    CREATE_INSTRUCTIONS,
    INSTRUCTIONS_TELL_USER_RULE,
    PROFILE_TELL_USER_RULE,
    REWRITE_TEXT,
    TELL_USER_RULE,
    TODO_INSTRUCTION,
    TRUSTCALL_INSTRUCTION,
)
from schemas import Instructions, Profile, ToDo

# Namespaces the memory code keeps for itself: no kind may take them (graph.memory.store's HISTORY,
# INTERNAL_NAMESPACES and DONE_LOG, named here too because that module may not import this one back).
RESERVED_NAMES = ("history", "unindexed", "pending", "memory_sources", "past_facts", "done_log")
# Names the graph uses itself, which no update node may take: the chat node, LangGraph's start and end, and the
# state's keys (graph/state.py).
GRAPH_NAMES = (AGENT_NAME, START, END, "messages", "summary", "remaining_steps", "resumed_calls")
# A field path as LangGraph's index takes it ("solutions[*]", "address.city"): its first part names a schema field.
_FIRST_PART = re.compile(r"[^.\[]+")
_WORD_START = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# The most tokens a collection's documents take in the chat prompt by default (`MemoryKind.prompt_tokens`, about
# 30 lines of rows): past it, the less relevant ones are counted instead of shown.
COLLECTION_TOKENS = 360
# What a kind's instruction may name: a trustcall kind's besides its context kinds (`MemoryKind.context_kinds`),
# and a free-text kind's (`graph.nodes.update_text`).
INSTRUCTION_FIELDS = ("language_rule", "now")
TEXT_INSTRUCTION_FIELDS = ("current", "memory", "description")


class UnknownKindError(LookupError):
    """No memory kind of that name (or update type) is declared."""


def humanised(title: str) -> str:
    """A schema's or kind's name as words in sentences: "HealthNote" → "health note", "daily_habits" → "daily habits"."""
    return _WORD_START.sub(" ", title).replace("_", " ").lower()


def _text_value(schema: Mapping[str, Any], definitions: Mapping[str, Any]) -> bool:
    """Whether a JSON schema describes words a person wrote: a string without a format or fixed choices, a list of
    those, or an object (its strings), rather than a number, a date or a choice like a status."""
    if "$ref" in schema:
        schema = definitions.get(schema["$ref"].rsplit("/", 1)[-1], {})
    if "anyOf" in schema:
        return any(_text_value(option, definitions) for option in schema["anyOf"] if option.get("type") != "null")
    if "enum" in schema or "const" in schema:
        return False
    kind = schema.get("type")
    if kind == "array":
        return _text_value(schema.get("items") or {}, definitions)
    return (kind == "string" and "format" not in schema) or kind == "object"


@dataclass(frozen=True)
class MemoryKind:
    """One long-term memory: its name and stored shape, one document or many, and what the routing model reads.

    `description` says what belongs in it (the chat model reads it when deciding to update); `label` names one
    of its documents in sentences for the user (default: the schema's title in words, "Contact" → "contact";
    `title` names the whole memory: "contact list"); `key` is where a single document is kept (default
    "user_<name>"); `text` makes it free text, rewritten with one model call instead of trustcall (its schema
    needs a `memory: str` field). A free text is standing guidance that enters every prompt, so it holds at most
    `max_chars` characters, and the agent changes it only from the user's own words: a change that repeats words
    of something the user pasted or quoted is held until they confirm it (`graph.nodes.update_text`).
    `guidance` marks a text kind as guidance for the assistant's replies (a tone, house rules): the chat prompt
    shows it as something to follow rather than as facts about the user (the tutorial's instructions guide the
    ToDo updates, whose prompt carries them, and are shown as they always were).

    `instruction` is the extraction prompt (default: trustcall's generic one, or a rewrite of the text for a
    text kind; `{language_rule}`, `{now}` and, for text, `{current}` are filled in); `inserts`, `patches` and
    `deletes` say what trustcall may do (default: a collection may insert and delete, and every kind may be
    patched); `node` names the update node (default "update_<name>"); `summary_field` names a document in
    reports and tables (default: the schema's first field); `indexed_fields` are what the store's semantic
    index embeds, when it has one (default: a collection's summary field; nothing of a single document);
    `render` turns the kind's documents into its section of the chat prompt (default: one line of JSON for a
    document, a table of rows for a collection, or the text); a kind with a `deadline_field` has it called with
    `now=` too, the run's current time in the user's zone, so that it can say what is due (the ToDos' "overdue
    since" and "due today", `graph.memory.formats.todo_line`).

    A collection past the prompt's limit is shown by relevance to the turn (`graph.memory.selection`):
    `status_field` and `open_statuses` name the field that tells open documents from closed ones and its open
    values (the ToDos' "not started" and "in progress"): closed ones are shown only when named, and counted
    apart; `deadline_field` names a date-time field whose soonest open documents are shown first. Without a
    status field every document counts as open. `expiring_statuses` are the status values with which a document
    expires: it is written with a TTL of MAISTRO_DONE_TODO_TTL_DAYS (the ToDos' "archived"); any other
    document never expires. `done_status` is the status value that marks a document finished and `completed_field`
    the aware date-time field that records when (the ToDos' "done" and `completed_at`): every write stamps it
    (`graph.memory.completion`), and a document finished longer ago than MAISTRO_DONE_LOG_AFTER_DAYS moves into
    the user's done log (`graph.memory.done_log`). The chat prompt shows a collection's chosen documents within `prompt_tokens` tokens
    (default COLLECTION_TOKENS; None: every one the selection chose, as the ToDos) and counts those it leaves
    out, closed ones as `closed_name` ("done or archived" for the ToDos; default "closed").

    `context_kinds` names the other kinds a trustcall kind's extraction reads besides the conversation: each
    one's memories, as the chat prompt shows them, fill the instruction's `{<name>}` (the ToDos read the user's
    instructions as `{instructions}`); a kind the graph does not declare gives "". An instruction naming
    anything its update does not fill in is refused.

    `columns` are the columns of the table the CLI draws of a collection (`Column`; default: one per schema
    field, in order); `plural` names the documents together in sentences ("No ToDos yet"; default: the title).

    `tell_user_rule` is the kind's line of the chat prompt's rule on telling the user about updates (default:
    tell the user, naming what changed; the tutorial's profile and instructions are updated quietly).

    `examples` are a few user messages that bring news for the kind: a model that answers in JSON is shown them
    with their routing (`graph.backends.json_calls.OptionsTool`), so a small model routes by example. `suggested_fields` are the fields the model fills with
    its own ideas rather than the user's words (the ToDos' solutions): a model that answers in JSON has every
    other text field checked against what the user said before it is stored (`graph.memory.grounding`).

    Each field is checked when the kind is declared: a refusal is a ValueError of one sentence naming it.
    """

    name: str
    schema: type[BaseModel]
    collection: bool
    description: str
    update_type: str = ""
    label: str = ""
    key: str = ""
    text: bool = False
    guidance: bool = False
    instruction: str = ""
    inserts: bool | None = None
    patches: bool = True
    deletes: bool | None = None
    node: str = ""
    summary_field: str = ""
    indexed_fields: tuple[str, ...] | None = None
    status_field: str = ""
    open_statuses: tuple[str, ...] = ()
    deadline_field: str = ""
    tell_user_rule: str = ""
    examples: tuple[str, ...] = ()
    suggested_fields: tuple[str, ...] = ()
    render: Callable[[Sequence[Mapping[str, Any]]], str] | None = None
    expiring_statuses: tuple[str, ...] = ()
    done_status: str = ""
    completed_field: str = ""
    prompt_tokens: int | None = COLLECTION_TOKENS
    closed_name: str = "closed"
    context_kinds: tuple[str, ...] = ()
    columns: tuple[Column, ...] = ()
    plural: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier() or self.name in RESERVED_NAMES:
            raise ValueError(
                f"A memory kind's name must be a Python identifier other than {', '.join(RESERVED_NAMES)}: "
                f"{self.name!r} is not."
            )
        if not (isinstance(self.schema, type) and issubclass(self.schema, BaseModel)):
            raise ValueError(f"The memory kind {self.name!r} needs a Pydantic model as its schema.")
        if self.text and self.collection:
            raise ValueError(f"The memory kind {self.name!r} cannot be free text and a collection at once.")
        set_default = functools.partial(object.__setattr__, self)
        set_default("update_type", self.update_type or self.name)
        set_default("label", self.label or humanised(self.schema.model_config.get("title") or self.schema.__name__))
        set_default("key", "" if self.collection else self.key or f"user_{self.name}")
        set_default("instruction", self.instruction or (REWRITE_TEXT if self.text else TRUSTCALL_INSTRUCTION))
        set_default("inserts", self.collection if self.inserts is None else self.inserts)
        set_default("deletes", self.collection if self.deletes is None else self.deletes)
        set_default("node", self.node or f"update_{self.name}")
        set_default("summary_field", self.summary_field or next(iter(self.schema.model_fields), ""))
        if self.indexed_fields is None:
            set_default("indexed_fields", (self.summary_field,) if self.collection else ())
        set_default("indexed_fields", tuple(self.indexed_fields))
        set_default("open_statuses", tuple(self.open_statuses))
        set_default("tell_user_rule", self.tell_user_rule or TELL_USER_RULE.format(memory=self.title.lower()))
        for attribute in ("examples", "suggested_fields", "expiring_statuses", "context_kinds"):
            if isinstance(getattr(self, attribute), str):
                raise ValueError(f"The memory kind {self.name!r} needs {attribute} as a list of strings, not one string.")
            set_default(attribute, tuple(getattr(self, attribute)))
        set_default("columns", tuple(self.columns) or tuple(Column(name) for name in self.schema.model_fields))
        set_default("plural", self.plural or self.title)
        self._check()

    def _check(self) -> None:
        """Refuse, in one sentence naming the field, what would fail later (in a turn, a report or the graph)."""
        where = f"The memory kind {self.name!r}"
        fields = self.schema.model_fields
        schema_name = self.schema.__name__
        if self.text and getattr(fields.get("memory"), "annotation", None) is not str:
            raise ValueError(f"{where} is free text, so its schema needs a `memory: str` field, which {schema_name} lacks.")
        if self.guidance and not self.text:
            raise ValueError(f"{where} sets guidance, which only a free-text kind (text=True) can be.")
        if fields and self.summary_field not in fields:
            raise ValueError(f"{where} has summary_field {self.summary_field!r}, which is not a field of {schema_name}.")
        for path in self.indexed_fields:
            first = _FIRST_PART.match(path) if isinstance(path, str) else None
            if first is None or first.group() not in fields:
                raise ValueError(f"{where} indexes {path!r} (indexed_fields), which is not a field of {schema_name}.")
        for attribute in ("status_field", "deadline_field"):
            value = getattr(self, attribute)
            if value and value not in fields:
                raise ValueError(f"{where} has {attribute} {value!r}, which is not a field of {schema_name}.")
        for name in self.suggested_fields:
            if name not in fields:
                raise ValueError(f"{where} has suggested_fields {name!r}, which is not a field of {schema_name}.")
        if not all(isinstance(example, str) and example.strip() for example in self.examples):
            raise ValueError(f"{where} has an example that is not a user message (examples are non-empty strings).")
        if (self.status_field or self.open_statuses or self.deadline_field) and not self.collection:
            raise ValueError(f"{where} sets status_field, open_statuses or deadline_field, which only a collection uses.")
        if bool(self.status_field) != bool(self.open_statuses):
            raise ValueError(f"{where} needs status_field and open_statuses together: the field and its open values.")
        if set(self.expiring_statuses) & set(self.open_statuses) or (self.expiring_statuses and not self.status_field):
            raise ValueError(f"{where} has expiring_statuses, which must be status values that are not open ones.")
        if bool(self.done_status) != bool(self.completed_field) or (
            self.done_status and (self.done_status in self.open_statuses or not self.status_field)
        ):
            raise ValueError(f"{where} needs done_status and completed_field together, with a status_field whose done_status is not open.")
        if self.completed_field and self.completed_field not in fields:
            raise ValueError(f"{where} has completed_field {self.completed_field!r}, which is not a field of {schema_name}.")
        if self.prompt_tokens is not None and (not isinstance(self.prompt_tokens, int) or self.prompt_tokens < 1):
            raise ValueError(f"{where} has prompt_tokens {self.prompt_tokens!r}; it must be a positive number or None.")
        for column in self.columns:
            if not isinstance(column, Column) or column.field not in fields:
                raise ValueError(f"{where} has a column that is not a Column of a field of {schema_name}: {column!r}.")
        self._check_context(where)
        if not isinstance(self.node, str) or not self.node or self.node in GRAPH_NAMES or set(self.node) & set("|:"):
            raise ValueError(
                f"{where} has node {self.node!r}, a name the graph uses itself or cannot take; leave node out for "
                f"update_{self.name}."
            )

    def _check_context(self, where: str) -> None:
        """Refuse context kinds a kind cannot read, and an instruction naming what its update does not fill in."""
        for name in self.context_kinds:
            if not isinstance(name, str) or not name.isidentifier() or name == self.name:
                raise ValueError(f"{where} has context_kinds {name!r}, which is not the name of another kind.")
        if self.text and self.context_kinds:
            raise ValueError(f"{where} sets context_kinds, which a free-text kind (rewritten from itself) cannot read.")
        known = set(TEXT_INSTRUCTION_FIELDS if self.text else (*INSTRUCTION_FIELDS, *self.context_kinds))
        try:
            named = {field for _, field, _, _ in string.Formatter().parse(self.instruction) if field is not None}
        except ValueError as error:
            raise ValueError(f"{where} has an instruction that is not a format string ({error}).") from None
        if unknown := sorted(named - known):
            raise ValueError(f"{where} has an instruction naming {{{unknown[0]}}}; it may name {', '.join(sorted(known))}.")

    @cached_property
    def stored_schema(self) -> type[BaseModel]:
        """The schema as the store keeps documents: only its fields, each of its exact JSON type."""
        return type(
            f"Stored{self.schema.__name__}",
            (self.schema,),
            {
                "model_config": ConfigDict(extra="forbid", strict=True),
                "__doc__": f"A {self.label} document as the store keeps it.",
                "__module__": __name__,
            },
        )

    @cached_property
    def text_fields(self) -> tuple[str, ...]:
        """The fields holding words a person wrote (what a turn's words are matched against): strings without a
        format or fixed choices, lists of them, nested objects; not numbers, dates or statuses."""
        json_schema = self.schema.model_json_schema()
        definitions = json_schema.get("$defs", {})
        properties = json_schema.get("properties", {})
        return tuple(name for name, field in properties.items() if _text_value(field, definitions))

    def is_open(self, document: Mapping[str, Any]) -> bool:
        """Whether a document of this collection is open (its status is one of `open_statuses`); without a status
        field, every document is."""
        return not self.status_field or document.get(self.status_field) in self.open_statuses

    @property
    def max_chars(self) -> int | None:
        """The most characters a free-text kind's text may hold (MAISTRO_MAX_INSTRUCTION_CHARS); None for any other
        kind."""
        return current_settings().max_instruction_chars if self.text else None

    def text_problem(self, text: str) -> str | None:
        """Why `text` may not be this free-text kind's text, in a few words (it is longer than `max_chars`); None if
        it may, or the kind is not free text."""
        limit = self.max_chars
        if limit is None or len(text) <= limit:
            return None
        return (
            f"the text is {len(text):,} characters, over the {limit:,} the {self.title} may hold "
            "(MAISTRO_MAX_INSTRUCTION_CHARS)"
        )

    def prompt_text(self, text: str) -> str:
        """A free-text kind's text as prompts carry it: cut to `max_chars` (a text saved before the limit was set, or
        under a higher one, may be longer)."""
        limit = self.max_chars
        return text if limit is None else text[:limit]

    @property
    def title(self) -> str:
        """The memory's name in sentences for the user: "ToDo list" for a collection of ToDos, else the label."""
        return f"{self.label} list" if self.collection else self.label


PROFILE = MemoryKind(
    name="profile",
    schema=Profile,
    collection=False,
    description="personal information about the user",
    update_type="user",
    label="profile",
    key="user_profile",
    tell_user_rule=PROFILE_TELL_USER_RULE,
    examples=("I'm Lance, I live in Lisbon and work as a chef.", "My brother Sam loves jazz."),
)
TODO = MemoryKind(
    name="todo",
    schema=ToDo,
    collection=True,
    description="tasks the user mentions, finishes, changes or no longer needs",
    label="ToDo",
    instruction=TODO_INSTRUCTION,
    node="update_todos",
    status_field="status",
    open_statuses=OPEN_TODO_STATUSES,
    deadline_field="deadline",
    examples=("I need to book swim lessons for my son.", "I already paid the phone bill."),
    suggested_fields=("solutions",),
    render=todo_lines,
    expiring_statuses=("archived",),
    done_status="done",
    completed_field="completed_at",
    prompt_tokens=None,
    closed_name="done or archived",
    context_kinds=("instructions",),
    columns=(
        Column("task"),
        Column("status", default="not started", styles={"done": "green", "in progress": "yellow", "archived": "dim"}),
        Column("deadline", text=date_time_text),
        Column("time_to_complete", heading="Time", text=minutes_text),
        Column("solutions", text=bullets),
    ),
    plural="ToDos",
)
INSTRUCTIONS = MemoryKind(
    name="instructions",
    schema=Instructions,
    collection=False,
    description="preferences for how to update the ToDo list",
    label="instructions",
    key="user_instructions",
    text=True,
    instruction=CREATE_INSTRUCTIONS,
    tell_user_rule=INSTRUCTIONS_TELL_USER_RULE,
    examples=("Always write my ToDos in Spanish.",),
)
DEFAULT_MEMORY_KINDS: tuple[MemoryKind, ...] = (PROFILE, TODO, INSTRUCTIONS)


class UndeclaredDocument(BaseModel):
    """A document of a memory kind that is not declared: any JSON object, kept as it is stored."""

    model_config = ConfigDict(extra="allow")


def undeclared_kind(name: str) -> MemoryKind:
    """A stand-in for a memory kind that is not declared but has documents stored (a kind declared once, or by
    another configuration): a collection of any JSON objects, neither indexed nor checked against a schema, so
    that export, import and undo move its documents as they are. ValueError (one sentence) when no kind could
    have that name."""
    return MemoryKind(
        name=name, schema=UndeclaredDocument, collection=True, description=f"{name} (not declared)", label=name,
        indexed_fields=(),
    )


def kind_named(kinds: Iterable[MemoryKind], name: str) -> MemoryKind:
    """The kind called `name` among `kinds`; `UnknownKindError` when there is none."""
    for kind in kinds:
        if kind.name == name:
            return kind
    raise UnknownKindError(f"There is no memory kind {name!r}.")


def kind_for_update(kinds: Iterable[MemoryKind], update_type: str) -> MemoryKind:
    """The kind that `UpdateMemory(update_type=...)` routes to among `kinds`; `UnknownKindError` when there is none."""
    for kind in kinds:
        if kind.update_type == update_type:
            return kind
    raise UnknownKindError(f"No memory kind has the update type {update_type!r}.")


def check_kinds(kinds: Sequence[MemoryKind]) -> tuple[MemoryKind, ...]:
    """The kinds as a tuple, if they are MemoryKind objects with distinct names, update types and nodes; else ValueError."""
    if not isinstance(kinds, list | tuple) or not kinds or not all(isinstance(kind, MemoryKind) for kind in kinds):
        raise ValueError("The memory kinds must be a non-empty list of graph.MemoryKind objects.")
    for attribute in ("name", "update_type", "node"):
        values = [getattr(kind, attribute) for kind in kinds]
        if repeated := sorted({value for value in values if values.count(value) > 1}):
            raise ValueError(f"Two memory kinds share the {attribute} {', '.join(map(repr, repeated))}.")
    return tuple(kinds)


def _import_kinds_module(module_name: str) -> Any:
    """Import `module_name` from the import path; only when no module of that name is there, its top-level
    package or module from the working directory (as `langgraph dev` started there finds it).

    The working directory never goes onto the import path: a file there cannot shadow an installed or standard
    library module, neither the one named nor any the named module imports.
    """
    top = module_name.partition(".")[0]
    if top in sys.modules or importlib.util.find_spec(top) is not None:
        return importlib.import_module(module_name)
    spec = importlib.machinery.PathFinder.find_spec(top, [os.getcwd()])
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {top!r} on the import path or in the working directory")
    module = importlib.util.module_from_spec(spec)
    sys.modules[top] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[top]
        raise
    return importlib.import_module(module_name)


@functools.lru_cache(maxsize=8)
def load_memory_kinds(spec: str) -> tuple[MemoryKind, ...]:
    """The memory kinds a MAISTRO_MEMORY_KINDS value (`package.module:NAME`) names; `DEFAULT_MEMORY_KINDS` for "".

    The module is imported from the import path, else (that name only) from the working directory. Raises `SettingsError`, one
    sentence naming the variable, when the list cannot be used (the module does not import, has no such name,
    or the object is not a list of `MemoryKind` with distinct names).
    """
    if not spec:
        return DEFAULT_MEMORY_KINDS
    module_name, _, attribute = spec.partition(":")
    try:
        try:
            module = _import_kinds_module(module_name)
        except Exception as error:  # any failure of the user's module to import is reported, not raised
            raise ValueError(f"the module {module_name} cannot be imported ({type(error).__name__}: {error})") from None
        if not hasattr(module, attribute):
            raise ValueError(f"the module {module_name} has no {attribute}")
        return check_kinds(getattr(module, attribute))
    except ValueError as error:
        raise SettingsError(f"MAISTRO_MEMORY_KINDS={spec!r} is invalid: {str(error).rstrip('.')}.") from None


def configured_kinds() -> tuple[MemoryKind, ...]:
    """The memory kinds MAISTRO_MEMORY_KINDS names (`DEFAULT_MEMORY_KINDS` when it is unset); `SettingsError` when
    they cannot be loaded."""
    return load_memory_kinds(current_settings().memory_kinds_spec)


def resolve_kinds(kinds: Sequence[MemoryKind] | None) -> tuple[MemoryKind, ...]:
    """The kinds given, checked (`check_kinds`), or the configured ones when none are given."""
    return configured_kinds() if kinds is None else check_kinds(kinds)
