"""The memory kinds are declared once (`graph.MemoryKind`): the defaults keep the tutorial's stored names and
shapes, a minimal declaration is a complete kind, and the code reads kinds from the registry."""

import re
from typing import Optional

import pytest
from langgraph.graph import MessagesState
from pydantic import BaseModel, ConfigDict, Field

from graph import DEFAULT_MEMORY_KINDS, MemoryKind
from graph.memory.admin import export_memories, import_memories
from graph.memory.changes import ChangeContext, MemoryChange, commit_changes, document_problem, list_history
from graph.memory.formats import Column
from graph.memory.kinds import GRAPH_NAMES, RESERVED_NAMES, UnknownKindError, kind_named
from graph.memory.store import DONE_LOG, HISTORY, INTERNAL_NAMESPACES, namespace, read_kind
from graph.state import State
from schemas import Instructions, Profile, ToDo
from testing.stored_names import INSTRUCTIONS, INSTRUCTIONS_KEY, PROFILE, PROFILE_KEY, TODO


class Contact(BaseModel):
    """A person the user knows."""

    name: str = Field(description="The person's name.")
    phone: Optional[str] = Field(None, description="Their phone number.")


CONTACT = MemoryKind(name="contact", schema=Contact, collection=True, description="People the user knows")


def test_the_default_kinds_keep_the_tutorials_stored_names_keys_shapes_and_update_types():
    stored = [(kind.name, kind.key, kind.schema, kind.collection, kind.update_type) for kind in DEFAULT_MEMORY_KINDS]
    assert stored == [
        (PROFILE, PROFILE_KEY, Profile, False, "user"),
        (TODO, "", ToDo, True, "todo"),
        (INSTRUCTIONS, INSTRUCTIONS_KEY, Instructions, False, "instructions"),
    ]
    assert [kind.text for kind in DEFAULT_MEMORY_KINDS] == [False, False, True]
    assert [kind.indexed_fields for kind in DEFAULT_MEMORY_KINDS] == [(), ("task",), ()]


def test_a_kind_declared_with_four_fields_gets_its_defaults():
    assert (CONTACT.update_type, CONTACT.label, CONTACT.title, CONTACT.key, CONTACT.text) == (
        "contact", "contact", "contact list", "", False
    )
    journal = MemoryKind(name="journal", schema=Contact, collection=False, description="The user's journal")
    assert (journal.key, journal.title) == ("user_journal", "contact"), "a document is named after its schema"
    assert (CONTACT.summary_field, CONTACT.indexed_fields, journal.indexed_fields) == ("name", ("name",), ())


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": "my.kind"}, "must be a Python identifier"),
        ({"name": "history"}, "other than history"),
        ({"name": "unindexed"}, "other than history, unindexed, pending, memory_sources, past_facts, done_log: 'unindexed' is not"),
        ({"name": "pending"}, "other than history, unindexed, pending, memory_sources, past_facts, done_log: 'pending' is not"),
        ({"schema": dict}, "needs a Pydantic model"),
        ({"text": True}, "cannot be free text and a collection"),
    ],
)
def test_a_kind_that_cannot_work_is_refused_with_one_sentence(fields, message):
    declared = {"name": "contact", "schema": Contact, "collection": True, "description": "People", **fields}
    with pytest.raises(ValueError, match=message):
        MemoryKind(**declared)


def test_no_kind_may_take_a_namespace_the_memory_code_keeps_for_itself():
    assert set(RESERVED_NAMES) == {HISTORY, DONE_LOG, *INTERNAL_NAMESPACES}


def test_a_kind_is_found_by_name_and_an_unknown_name_says_so():
    assert kind_named([*DEFAULT_MEMORY_KINDS, CONTACT], "contact") is CONTACT
    with pytest.raises(UnknownKindError, match="There is no memory kind 'contact'"):
        kind_named(DEFAULT_MEMORY_KINDS, "contact")


def test_a_new_kinds_documents_are_checked_against_its_schema_exactly():
    assert document_problem(CONTACT, "ada", {"name": "Ada", "phone": None}) is None
    assert document_problem(CONTACT, "ada", {"name": "Ada", "email": "a@b"}) == "email: Extra inputs are not permitted"
    assert document_problem(CONTACT, "ada", {"name": 7}) == "name: Input should be a valid string"


def test_a_new_kind_is_committed_with_history_exported_and_imported(agent):
    memory_store = agent.store
    kinds = [*DEFAULT_MEMORY_KINDS, CONTACT]
    ada = {"name": "Ada", "phone": "555-0100"}
    context = ChangeContext(thread_id="t", message="Ada's number is 555-0100", seed="contact-seed")
    commit_changes(memory_store, "Lance", CONTACT, [MemoryChange("created", "ada", None, ada)], context)
    assert [item.value for item in read_kind(memory_store, CONTACT, "Lance")] == [ada]
    assert [(entry["kind"], entry["key"]) for entry in list_history(memory_store, "Lance")] == [("contact", "ada")]
    exported = export_memories(memory_store, "Lance", kinds)
    assert exported["contact"] == {"ada": ada}
    counts = import_memories(memory_store, "Grace", exported, kinds)
    assert counts["contact"] == 1
    assert memory_store.get(namespace(CONTACT, "Grace"), "ada").value == ada


class Tone(BaseModel):
    """How the user wants to be answered."""

    style: str = Field(description="The tone, in words.")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"schema": Tone, "collection": False, "text": True}, "free text, so its schema needs a `memory: str` field, which Tone lacks"),
        ({"guidance": True}, "sets guidance, which only a free-text kind"),
        ({"summary_field": "nickname"}, "has summary_field 'nickname', which is not a field of Contact"),
        ({"indexed_fields": ("name", "email[*]")}, "indexes 'email[*]' (indexed_fields), which is not a field of Contact"),
        ({"status_field": "state", "open_statuses": ("open",)}, "has status_field 'state', which is not a field of Contact"),
        ({"open_statuses": ("open",)}, "needs status_field and open_statuses together"),
        ({"deadline_field": "due"}, "has deadline_field 'due', which is not a field of Contact"),
        ({"node": "task_maistro"}, "has node 'task_maistro', a name the graph uses itself"),
        ({"node": "__end__"}, "has node '__end__', a name the graph uses itself"),
        ({"node": "messages"}, "has node 'messages', a name the graph uses itself"),
        ({"expiring_statuses": ("done",)}, "has expiring_statuses, which must be status values that are not open ones"),
        (
            {"status_field": "phone", "open_statuses": ("x",), "expiring_statuses": ("x",)},
            "has expiring_statuses, which must be status values that are not open ones",
        ),
        ({"expiring_statuses": "done"}, "needs expiring_statuses as a list of strings, not one string"),
        ({"done_status": "done"}, "needs done_status and completed_field together"),
        (
            {"status_field": "phone", "open_statuses": ("x",), "done_status": "x", "completed_field": "name"},
            "needs done_status and completed_field together, with a status_field whose done_status is not open",
        ),
        (
            {"status_field": "phone", "open_statuses": ("x",), "done_status": "y", "completed_field": "finished"},
            "has completed_field 'finished', which is not a field of Contact",
        ),
        ({"prompt_tokens": 0}, "has prompt_tokens 0; it must be a positive number or None"),
        ({"columns": (Column("email"),)}, "has a column that is not a Column of a field of Contact"),
        ({"context_kinds": ("contact",)}, "has context_kinds 'contact', which is not the name of another kind"),
        ({"instruction": "Keep {contacts} {now}"}, "has an instruction naming {contacts}; it may name language_rule, now"),
        (
            {"schema": Instructions, "collection": False, "text": True, "context_kinds": ("profile",)},
            "sets context_kinds, which a free-text kind (rewritten from itself) cannot read",
        ),
        (
            {"schema": Instructions, "collection": False, "text": True, "instruction": "Rewrite {current} by {now}"},
            "has an instruction naming {now}; it may name current, description, memory",
        ),
    ],
)
def test_a_declaration_that_would_fail_later_is_refused_when_declared_naming_the_field(fields, message):
    declared = {"name": "contact", "schema": Contact, "collection": True, "description": "People", **fields}
    with pytest.raises(ValueError, match=re.escape(message)) as refused:
        MemoryKind(**declared)
    assert str(refused.value).count(". ") == 0 and str(refused.value).startswith("The memory kind 'contact'")


def test_the_graphs_own_names_cover_the_state_keys():
    assert set(State.__annotations__) | set(MessagesState.__annotations__) <= set(GRAPH_NAMES)


def test_default_labels_come_from_the_schemas_title_in_words():
    class HealthNote(BaseModel):
        """A note."""

        text: str

    class Titled(BaseModel):
        """A habit."""

        model_config = ConfigDict(title="Daily habit")
        name: str

    assert MemoryKind(name="health", schema=HealthNote, collection=False, description="d").label == "health note"
    assert MemoryKind(name="habits", schema=Titled, collection=True, description="d").title == "daily habit list"
    assert [kind.label for kind in DEFAULT_MEMORY_KINDS] == ["profile", "ToDo", "instructions"]


def test_a_turns_words_are_matched_against_the_fields_people_write():
    todo = kind_named(DEFAULT_MEMORY_KINDS, TODO)
    assert todo.text_fields == ("task", "solutions"), "not the deadline, the minutes or the status"
    assert CONTACT.text_fields == ("name", "phone")
