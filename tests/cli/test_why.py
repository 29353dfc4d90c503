"""`maistro why KIND [FIELD|KEY]` prints the source of a memory's current value (quote, thread, date, model; exit 0,
one sentence and exit 1 for an unknown kind, field or document), `maistro show KIND --past` the facts it replaced,
and `maistro export` / `import` carry the past facts (checked like every imported item), on SQLite and PostgreSQL."""

import json

import pytest
from typer.testing import CliRunner

from graph.app.cli import app
from graph.memory.admin import InvalidExportError, export_memories, import_memories
from graph.settings import current_settings
from testing.scripted_model import calls, patch_where, profile, remove_where, replace, route, say, todo
from tests.memory.test_provenance import SAID_OAKLAND, SAID_SF, move_to_oakland

runner = CliRunner()


@pytest.fixture
def where(agent, request, monkeypatch, tmp_path):
    """The CLI pointed at the agent's database."""
    if request.node.callspec.params["agent"] == "postgres":
        monkeypatch.setenv("MAISTRO_DATABASE_URL", request.getfixturevalue("fresh_database"))
    return ["--data-dir", str(tmp_path / "data"), "--user", "Lance"]


def maistro(*args: str):
    """Run a `maistro` command in this process."""
    return runner.invoke(app, list(args))


def test_why_prints_the_quote_thread_date_and_model_of_the_current_value(agent, model, where):
    move_to_oakland(agent, model)

    result = maistro("why", "profile", "location", *where)
    every = maistro("why", "profile", *where)
    as_json = maistro("why", "profile", "location", "--json", *where)

    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[:2] == ["profile.location = Oakland", f'  said: "{SAID_OAKLAND}"']
    assert lines[2].startswith("  thread 2 · 20") and f"model {current_settings().model}" in lines[2]
    assert f'  said: "{SAID_SF}"' in every.output.splitlines() and "profile.name = Lance" in every.output
    (shown,) = json.loads(as_json.output)
    assert (shown["value"], shown["source"]["quote"], shown["source"]["thread_id"]) == ("Oakland", SAID_OAKLAND, "2")


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (("why", "pets"), "There is no memory kind 'pets'; the kinds are profile, todo, instructions."),
        (("why", "profile", "shoe_size"),
         "The profile has no field 'shoe_size'; its fields are name, location, job, connections, interests, timezone."),
        (("why", "todo", "Walk the dog"), "The ToDo list has no ToDo with the key or task 'Walk the dog'."),
    ],
)
def test_why_of_an_unknown_kind_field_or_document_is_one_sentence_and_exit_1(agent, model, where, args, sentence):
    move_to_oakland(agent, model)

    result = runner.invoke(app, [*args, *where])

    assert (result.exit_code, result.output.strip()) == (1, sentence)


def test_a_todo_is_traced_by_its_task_and_its_deletion_is_a_past_fact(agent, model, where):
    model.add("task_maistro", route("todo"), say("Added."))
    model.add("update_todos", calls(todo("Book swim lessons", solutions=["Call the pool"])))
    agent.invoke({"messages": [("user", "Remind me to book swim lessons.")]}, {"configurable": {"thread_id": "1", "user_id": "Lance"}})

    traced = maistro("why", "todo", "book swim lessons", *where)
    model.add("task_maistro", route("todo"), say("Removed."))
    model.add("update_todos", remove_where("Book swim lessons"))
    agent.invoke({"messages": [("user", "The pool closed, drop it.")]}, {"configurable": {"thread_id": "1", "user_id": "Lance"}})
    past = maistro("show", "todo", "--past", *where)

    assert traced.exit_code == 0 and '  said: "Remind me to book swim lessons."' in traced.output.splitlines()
    assert past.exit_code == 0, past.output
    assert past.output.splitlines()[0].startswith('deleted: {"task": "Book swim lessons"')
    assert past.output.splitlines()[1] == '  said: "Remind me to book swim lessons."'


def test_show_past_lists_what_the_profile_held_with_when_it_held(agent, model, where):
    move_to_oakland(agent, model)

    result = maistro("show", "profile", "--past", *where)
    as_json = json.loads(maistro("show", "profile", "--past", "--json", *where).output)

    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].startswith("location: San Francisco  (from 20")
    assert result.output.splitlines()[1] == f'  said: "{SAID_SF}"'
    (fact,) = as_json.values()
    assert fact["value"] == "San Francisco" and fact["valid_from"] < fact["valid_to"]


def test_export_carries_past_facts_and_import_takes_them_back_checked(agent, model):
    move_to_oakland(agent, model)
    exported = export_memories(agent.store, "Lance")
    (key, fact), = exported["past_facts"].items()
    assert (fact["field"], fact["value"], fact["source"]["quote"]) == ("location", "San Francisco", SAID_SF)

    import_memories(agent.store, "Copy", json.loads(json.dumps(exported)))

    assert export_memories(agent.store, "Copy")["past_facts"] == exported["past_facts"]
    for hostile, problem in [
        ({**fact, "valid_to": "2999-01-01T00:00:00+00:00"}, "its valid_to is in the future"),
        ({**fact, "valid_from": "yesterday"}, "valid_from: Value error, must be an ISO 8601 date-time"),
        ({**fact, "extra": 1}, "extra: Extra inputs are not permitted"),
        ({**fact, "kind": "history"}, "no memory can be called 'history'"),
    ]:
        with pytest.raises(InvalidExportError, match=problem):
            import_memories(agent.store, "Eve", {**exported, "past_facts": {key: hostile}})
    with pytest.raises(InvalidExportError, match="its key is not the id of the change"):
        import_memories(agent.store, "Eve", {**exported, "past_facts": {"other": fact}})
    assert export_memories(agent.store, "Eve")["profile"] == {}, "nothing of a refused import is written"


def test_a_changed_profile_value_in_patch_form_names_the_field(agent, model):
    model.add("task_maistro", route("user"), say("Hi."))
    model.add("update_profile", calls(profile(name="Lance", job="Engineer")))
    agent.invoke({"messages": [("user", "I'm Lance, an engineer.")]}, {"configurable": {"thread_id": "1", "user_id": "Lance"}})
    model.add("task_maistro", route("user"), say("Congrats."))
    model.add("update_profile", patch_where("Engineer", replace("/job", "Manager")))
    agent.invoke({"messages": [("user", "I'm a manager now.")]}, {"configurable": {"thread_id": "1", "user_id": "Lance"}})

    (fact,) = export_memories(agent.store, "Lance")["past_facts"].values()

    assert (fact["field"], fact["value"], fact["source"]["quote"]) == ("job", "Engineer", "I'm Lance, an engineer.")
