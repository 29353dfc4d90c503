"""The memory page's operations on every memory kind (`graph.server.memory_page`), on the project's SQLite store:
add, replace, change and delete documents of an added collection, a single document and a text kind, each
with its history entry and undo; the version check; one-sentence refusals; search over every indexed kind."""

import pytest

from graph.backends.storage import open_store
from graph.memory.changes import list_history
from graph.memory.kinds import INSTRUCTIONS, PROFILE, TODO
from graph.memory.store import namespace, read_kind
from graph.server.memory_page import (
    PageError,
    add_document,
    delete_document,
    edit_document,
    page_kind,
    read_memories,
    save_document,
    search_memories,
    undo,
)
from testing.page_kinds import HABIT, KINDS, TONE

USER = "Lance"
RUN = {
    "name": "Run 5k",
    "frequency": "weekly",
    "started": "2026-03-02",
    "target": 3,
    "shared": False,
    "days": ["Mon"],
    "buddy": {"name": "Sam", "phone": None},
    "steps": [{"what": "Stretch by the lake", "minutes": 5}],
}


@pytest.fixture
def store(tmp_path):
    """The project's SQLite store, without a semantic index (search goes by words)."""
    with open_store(tmp_path) as opened:
        yield opened


def refusal(call) -> tuple[int, str]:
    """The status and sentence of the PageError `call()` raises."""
    with pytest.raises(PageError) as refused:
        call()
    return refused.value.status, refused.value.detail


def test_a_collection_of_an_added_kind_is_added_to_replaced_changed_and_deleted_with_history_and_undo(store):
    added = add_document(store, USER, HABIT, RUN)
    key = added["key"]
    assert (added["saved"], added["kind"], added["value"]) == (True, "habit", RUN)
    steps = [{"what": "Stretch by the lake", "minutes": 10}, {"what": "Cool down", "minutes": None}]
    save_document(store, USER, HABIT, key, {**RUN, "steps": steps}, base=RUN)
    edit_document(store, USER, HABIT, key, {"frequency": "daily"})
    assert [item.value for item in read_kind(store, HABIT, USER)] == [{**RUN, "steps": steps, "frequency": "daily"}]
    delete_document(store, USER, HABIT, key, base={**RUN, "steps": steps, "frequency": "daily"})
    assert read_kind(store, HABIT, USER) == []

    history = list_history(store, USER)
    assert [(entry["kind"], entry["action"], entry["message"]) for entry in history] == [
        ("habit", "created", "Added on the memory page"),
        ("habit", "updated", "Changed steps on the memory page"),
        ("habit", "updated", "Changed frequency on the memory page"),
        ("habit", "deleted", "Deleted on the memory page"),
    ]
    undone = undo(store, USER, history[-1]["id"], KINDS)
    assert undone["undoes"] == history[-1]["id"]
    assert read_kind(store, HABIT, USER)[0].value["frequency"] == "daily"


def test_single_documents_and_text_kinds_are_created_then_replaced_under_their_own_key(store):
    save_document(store, USER, PROFILE, PROFILE.key, {"name": "Lance", "connections": [], "interests": []}, base=None)
    save_document(store, USER, TONE, TONE.key, {"memory": "Warm and brief."}, base=None)
    save_document(store, USER, TONE, TONE.key, {"memory": "Warm, brief, no emoji."}, base={"memory": "Warm and brief."})
    assert store.get(namespace(TONE, USER), TONE.key).value == {"memory": "Warm, brief, no emoji."}
    assert [entry["message"] for entry in list_history(store, USER)][-1] == "Changed memory on the memory page"
    view = read_memories(store, USER, KINDS)
    assert {name: [entry["value"] for entry in entries] for name, entries in view["documents"].items()} == {
        "profile": [{"name": "Lance", "connections": [], "interests": []}],
        "todo": [],
        "instructions": [],
        "contact": [],
        "health": [],
        "habit": [],
        "tone": [{"memory": "Warm, brief, no emoji."}],
    }
    assert [kind["name"] for kind in view["kinds"] if kind["searchable"]] == ["todo", "contact", "habit"]


def test_stale_missing_and_bad_documents_are_refused_with_one_sentence_and_nothing_changes(store):
    key = add_document(store, USER, HABIT, RUN)["key"]
    edit_document(store, USER, HABIT, key, {"target": 4})  # the agent, or another tab
    before = (read_kind(store, HABIT, USER), list_history(store, USER))

    stale = "Your habit changed since the page showed it (the agent or another tab edited it); look at the new " \
        "version and make your change again."
    assert refusal(lambda: save_document(store, USER, HABIT, key, {**RUN, "target": 5}, base=RUN)) == (409, stale)
    assert refusal(lambda: delete_document(store, USER, HABIT, key, base=RUN)) == (409, stale)
    assert refusal(lambda: edit_document(store, USER, HABIT, "gone", {"target": 1}, base=RUN)) == (409, stale)
    assert refusal(lambda: edit_document(store, USER, HABIT, "gone", {"target": 1})) == (
        404, "There is no such habit in your memories (it may have been deleted)."
    )
    assert refusal(lambda: save_document(store, USER, HABIT, key, {**RUN, "steps": [{"what": "Run", "minutes": "ten"}]})) == (
        400, "The habit was not saved: steps.0.minutes: Input should be a valid integer, unable to parse string as an integer."
    )
    assert refusal(lambda: add_document(store, USER, HABIT, {**RUN, "colour": "red"})) == (
        400, "The habit was not saved: colour: Extra inputs are not permitted."
    )
    assert refusal(lambda: add_document(store, USER, HABIT, "Run")) == (400, "Send the habit as a JSON object in `value`.")
    assert refusal(lambda: add_document(store, USER, TONE, {"memory": "Loud."})) == (
        400, "Your tone is one document: save it rather than adding another."
    )
    assert refusal(lambda: save_document(store, USER, TONE, "other", {"memory": "Loud."})) == (
        404, "Your tone is kept under the key 'user_tone' only."
    )
    assert refusal(lambda: delete_document(store, USER, TONE, TONE.key)) == (404, "You have no tone to delete.")
    assert refusal(lambda: page_kind(KINDS, "mood")) == (404, "There is no memory kind called 'mood' on this server.")
    assert (read_kind(store, HABIT, USER), list_history(store, USER)) == before


def test_search_finds_the_words_in_every_indexed_kind_nested_values_included(store):
    add_document(store, USER, HABIT, RUN)
    add_document(store, USER, TODO, {"task": "Buy running shoes", "solutions": ["The shop by the lake"]})
    save_document(store, USER, INSTRUCTIONS, INSTRUCTIONS.key, {"memory": "Mention the lake."})

    found = search_memories(store, USER, KINDS, "by the LAKE", 10)

    assert found["semantic"] is False
    assert [(result["kind"], result["value"].get("name") or result["value"].get("task")) for result in found["results"]] == [
        ("todo", "Buy running shoes"), ("habit", "Run 5k")
    ], "the instructions are not an indexed kind"
    assert search_memories(store, USER, KINDS, "swimming", 10)["results"] == []
