"""What a model extracts in JSON mode is kept only as far as the user said it (graph/memory/grounding.py), and the
news it answers maps onto the same changes trustcall's would (graph/nodes/json_extraction.py)."""

import json

import pytest

from graph.backends.json_calls import LIST_ITEMS, NESTED_LIST_ITEMS, STRING_CHARS, answer_tokens, bounded_schema
from graph.memory.grounding import UserWords, grounded_value
from graph.memory.kinds import PROFILE, TODO, MemoryKind
from graph.nodes.json_extraction import collection_changes, document_changes, news_parameters
from schemas import Profile


@pytest.mark.parametrize(
    ("said", "value"),
    [
        ("My name is Dana and I live in San Francisco.", "San Francisco, California"),
        ("I need to book swimming lessons for my son.", "Book swim lessons"),
        ("And the passport renewal is done now.", "Renew my passport"),
        ("你好，我叫王芳，住在上海。", "上海市"),
        ("Hi, I'm Bo.", "Bo"),
        ("Pay the gym fee by Friday, it is 45 dollars.", "Pay 45 dollars gym fee"),
    ],
)
def test_what_the_user_said_is_grounded(said, value):
    assert UserWords.of([said]).grounds(value)


@pytest.mark.parametrize(
    ("said", "value"),
    [
        ("Hi there! How are you?", "Mike"),
        ("Hi there! How are you?", "New York City"),
        ("Hello!", "Li"),
        ("I need to book swim lessons.", "Buy a birthday present for Anna"),
        ("Pay the gym fee, it is 45 dollars.", "Pay the gym fee of 54"),
        ("你好", "上海"),
        ("Call me.", ""),
    ],
)
def test_what_the_user_did_not_say_is_not(said, value):
    assert not UserWords.of([said]).grounds(value)


def test_a_list_keeps_the_items_the_user_said_and_other_values_stay():
    words = UserWords.of(["I love rock climbing and chess."])
    assert grounded_value(["rock climbing", "knitting", "chess"], words) == ["rock climbing", "chess"]
    assert grounded_value(["knitting"], words) is None
    assert grounded_value(30, words) == 30


EMPTY_PROFILE = Profile().model_dump()


def test_a_profile_keeps_what_was_said_and_merges_it_into_the_stored_one():
    before = {**EMPTY_PROFILE, "name": "Lance", "interests": ["chess"]}
    words = UserWords.of(["I moved to Oakland and I'm into chess and cycling now."])
    news = {**EMPTY_PROFILE, "name": "Mike", "location": "Oakland", "interests": ["cycling", "chess", "golf"]}

    [change] = document_changes(PROFILE, news, {"user_profile": before}, lambda _: "user_profile", words)

    assert change.action == "updated" and change.key == "user_profile"
    assert change.after == {**before, "location": "Oakland", "interests": ["chess", "cycling"]}


def test_a_greeting_creates_no_profile():
    words = UserWords.of(["Hi there! How are you?"])
    news = {**EMPTY_PROFILE, "name": "Mike", "location": "New York City", "interests": ["chess"]}
    assert document_changes(PROFILE, news, {}, lambda _: "user_profile", words) == []


SWIM = {"task": "Book swim lessons", "time_to_complete": 30, "deadline": None, "solutions": ["Pool"], "status": "not started"}
DENTIST = {**SWIM, "task": "Call the dentist", "solutions": ["Dr. Lee"]}
NUMBERED = [("swim-key", SWIM), ("dentist-key", DENTIST)]


def new_key(index: int) -> str:
    return f"new-{index}"


def test_todos_are_created_changed_and_removed_only_where_the_user_named_them():
    words = UserWords.of(["I booked the swim lessons, I need to buy milk, and forget the dentist."])
    news = {
        "new": [
            {"task": "Buy milk", "solutions": ["Corner shop"], "time_to_complete": 10},
            {"task": "Walk the dog", "solutions": ["Park"]},
            {"task": "Book swim lessons", "time_to_complete": 30, "solutions": ["Pool"]},
        ],
        "changed": [{"item": "1", "status": "done"}, {"item": "2", "status": "in progress"}],
        "removed": ["2"],
    }

    changes = collection_changes(TODO, news, NUMBERED, new_key, words, words)

    assert [(change.action, change.key) for change in changes] == [
        ("created", "new-0"),
        ("updated", "swim-key"),
        ("updated", "dentist-key"),
    ]
    assert changes[0].after["task"] == "Buy milk" and changes[0].after["status"] == "not started"
    assert changes[1].after == {**SWIM, "status": "done", "completed_at": None}  # stamped when committed


def test_a_listed_todo_echoed_as_new_is_not_created_again():
    words = UserWords.of(["I booked the swim lessons."])
    news = {"new": [{"task": "book swim  Lessons", "solutions": ["Call the pool", "Book online"]}] * 4, "changed": [], "removed": []}
    assert collection_changes(TODO, news, NUMBERED, new_key, words, words) == []


def test_a_change_to_a_todo_the_latest_message_does_not_name_is_dropped():
    said = UserWords.of(["Remind me to call the dentist.", "I booked the swim lessons."])
    latest = UserWords.of(["I booked the swim lessons."])
    news = {"new": [], "changed": [{"item": "2", "status": "done"}], "removed": ["2"]}
    assert collection_changes(TODO, news, NUMBERED, new_key, said, latest) == []
    assert [change.action for change in collection_changes(TODO, news, NUMBERED, new_key, said, said)] == ["updated"]


def test_a_new_todo_without_a_said_task_or_with_a_bad_field_keeps_what_fits():
    words = UserWords.of(["Remind me to pay rent by the first."])
    news = {"new": [{"task": "Feed the cat", "solutions": ["Food"]}, {"task": "Pay rent", "deadline": "soon", "solutions": ["Bank"]}]}
    [change] = collection_changes(TODO, news, [], new_key, words, words)
    assert change.after["task"] == "Pay rent" and change.after["deadline"] is None


def test_the_news_schema_follows_what_the_kind_allows_and_every_schema_sent_is_bounded():
    parameters = news_parameters(TODO, 2)
    assert list(parameters["properties"]) == ["new", "changed", "removed"]
    assert "status" not in parameters["properties"]["new"]["items"]["properties"]
    assert parameters["properties"]["removed"]["items"] == {"enum": ["1", "2"]}
    assert list(news_parameters(TODO, 0)["properties"]) == ["new"]
    keep_only = MemoryKind(name="notes", schema=TODO.schema, collection=True, description="notes", inserts=False, deletes=False)
    assert list(news_parameters(keep_only, 3)["properties"]) == ["changed"]

    bounded = bounded_schema(news_parameters(PROFILE, 0))
    name = bounded["properties"]["name"]["anyOf"][0]
    assert name == {"type": "string", "maxLength": STRING_CHARS}
    assert bounded["properties"]["interests"]["maxItems"] == LIST_ITEMS
    assert bounded_schema({"type": "array", "items": {"type": "string", "maxLength": 5}, "maxItems": 3}) == {
        "type": "array", "items": {"type": "string", "maxLength": 5}, "maxItems": 3
    }


def test_a_list_inside_a_list_gets_fewer_items_and_the_longest_answer_fits_the_token_limit():
    todo_news = bounded_schema(news_parameters(TODO, 3))
    assert todo_news["properties"]["new"]["maxItems"] == LIST_ITEMS
    assert todo_news["properties"]["new"]["items"]["properties"]["solutions"]["maxItems"] == NESTED_LIST_ITEMS

    profile_news = bounded_schema(news_parameters(PROFILE, 0))
    text, items = "x" * STRING_CHARS, ["y" * STRING_CHARS] * LIST_ITEMS
    longest = {"name": text, "location": text, "job": text, "connections": items, "interests": items}
    assert len(json.dumps(longest)) <= answer_tokens(profile_news) < 2 * len(json.dumps(longest))
