"""Importing an export: every section and history entry is checked strictly, before anything is written."""

import json
import sqlite3
import time

import pytest
from typer.testing import CliRunner

from graph.app.cli import app
from graph.memory.admin import (
    EXPORT_FORMAT,
    IMPORT_MESSAGE,
    InvalidExportError,
    export_memories,
    import_memories,
    user_items,
)
from graph.memory.changes import list_history, undo_change
from graph.memory.store import HISTORY, namespace
from testing.helpers import LANCE_PROFILE, SWIM_ITEM, before_import, todos, turn
from testing.scripted_model import calls, patch_where, remove_where, replace, route, say, todo
from testing.stored_names import PROFILE, TODO

CARD = "4111 1111 1111 1111"


def entry(**fields) -> dict:
    """A valid history entry (a ToDo created), with `fields` changed."""
    return {
        "id": "c1", "time": "2026-01-05T10:00:00+00:00", "order": 0, "thread_id": "t1", "kind": "todo",
        "message": "Book swim lessons", "action": "created", "key": "b-swim", "before": None, "after": SWIM_ITEM,
        **fields,
    }


def without(mapping: dict, name: str) -> dict:
    return {key: value for key, value in mapping.items() if key != name}


@pytest.mark.parametrize(
    "sections, problem",
    [
        ({HISTORY: {"c1": without(entry(), "order")}}, '"history" item "c1" is invalid: order: Field required'),
        (
            {HISTORY: {"c1": entry(time="9999-12-31T00:00:00+00:00", action="updated", before={"task": 1})}},
            '"history" item "c1" is invalid: its time is in the future',
        ),
        (
            {HISTORY: {"c1": entry(action="updated", before={**SWIM_ITEM, "status": "someday"})}},
            """its "before" is not a valid todo (status: Input should be 'not started', 'in progress', 'done' or""",
        ),
        ({HISTORY: {"c1": entry(after={**SWIM_ITEM, "owner": "mallory"})}}, 'its "after" is not a valid todo (owner: Extra'),
        ({HISTORY: {"c1": entry(note="hello")}}, "note: Extra inputs are not permitted"),
        ({HISTORY: {"c1": entry(time="2026-01-05T10:00:00")}}, "time: Value error, must carry a UTC offset"),
        ({HISTORY: {"c1": entry(order="0")}}, "order: Input should be a valid integer"),
        ({HISTORY: {"other": entry()}}, '"history" item "other" is invalid: its id differs from its key'),
        ({HISTORY: {"c1": entry(action="updated", before=SWIM_ITEM, after=None)}}, 'a change "updated" must have an "after"'),
        (
            {HISTORY: {"c1": entry(kind="profile", key="second-profile", after=LANCE_PROFILE)}},
            'the profile is kept under the key "user_profile" only',
        ),
        ({TODO: {"k": {**SWIM_ITEM, "secret_note": "x"}}}, '"todo" item "k" is invalid: secret_note: Extra inputs'),
        ({TODO: {"k": {**SWIM_ITEM, "time_to_complete": "30"}}}, "time_to_complete: Input should be a valid integer"),
        ({TODO: {"k": {**SWIM_ITEM, "task": "Pay\x00rent"}}}, "it contains a NUL character"),
        ({TODO: {"k" * 300: SWIM_ITEM}}, "its key is longer than 256 characters"),
        ({TODO: {"line\nbreak": SWIM_ITEM}}, "its key contains a control character"),
        ({PROFILE: {"user_profile": {**LANCE_PROFILE, "password": "x"}}}, "password: Extra inputs are not permitted"),
        (
            {PROFILE: {"user_profile": {**LANCE_PROFILE, "timezone": "Mars/Base"}}},
            "timezone: Value error, 'Mars/Base' is not a known IANA time zone, such as Asia/Tokyo",
        ),
    ],
)
def test_an_invalid_item_rejects_the_whole_file_with_one_sentence(agent, sections, problem):
    data = {"format": EXPORT_FORMAT, TODO: {"ok": SWIM_ITEM}, **sections}

    with pytest.raises(InvalidExportError) as refused:
        import_memories(agent.store, "Ann", data)

    assert problem in str(refused.value) and "\n" not in str(refused.value)
    assert user_items(agent.store, "Ann") == [], "nothing of the file was written"


def test_a_profile_with_its_time_zone_imports(agent):
    profile = {**LANCE_PROFILE, "timezone": "America/Los_Angeles"}
    import_memories(agent.store, "Ann", {"format": EXPORT_FORMAT, PROFILE: {"user_profile": profile}})

    assert agent.store.get(namespace(PROFILE, "Ann"), "user_profile").value["timezone"] == "America/Los_Angeles"


def test_secrets_in_keys_are_redacted_like_values(agent):
    key = f"Pay with card {CARD}"
    data = {
        "format": EXPORT_FORMAT,
        TODO: {key: {**SWIM_ITEM, "task": key}},
        HISTORY: {"c1": entry(key=key, after={**SWIM_ITEM, "task": key})},
    }

    import_memories(agent.store, "Ann", data)

    exported = export_memories(agent.store, "Ann")
    assert "4111" not in json.dumps(exported)
    assert list(exported[TODO]) == ["Pay with card [redacted]"]
    assert exported[HISTORY]["c1"]["key"] == "Pay with card [redacted]", "the entry still names its document"


def test_keys_that_become_equal_once_redacted_are_refused(agent):
    data = {"format": EXPORT_FORMAT, TODO: {f"card {CARD}": SWIM_ITEM, "card 5555 5555 5555 4444": SWIM_ITEM}}

    with pytest.raises(InvalidExportError, match="has the same key as another once secrets are redacted"):
        import_memories(agent.store, "Ann", data)
    assert user_items(agent.store, "Ann") == []


@pytest.fixture
def short_ttl(monkeypatch):
    """Archived ToDos live one second (set before `agent` is built)."""
    monkeypatch.setenv("MAISTRO_DONE_TODO_TTL_DAYS", str(1 / 24 / 60 / 60))
    monkeypatch.setenv("MAISTRO_TTL_SWEEP_MINUTES", str(1 / 60 / 4))


def test_an_export_of_every_kind_of_change_imports_and_its_archived_todos_expire(short_ttl, agent, model):
    model.add("task_maistro", route("todo"), say("Added."), route("todo"), say("Started."), route("todo"), say("Gone."))
    model.add(
        "update_todos",
        calls(todo("Water plants", solutions=["Blue can"]), todo("Pay rent", solutions=["Bank app"])),
        patch_where("Water", replace("/status", "in progress")),
        remove_where("Water"),
    )
    for message in ("Water the plants and pay the rent.", "Started watering.", "Forget the plants."):
        turn(agent, message)
    undo_change(agent.store, "Lance")  # the plants come back
    exported = export_memories(agent.store, "Lance")
    rent_key = next(key for key, value in exported[TODO].items() if value["task"] == "Pay rent")
    exported[TODO][rent_key]["status"] = "archived"
    assert {e["action"] for e in exported[HISTORY].values()} == {"created", "updated", "deleted"}

    import_memories(agent.store, "Copy", exported)

    assert before_import(export_memories(agent.store, "Copy")) == exported
    assert [e for e in list_history(agent.store, "Copy") if e["message"] != IMPORT_MESSAGE] == list_history(agent.store, "Lance")
    deadline = time.monotonic() + 10
    while "Pay rent" in todos(agent, "Copy") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert list(todos(agent, "Copy")) == ["Water plants"], "the imported archived ToDo expired, the open one stays"


def test_more_items_than_one_statement_can_carry_import_in_one_go(agent):
    """17,000 done ToDos (4 or 5 variables each): past PostgreSQL's 65,535 variables per statement, and past
    SQLite's 999, which SQLite builds before 3.32 and some today have (this machine's allows 250,000)."""
    if isinstance(agent.store.conn, sqlite3.Connection):
        agent.store.conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
    items = {f"item-{n:05d}": {**SWIM_ITEM, "task": f"Chore {n}", "status": "done"} for n in range(17_000)}

    counts = import_memories(agent.store, "Ann", {"format": EXPORT_FORMAT, TODO: items})

    assert counts[TODO] == 17_000
    stored = agent.store.search(namespace(TODO, "Ann"), limit=17_001)
    assert len(stored) == 17_000 and {item.key for item in stored} == set(items)


def test_the_cli_refuses_a_crafted_file_with_one_line(tmp_path):
    crafted = tmp_path / "crafted.json"
    crafted.write_text(json.dumps({"format": EXPORT_FORMAT, HISTORY: {"c1": without(entry(), "order")}}), "utf-8")

    result = CliRunner().invoke(app, ["import", str(crafted), "--user", "Ann"])

    assert result.exit_code == 1
    assert result.output == f'Cannot import {crafted}: "history" item "c1" is invalid: order: Field required.\n'
