"""Say what a change replaced: the notes (old → new), the `memory_update` events (field, old, new), and one
`maistro undo` that brings the old value back."""

import pytest
from langchain_core.messages import HumanMessage
from typer.testing import CliRunner

from graph import build_graph, close_graph
from graph.app.cli import app
from graph.app.session import ChatSession, Note
from graph.memory.kinds import DEFAULT_MEMORY_KINDS, TODO
from graph.memory.notes import change_notes
from graph.memory.replaced import VALUE_CHARS, event_changes, value_text
from graph.memory.store import namespace, search_all
from graph.nodes.update import MEMORY_UPDATE_EVENT
from testing.helpers import config, profile_of
from testing.scripted_model import calls, patch_where, profile, replace, route, say, todo

RENT = {"task": "Pay rent", "deadline": "2026-12-01T00:00:00+00:00", "solutions": ["Bank transfer"], "status": "not started"}


def change(action: str, before: dict | None, after: dict | None, key: str = "k1") -> dict:
    return {"action": action, "key": key, "before": before, "after": after}


@pytest.mark.parametrize(
    "artifact, notes",
    [
        (
            {"kind": "profile", "changes": [change("updated", {"name": "Dana", "location": "San Francisco"}, {"name": "Dana", "location": "Oakland"})]},
            ["Profile updated (location San Francisco → Oakland)"],
        ),
        (
            {"kind": "profile", "changes": [change("updated", {"location": "San Francisco"}, {"location": "Oakland", "job": "Nurse"})]},
            ["Profile updated (location San Francisco → Oakland; job)"],
        ),
        (
            {"kind": "todo", "changes": [change("updated", RENT, {**RENT, "deadline": "2026-12-05T00:00:00+00:00"})]},
            ["ToDo updated: Pay rent (deadline 2026-12-01 → 2026-12-05)"],
        ),
        (
            {"kind": "todo", "changes": [change("updated", RENT, {**RENT, "deadline": "2026-12-05T18:30:00+00:00"})]},
            ["ToDo updated: Pay rent (deadline 2026-12-01 → 2026-12-05 18:30)"],
        ),
        (
            {"kind": "todo", "changes": [change("updated", RENT, {**RENT, "solutions": ["Bank transfer", "Cheque"]})]},
            ["ToDo updated: Pay rent (solutions)"],
        ),
        (
            {"kind": "todo", "changes": [change("updated", RENT, {**RENT, "solutions": ["Cheque"]})]},
            ["ToDo updated: Pay rent (solutions Bank transfer → Cheque)"],
        ),
        (
            {"kind": "profile", "changes": [change("updated", {"location": "Oakland"}, {"location": None})]},
            ["Profile updated (location Oakland → none)"],
        ),
        (
            {"kind": "instructions", "changes": [change("updated", {"memory": "Be brief."}, {"memory": "Be thorough."})]},
            ["Instructions updated:\n  - Be brief.\n  + Be thorough."],
        ),
    ],
)
def test_a_note_says_what_a_change_replaced(artifact, notes):
    assert change_notes(artifact, DEFAULT_MEMORY_KINDS) == notes


def test_a_long_value_is_shortened_in_the_note_and_whole_in_the_event():
    long = "A very long street name in a town far away, by the sea, past the hills"
    before, after = {"location": long}, {"location": "Oakland"}

    (note,) = change_notes({"kind": "profile", "changes": [change("updated", before, after)]}, DEFAULT_MEMORY_KINDS)

    shown = value_text(long)
    assert len(shown) == VALUE_CHARS and shown.endswith("…") and long.startswith(shown[:-1])
    assert note == f"Profile updated (location {shown} → Oakland)"
    assert event_changes([change("updated", before, after)]) == [
        {"action": "updated", "key": "k1", "field": "location", "old": long, "new": "Oakland"}
    ]


def test_created_and_deleted_documents_travel_whole_in_the_event():
    assert event_changes([change("created", None, RENT), change("deleted", RENT, None, key="k2")]) == [
        {"action": "created", "key": "k1", "field": None, "old": None, "new": RENT},
        {"action": "deleted", "key": "k2", "field": None, "old": RENT, "new": None},
    ]


@pytest.fixture
def data_dir(tmp_path):
    return tmp_path / "data"


@pytest.fixture
def sqlite_agent(model, data_dir):
    agent = build_graph(data_dir, chat_model=lambda _settings: model)
    yield agent
    close_graph(agent)


def events_of(agent, text: str) -> list[dict]:
    return [
        chunk[MEMORY_UPDATE_EVENT]
        for chunk in agent.stream({"messages": [HumanMessage(text)]}, config(), stream_mode="custom")
        if MEMORY_UPDATE_EVENT in chunk
    ]


def test_a_moved_location_says_old_to_new_in_chat_and_one_undo_restores_it(sqlite_agent, model, data_dir):
    model.add("task_maistro", route("user"), say("Hi Dana!"))
    model.add("update_profile", calls(profile(name="Dana", location="San Francisco")))
    list(ChatSession(sqlite_agent, "Lance", "1").send("I'm Dana and I live in San Francisco."))
    model.add("task_maistro", route("user"), say("Oakland it is."))
    model.add("update_profile", patch_where("San Francisco", replace("/location", "Oakland")))

    notes = [event for event in ChatSession(sqlite_agent, "Lance", "1").send("I moved to Oakland.") if isinstance(event, Note)]

    assert notes == [Note("Profile updated (location San Francisco → Oakland)", failed=False)]
    assert profile_of(sqlite_agent)["location"] == "Oakland"

    listed = CliRunner().invoke(app, ["history", "--user", "Lance", "--data-dir", str(data_dir)], env={"COLUMNS": "200"})
    assert "(location San Francisco → Oakland)" in listed.output, listed.output
    undone = CliRunner().invoke(app, ["undo", "--user", "Lance", "--data-dir", str(data_dir)])

    assert undone.exit_code == 0, undone.output
    assert profile_of(sqlite_agent)["location"] == "San Francisco"


def test_the_event_carries_field_old_and_new_for_a_moved_deadline(sqlite_agent, model):
    model.add("task_maistro", route("todo"), say("Added."))
    model.add("update_todos", calls(todo("Pay rent", deadline="2026-12-01T00:00:00+00:00", solutions=["Bank transfer"])))
    events_of(sqlite_agent, "Pay rent by December 1.")
    model.add("task_maistro", route("todo"), say("Moved."))
    model.add("update_todos", patch_where("Pay rent", replace("/deadline", "2026-12-05T00:00:00+00:00")))

    (event,) = events_of(sqlite_agent, "Rent is due December 5 now.")

    (item,) = search_all(sqlite_agent.store, namespace(TODO, "Lance"))
    key = item.key
    assert event["notes"] == ["ToDo updated: Pay rent (deadline 2026-12-01 → 2026-12-05)"]
    assert event["changes"] == [
        {"action": "updated", "key": key, "field": "deadline", "old": "2026-12-01T00:00:00Z", "new": "2026-12-05T00:00:00Z"}
    ]
