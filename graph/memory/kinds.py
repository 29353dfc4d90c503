"""The memory kinds: each long-term memory the agent keeps is declared once, as a `MemoryKind`, and the code
loops over a list of them (`DEFAULT_MEMORY_KINDS` holds the tutorial's three).

A kind is one document per user (its `key`) or a collection of documents, each a `schema` instance; or free
text (`text`), stored as `{"memory": text}` and rewritten whole by one model call. Its `name` is its store
namespace and the one name the code uses for it; `update_type` is the value of `UpdateMemory.update_type`
that routes a turn to it (the name unless given: the tutorial routes its profile as "user").
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict

from prompts import CREATE_INSTRUCTIONS, REWRITE_TEXT, TODO_INSTRUCTION, TRUSTCALL_INSTRUCTION
from schemas import Instructions, Profile, ToDo

# Namespaces the memory code keeps for itself: no kind may take them.
RESERVED_NAMES = ("history",)


class UnknownKindError(LookupError):
    """No memory kind of that name (or update type) is declared."""


@dataclass(frozen=True)
class MemoryKind:
    """One long-term memory: its name and stored shape, one document or many, and what the routing model reads.

    `description` says what belongs in it (the chat model reads it when deciding to update); `label` names one
    of its documents in sentences for the user (default: the name; `title` names the whole memory); `key` is
    where a single document is kept (default "user_<name>"); `text` makes it free text, rewritten with one
    model call instead of trustcall.

    `instruction` is the extraction prompt (default: trustcall's generic one, or a rewrite of the text for a
    text kind; `{language_rule}`, `{now}` and, for text, `{current}` are filled in); `inserts`, `patches` and
    `deletes` say what trustcall may do (default: a collection may insert and delete, and every kind may be
    patched); `node` names the update node (default "update_<name>"); `summary_field` names a document in
    reports and tables (default: the schema's first field); `indexed_fields` are what the store's semantic
    index embeds, when it has one (default: a collection's summary field; nothing of a single document);
    `render` turns the kind's documents into its section of the chat prompt (default: one line of JSON per
    document, or the text).
    """

    name: str
    schema: type[BaseModel]
    collection: bool
    description: str
    update_type: str = ""
    label: str = ""
    key: str = ""
    text: bool = False
    instruction: str = ""
    inserts: bool | None = None
    patches: bool = True
    deletes: bool | None = None
    node: str = ""
    summary_field: str = ""
    indexed_fields: tuple[str, ...] | None = None
    render: Callable[[Sequence[Mapping[str, Any]]], str] | None = None

    def __post_init__(self) -> None:
        if not self.name or not self.name.isidentifier() or self.name in RESERVED_NAMES:
            raise ValueError(
                f"A memory kind's name must be a Python identifier other than {', '.join(RESERVED_NAMES)}: "
                f"{self.name!r} is not."
            )
        if not (isinstance(self.schema, type) and issubclass(self.schema, BaseModel)):
            raise ValueError(f"The memory kind {self.name!r} needs a Pydantic model as its schema.")
        if self.text and self.collection:
            raise ValueError(f"The memory kind {self.name!r} cannot be free text and a collection at once.")
        object.__setattr__(self, "update_type", self.update_type or self.name)
        object.__setattr__(self, "label", self.label or self.name)
        object.__setattr__(self, "key", "" if self.collection else self.key or f"user_{self.name}")
        default_instruction = REWRITE_TEXT if self.text else TRUSTCALL_INSTRUCTION
        object.__setattr__(self, "instruction", self.instruction or default_instruction)
        object.__setattr__(self, "inserts", self.collection if self.inserts is None else self.inserts)
        object.__setattr__(self, "deletes", self.collection if self.deletes is None else self.deletes)
        object.__setattr__(self, "node", self.node or f"update_{self.name}")
        object.__setattr__(self, "summary_field", self.summary_field or next(iter(self.schema.model_fields), ""))
        if self.indexed_fields is None:
            object.__setattr__(self, "indexed_fields", (self.summary_field,) if self.collection else ())

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
    key="user_profile",
)
TODO = MemoryKind(
    name="todo",
    schema=ToDo,
    collection=True,
    description="tasks the user mentions, finishes, changes or no longer needs",
    label="ToDo",
    instruction=TODO_INSTRUCTION,
    node="update_todos",
)
INSTRUCTIONS = MemoryKind(
    name="instructions",
    schema=Instructions,
    collection=False,
    description="preferences for how to update the ToDo list",
    key="user_instructions",
    text=True,
    instruction=CREATE_INSTRUCTIONS,
)
DEFAULT_MEMORY_KINDS: tuple[MemoryKind, ...] = (PROFILE, TODO, INSTRUCTIONS)


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
