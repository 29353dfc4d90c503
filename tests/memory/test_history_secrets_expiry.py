"""Trust: change history with undo, secrets never stored, finished ToDos expire."""

import json
import time

import pytest
from typer.testing import CliRunner

from graph import open_store
from graph.app.cli import app
from graph.memory.admin import export_memories, import_memories
from graph.memory.changes import IrreversibleChangeError, UnknownChangeError, list_history, undo_change
from graph.memory.kinds import DEFAULT_MEMORY_KINDS
from graph.memory.notes import change_notes
from graph.memory.store import HISTORY, namespace
from testing.helpers import SWIM_ITEM, before_import, instructions_of, profile_of, remember, todos, turn
from testing.scripted_model import calls, patch_where, profile, remove_where, replace, route, say, todo
from testing.stored_names import TODO

CARD = "4111 1111 1111 1111"


def test_every_change_is_recorded_with_its_cause(agent, model):
    model.add("task_maistro", route("user", "todo"), say("Noted."), route("instructions"), say("Ok."))
    model.add("update_profile", calls(profile(name="Lance")))
    model.add("update_todos", calls(todo("Book swim lessons", solutions=["SF swim school"])))
    model.add("update_instructions", say("Name local vendors."))
    turn(agent, "I'm Lance and I need to book swim lessons.", thread_id="t1")
    turn(agent, "Always name local vendors.", thread_id="t1")
    model.add("task_maistro", route("todo"), say("Done."), route("todo"), say("Removed."))
    model.add("update_todos", patch_where("swim", replace("/status", "in progress")), remove_where("swim"))
    turn(agent, "I started on the swim lessons.", thread_id="t2")
    turn(agent, "Forget the swim lessons.", thread_id="t2")

    history = list_history(agent.store, "Lance")

    changes = [(e["kind"], e["action"]) for e in history]
    assert sorted(changes[:2]) == [("profile", "created"), ("todo", "created")], "written in parallel"
    assert changes[2:] == [("instructions", "created"), ("todo", "updated"), ("todo", "deleted")]
    patched = history[3]
    assert patched["before"]["status"] == "not started" and patched["after"]["status"] == "in progress"
    assert patched["thread_id"] == "t2" and patched["message"] == "I started on the swim lessons."
    assert history[4]["after"] is None and history[4]["before"]["status"] == "in progress"
    assert all(e["time"] and e["id"] for e in history)


def test_undo_the_last_change_then_undo_the_undo(agent, model):
    model.add("task_maistro", route("todo"), say("Added."), route("todo"), say("Done."))
    model.add("update_todos", calls(todo("Water plants", solutions=["Blue can"])), patch_where("Water", replace("/status", "done")))
    turn(agent, "Remind me to water the plants.")
    turn(agent, "Watered them.")

    undone = undo_change(agent.store, "Lance")
    assert todos(agent)["Water plants"]["status"] == "not started"
    assert undone["action"] == "updated" and undone["undoes"] == list_history(agent.store, "Lance")[1]["id"]

    undo_change(agent.store, "Lance")
    assert todos(agent)["Water plants"]["status"] == "done"

    first = list_history(agent.store, "Lance")[0]
    undo_change(agent.store, "Lance", first["id"])
    assert todos(agent) == {}
    with pytest.raises(UnknownChangeError):
        undo_change(agent.store, "Lance", "no-such-change")


def test_undo_of_a_deletion_restores_the_item(agent, model):
    model.add("task_maistro", route("todo"), say("Added."), route("todo"), say("Removed."))
    model.add("update_todos", calls(todo("Call Toyota", solutions=["555-0100"])), remove_where("Toyota"))
    turn(agent, "Need to call Toyota.")
    before = todos(agent)
    turn(agent, "Already called Toyota, remove it.")
    assert todos(agent) == {}

    undo_change(agent.store, "Lance")

    assert todos(agent) == before


def test_history_is_part_of_export_and_import(agent, model):
    model.add("task_maistro", route("todo"), say("Added."))
    model.add("update_todos", calls(todo("Pay rent", solutions=["Bank app"])))
    turn(agent, "Remind me to pay rent.")

    exported = export_memories(agent.store, "Lance")
    import_memories(agent.store, "Copy", json.loads(json.dumps(exported)))

    assert len(exported["history"]) == 1
    assert before_import(export_memories(agent.store, "Copy")) == exported
    undo_change(agent.store, "Copy")
    assert todos(agent, "Copy") == {} and list(todos(agent, "Lance")) == ["Pay rent"]


def forge(store, user_id: str, *missing: str, **fields) -> None:
    """Write a history entry straight to the store, unchecked, as imports once did (`missing`: fields left out)."""
    entry = {
        "id": "forged", "time": "2026-01-05T10:00:00+00:00", "order": 0, "thread_id": "", "kind": "todo",
        "message": "", "action": "updated", "key": "b-swim", "before": {**SWIM_ITEM, "status": "in progress"},
        "after": SWIM_ITEM, **fields,
    }
    store.put(namespace(HISTORY, user_id), "forged", {k: v for k, v in entry.items() if k not in missing}, index=False)


def test_history_and_undo_read_an_entry_without_order_thread_or_message(agent):
    remember(agent.store, "Lance")
    forge(agent.store, "Lance", "order", "thread_id", "message")

    (entry,) = list_history(agent.store, "Lance")
    assert (entry["order"], entry["thread_id"], entry["message"]) == (0, "", "")

    undo_change(agent.store, "Lance")
    assert todos(agent)["Book swim lessons"]["status"] == "in progress"


def test_undo_never_writes_a_document_that_fails_the_schema(agent):
    remember(agent.store, "Lance")
    forge(agent.store, "Lance", time="9999-12-31T00:00:00+00:00", before={"task": "Book swim lessons", "status": "someday"})
    before = todos(agent)

    with pytest.raises(IrreversibleChangeError, match=r"change forged cannot be undone: the todo it would restore is invalid \(status: Input should be"):
        undo_change(agent.store, "Lance")

    assert todos(agent) == before and len(list_history(agent.store, "Lance")) == 1
    assert agent.store.get(namespace(TODO, "Lance"), "b-swim").value == SWIM_ITEM


def test_maistro_history_shows_and_undo_refuses_a_forged_entry_with_one_line(tmp_path):
    with open_store(tmp_path) as store:
        remember(store, "Lance")
        forge(store, "Lance", "order", before={**SWIM_ITEM, "status": "someday", "owner": "mallory"})
    runner = CliRunner()

    listed = runner.invoke(app, ["history", "--user", "Lance", "--data-dir", str(tmp_path)])
    undone = runner.invoke(app, ["undo", "--user", "Lance", "--data-dir", str(tmp_path)])

    assert listed.exit_code == 0 and "forged" in listed.output
    assert undone.exit_code == 1
    assert undone.output.startswith("Cannot undo for Lance: change forged cannot be undone: the todo it would restore")
    assert undone.output.count("\n") == 1


def test_secrets_are_redacted_everywhere_but_the_thread(agent, model):
    message = f"Pay the dentist with my card {CARD}; my bank password is hunter2 and the wifi 密码是 abc12345"
    model.add("task_maistro", route("todo", "instructions", "user"), say("Saved the task, not the secrets."))
    model.add("update_todos", calls(todo(f"Pay the dentist with card {CARD}", solutions=["bank password is hunter2"])))
    model.add("update_instructions", say("Use card 4111-1111-1111-1111 for payments; API key sk-abcdefghijklmnopqrstuvwx."))
    model.add("update_profile", calls(profile(name="Lance", interests=["wifi 密码是 abc12345"])))

    thread = turn(agent, message)

    stored = json.dumps([todos(agent), profile_of(agent), instructions_of(agent)], ensure_ascii=False)
    exported = json.dumps(export_memories(agent.store, "Lance"), ensure_ascii=False)
    for secret in ("4111", "hunter2", "abc12345", "sk-abcdef"):
        assert secret not in stored and secret not in exported
    assert "[redacted]" in stored
    assert thread[0].content == message, "the thread keeps what the user said"
    tool_answers = " ".join(m.content for m in thread if m.type == "tool")
    for notice in ("Not saved: card number, password.", "Not saved: API key, card number.", "Not saved: password."):
        assert notice in tool_answers


def test_import_redacts_secrets(agent):
    data = {"format": "task-maistro memories v1", "todo": {"k": {"task": f"Card {CARD}", "solutions": ["x"]}}}
    import_memories(agent.store, "Lance", data)
    assert list(todos(agent)) == ["Card [redacted]"]


@pytest.fixture
def short_ttl(monkeypatch):
    """Archived ToDos live one second and the store sweeps four times a second (set before `agent` is built)."""
    monkeypatch.setenv("MAISTRO_DONE_TODO_TTL_DAYS", str(1 / 24 / 60 / 60))
    monkeypatch.setenv("MAISTRO_TTL_SWEEP_MINUTES", str(1 / 60 / 4))


def test_archived_todos_expire_and_open_and_done_ones_never_do(short_ttl, agent, model):
    model.add("task_maistro", route("todo"), say("Added."), route("todo"), say("Archived."))
    model.add("update_todos", calls(todo("Open task", solutions=["a"]), todo("Finished task", solutions=["b"], status="done"),
                                    todo("Unneeded task", solutions=["c"])),
              patch_where("Unneeded", replace("/status", "archived")))
    turn(agent, "Three tasks.")
    turn(agent, "I no longer need the unneeded task.")

    deadline = time.monotonic() + 10
    while "Unneeded task" in todos(agent) and time.monotonic() < deadline:
        time.sleep(0.2)

    assert sorted(todos(agent)) == ["Finished task", "Open task"]
    time.sleep(1.5)
    assert sorted(todos(agent)) == ["Finished task", "Open task"], "open and done items never expire (done ones go to the done log)"


def test_the_chat_note_says_which_secrets_were_not_saved():
    artifact = {"kind": "todo", "changes": [], "secrets": ["card number", "password"]}
    assert change_notes(artifact, DEFAULT_MEMORY_KINDS) == ["Not saved (secrets are never stored): card number, password"]
