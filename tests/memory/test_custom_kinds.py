"""A memory kind added as data (`build_graph(memory_kinds=[...])`, MAISTRO_MEMORY_KINDS) gets its routing choice,
its update node with trustcall, its section of the chat prompt, and its history, undo, export and import."""

import dataclasses
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Literal

import psycopg
import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore
from pydantic import BaseModel
from rich.console import Console
from typer.testing import CliRunner

from graph import DEFAULT_MEMORY_KINDS, MemoryKind, RunContext, SettingsError, build_graph, close_graph
from graph.agent import server_graph
from graph.app.cli import app
from graph.app.session import ChatSession
from graph.app.terminal import line_reader, run_chat
from graph.backends import collection_changes
from graph.backends.collection_changes import CollectionChangeLog
from graph.backends.storage import open_store
from graph.memory import kinds as kinds_module
from graph.memory.admin import export_memories, forget_user, import_memories
from graph.memory.changes import list_history, undo_change
from graph.memory.context import MemoryReads, read_turn_memories
from graph.memory.kinds import COLLECTION_TOKENS, kind_named, load_memory_kinds
from graph.memory.rendering import render_collection
from graph.memory.store import namespace, read_kind
from graph.nodes.chat import chat_context, chat_system_prompt
from graph.settings import Settings
from graph.text_tokens import count_text_tokens
from testing.custom_kinds import CONTACT, HEALTH, KINDS
from testing.helpers import turn
from testing.scripted_model import calls, document, documents_in_prompt, patch_where, replace, route, say

ROOT = Path(__file__).resolve().parents[2]

ADA = {"name": "Ada", "phone": "555-0100", "relation": "sister"}
cli = CliRunner()


@pytest.fixture(params=["sqlite", "postgres"])
def kinds_agent(request, model, tmp_path):
    """The agent with a contact list and health notes besides the tutorial's memories."""
    database_url = request.getfixturevalue("fresh_database") if request.param == "postgres" else None
    agent = build_graph(tmp_path / "data", database_url=database_url, chat_model=lambda _: model, memory_kinds=KINDS)
    yield agent
    close_graph(agent)


def contacts(agent, user_id="Lance"):
    """The user's contacts, by name."""
    return {item.value["name"]: item.value for item in read_kind(agent.store, CONTACT, user_id)}


def test_each_kind_has_its_update_node_and_routing_choice(kinds_agent):
    nodes = set(kinds_agent.get_graph().nodes)
    assert {"update_profile", "update_todos", "update_instructions", "update_contact", "update_health"} <= nodes


def test_new_kinds_are_routed_extracted_with_trustcall_stored_and_shown_in_the_prompt(kinds_agent, model):
    model.add("task_maistro", route("contact", "health"), say("Noted Ada's number and your allergy."))
    model.add("update_contact", calls(document("Contact", **ADA)))
    model.add("update_health", calls(document("Health", allergies=["peanuts"])))

    thread = turn(kinds_agent, "My sister Ada's number is 555-0100. I'm allergic to peanuts.")

    first_call = model.calls_in("task_maistro")[0]
    tool, remind = first_call.tools
    assert (tool["function"]["name"], remind["function"]["name"]) == ("UpdateMemory", "Remind")
    update_types = tool["function"]["parameters"]["properties"]["update_type"]["enum"]
    assert update_types == ["user", "todo", "instructions", "contact", "health"]
    assert "People the user knows" in first_call.messages[0].content
    assert [call.tool_names for call in model.calls_in("update_contact")] == [["Contact"]]  # trustcall's tool
    assert contacts(kinds_agent) == {"Ada": ADA}
    health = kinds_agent.store.get(namespace(HEALTH, "Lance"), "user_health")
    assert health.value == {"allergies": ["peanuts"], "conditions": []}
    reports = sorted(m.content for m in thread if isinstance(m, ToolMessage))
    assert reports == ["Contact list changes:\ncreated: Ada", "Health updated: allergies."], "conditions stayed empty"
    model.add("task_maistro", say("Ada is your sister."))
    turn(kinds_agent, "Who is Ada?")
    next_prompt = model.calls_in("task_maistro")[-1].system
    assert "(name | phone | relation)\n- Ada | 555-0100 | sister" in next_prompt, "a collection's rows"
    assert '"allergies": ["peanuts"]' in next_prompt
    assert sorted((e["kind"], e["action"]) for e in list_history(kinds_agent.store, "Lance")) == [
        ("contact", "created"), ("health", "created")
    ]


def test_a_new_kinds_patch_is_in_the_history_and_undone(kinds_agent, model):
    model.add("task_maistro", route("contact"), say("Saved."), route("contact"), say("Updated."))
    model.add("update_contact", calls(document("Contact", **ADA)), patch_where("Ada", replace("/phone", "555-0199")))
    turn(kinds_agent, "My sister Ada's number is 555-0100.")
    turn(kinds_agent, "Ada has a new number: 555-0199.")
    assert contacts(kinds_agent)["Ada"]["phone"] == "555-0199"
    assert "PatchDoc" in model.calls_in("update_contact")[1].tool_names  # trustcall patched the stored contact

    undone = undo_change(kinds_agent.store, "Lance", kinds=KINDS)

    assert undone["kind"] == "contact" and contacts(kinds_agent)["Ada"]["phone"] == "555-0100"


def test_a_new_kind_is_exported_and_imported(kinds_agent, model):
    model.add("task_maistro", route("contact"), say("Saved."))
    model.add("update_contact", calls(document("Contact", **ADA)))
    turn(kinds_agent, "My sister Ada's number is 555-0100.")

    exported = export_memories(kinds_agent.store, "Lance", KINDS)
    import_memories(kinds_agent.store, "Grace", exported, KINDS)

    assert list(exported["contact"].values()) == [ADA]
    assert contacts(kinds_agent, "Grace") == {"Ada": ADA}


def test_a_kind_renders_its_own_prompt_section(model, tmp_path):
    birthdays = dataclasses.replace(CONTACT, render=lambda people: "; ".join(f"{p['name']} ({p['phone']})" for p in people))
    agent = build_graph(tmp_path / "data", chat_model=lambda _: model, memory_kinds=[*DEFAULT_MEMORY_KINDS, birthdays])
    model.add("task_maistro", route("contact"), say("Saved."), say("Ada is your sister."))
    model.add("update_contact", calls(document("Contact", **ADA)))
    turn(agent, "My sister Ada's number is 555-0100.")
    turn(agent, "Who is Ada?")
    close_graph(agent)

    assert "<contact>\nAda (555-0100)\n</contact>" in model.calls_in("task_maistro")[-1].system


def test_an_update_type_of_no_kind_is_answered_with_the_choices(kinds_agent, model):
    model.add("task_maistro", route("journal"), say("I cannot save that."))

    thread = turn(kinds_agent, "Write this in my journal.")

    assert "update_type must be one of 'user', 'todo', 'instructions', 'contact', 'health'" in thread[2].content


def test_the_setting_names_the_kinds_of_the_servers_graph(monkeypatch):
    monkeypatch.setenv("MAISTRO_MEMORY_KINDS", "testing.custom_kinds:KINDS")
    assert "update_health" in server_graph.__wrapped__().get_graph().nodes  # built anew, past its cache
    assert load_memory_kinds(Settings.from_environ({}).memory_kinds_spec) == DEFAULT_MEMORY_KINDS


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("testing.custom_kinds", "use package.module:NAME, naming a list of graph.MemoryKind"),
        ("testing.no_such_module:KINDS", "the module testing.no_such_module cannot be imported"),
        ("testing.custom_kinds:MISSING", "the module testing.custom_kinds has no MISSING"),
        ("testing.custom_kinds:NOT_KINDS", "The memory kinds must be a non-empty list of graph.MemoryKind objects"),
    ],
)
def test_a_setting_that_names_no_list_of_kinds_is_refused_with_one_sentence(value, reason):
    with pytest.raises(SettingsError) as refused:
        load_memory_kinds(Settings.from_environ({"MAISTRO_MEMORY_KINDS": value}).memory_kinds_spec)
    assert str(refused.value).startswith(f"MAISTRO_MEMORY_KINDS={value!r} is invalid: {reason}")


def test_kinds_sharing_a_name_are_refused():
    with pytest.raises(ValueError, match="Two memory kinds share the name 'contact'"):
        build_graph(memory_kinds=[*KINDS, CONTACT])


def test_the_cli_shows_history_undoes_exports_and_imports_the_kinds_the_setting_names(model, tmp_path, monkeypatch):
    data_dir = tmp_path / "data"
    agent = build_graph(data_dir, chat_model=lambda _: model, memory_kinds=KINDS)
    model.add("task_maistro", route("contact", "health"), say("Saved."))
    model.add("update_contact", calls(document("Contact", **ADA)))
    model.add("update_health", calls(document("Health", allergies=["peanuts"])))
    turn(agent, "My sister Ada's number is 555-0100. I'm allergic to peanuts.")
    close_graph(agent)
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("MAISTRO_MEMORY_KINDS", "testing.custom_kinds:KINDS")
    where = ["--user", "Lance", "--data-dir", str(data_dir)]

    shown = cli.invoke(app, ["show", "contact", *where])
    health = cli.invoke(app, ["show", "health", *where])
    listed = cli.invoke(app, ["history", *where])
    exported = tmp_path / "export.json"
    cli.invoke(app, ["export", "--output", str(exported), *where])
    imported = cli.invoke(app, ["import", str(exported), "--user", "Grace", "--data-dir", str(data_dir)])
    grace = cli.invoke(app, ["show", "contact", "--json", "--user", "Grace", "--data-dir", str(data_dir)])
    entries = json.loads(cli.invoke(app, ["history", "--json", *where]).output)
    health_change = next(key for key, entry in entries.items() if entry["kind"] == "health")
    undone = cli.invoke(app, ["undo", health_change[:8], *where])
    unknown = cli.invoke(app, ["show", "journal", *where])

    assert shown.exit_code == 0 and "Contact list of Lance" in shown.output and "555-0100" in shown.output
    assert "Health of Lance" in health.output and "peanuts" in health.output
    assert "contact" in listed.output and "Ada" in listed.output
    assert imported.output == "Imported into Grace: 0 profile, 0 todo, 0 instructions, 1 contact, 1 health, 2 history.\n"
    assert list(json.loads(grace.output).values()) == [ADA]
    assert undone.output.endswith(": health removed.\n")
    assert unknown.exit_code == 1
    assert "There is no memory kind 'journal'; the kinds are profile, todo, instructions, contact, health." in unknown.output


HABITS_MODULE = '''
from pydantic import BaseModel

from graph import DEFAULT_MEMORY_KINDS, MemoryKind


class Habit(BaseModel):
    """A habit the user keeps."""

    name: str
    steps: list[dict] = []


KINDS = [*DEFAULT_MEMORY_KINDS, MemoryKind(name="habits", schema=Habit, collection=True, description="habits")]
'''


def test_the_cli_loads_the_kinds_from_the_working_directory_as_the_server_does(tmp_path, monkeypatch):
    project = tmp_path / "project"
    project.mkdir()
    (project / "my_habit_kinds.py").write_text(HABITS_MODULE)
    monkeypatch.chdir(project)
    monkeypatch.setenv("MAISTRO_MEMORY_KINDS", "my_habit_kinds:KINDS")
    monkeypatch.setenv("COLUMNS", "200")
    where = ["--user", "Lance", "--data-dir", str(tmp_path / "data")]
    with open_store(tmp_path / "data", "") as store:
        store.put(("habits", "Lance"), "run", {"name": "Run 5k", "steps": [{"what": "stretch", "minutes": 5}]})

    shown = cli.invoke(app, ["show", "habits", *where])

    assert shown.exit_code == 0, shown.output
    assert "Habit list of Lance" in shown.output, "the label comes from the schema's name"
    assert "• What: stretch; Minutes: 5" in shown.output, "a nested value reads as fields, not as a Python dict"
    assert str(project) not in sys.path, "the working directory was on the import path for that import only"


SHADOW = 'raise RuntimeError("the working directory\'s copy was imported")\n'


def maistro_in(directory: Path, kinds: str, *args: str) -> subprocess.CompletedProcess:
    """The `maistro` console script run in `directory` (it puts no directory of its own on the import path)."""
    environment = {**os.environ, "MAISTRO_MEMORY_KINDS": kinds, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    environment.pop("MAISTRO_DATABASE_URL", None)
    return subprocess.run(
        [str(Path(sys.executable).with_name("maistro")), *args], cwd=directory, env=environment, capture_output=True,
        text=True, timeout=120,
    )


def test_a_file_in_the_working_directory_shadows_neither_the_module_named_nor_what_it_imports(tmp_path):
    project = tmp_path / "project"
    (project / "testing").mkdir(parents=True)
    (project / "testing" / "__init__.py").write_text(SHADOW)
    (project / "colorsys.py").write_text(SHADOW)
    (project / "my_habit_kinds.py").write_text(HABITS_MODULE + "\nimport colorsys\n\nassert colorsys.rgb_to_hsv\n")
    where = ["--user", "Lance", "--data-dir", str(tmp_path / "data")]

    from_the_path = maistro_in(project, "testing.custom_kinds:KINDS", "show", "health", *where)
    from_here = maistro_in(project, "my_habit_kinds:KINDS", "show", "habits", *where)
    nowhere = maistro_in(project, "nowhere_kinds:KINDS", "todos", *where)

    assert from_the_path.returncode == 0 and "No health yet for Lance." in from_the_path.stdout, from_the_path.stderr
    assert from_here.returncode == 0 and "No habit list yet for Lance." in from_here.stdout, from_here.stderr
    assert nowhere.returncode == 1 and "Traceback" not in nowhere.stderr
    assert nowhere.stderr.strip().endswith(
        "MAISTRO_MEMORY_KINDS='nowhere_kinds:KINDS' is invalid: the module nowhere_kinds cannot be imported "
        "(ModuleNotFoundError: No module named 'nowhere_kinds' on the import path or in the working directory)."
    ), nowhere.stderr


def test_export_without_the_setting_keeps_the_undeclared_kinds_and_import_and_undo_place_them(model, tmp_path, monkeypatch):
    data_dir = tmp_path / "data"
    agent = build_graph(data_dir, chat_model=lambda _: model, memory_kinds=KINDS)
    model.add("task_maistro", route("contact"), say("Saved."))
    model.add("update_contact", calls(document("Contact", **ADA)))
    turn(agent, "My sister Ada's number is 555-0100.")
    close_graph(agent)
    where = ["--data-dir", str(data_dir)]
    with_setting, without_setting = tmp_path / "with.json", tmp_path / "without.json"
    monkeypatch.setenv("MAISTRO_MEMORY_KINDS", "testing.custom_kinds:KINDS")
    cli.invoke(app, ["export", "--output", str(with_setting), "--user", "Lance", *where])
    monkeypatch.delenv("MAISTRO_MEMORY_KINDS")

    exported = cli.invoke(app, ["export", "--output", str(without_setting), "--user", "Lance", *where])
    imported = cli.invoke(app, ["import", str(without_setting), "--user", "Grace", *where])
    with open_store(data_dir, "") as store:
        copied = contacts_in(store, "Grace")
    undone = cli.invoke(app, ["undo", "--user", "Grace", *where])

    assert exported.exit_code == 0
    assert "Warning: Lance has memories of a kind not declared, 'contact'; they are exported as stored (1 document)" in exported.output
    assert filled(json.loads(without_setting.read_text())) == filled(json.loads(with_setting.read_text())), "nothing is left out"
    assert imported.exit_code == 0, imported.output
    assert "1 contact" in imported.output and "'contact' is not a declared memory kind" in imported.output
    assert copied == {"Ada": ADA}
    assert undone.exit_code == 0 and undone.output.endswith(": contact removed.\n"), undone.output
    with open_store(data_dir, "") as store:
        assert contacts_in(store, "Grace") == {}


def filled(exported: dict) -> dict:
    """An export without its empty sections (the setting's health notes, say)."""
    return {name: section for name, section in exported.items() if section}


def contacts_in(store, user_id: str) -> dict:
    """A user's contacts, by name, read from a store."""
    return {item.value["name"]: item.value for item in read_kind(store, CONTACT, user_id)}


def test_show_in_the_chat_takes_the_kind_named_after_it(model, tmp_path):
    agent = build_graph(tmp_path / "data", chat_model=lambda _: model, memory_kinds=KINDS)
    agent.store.put(namespace(CONTACT, "Lance"), "ada", ADA)
    out = io.StringIO()
    console = Console(file=out, color_system=None, width=120)

    run_chat(ChatSession(agent, "Lance", kinds=KINDS), console, line_reader(io.StringIO("/show contact\n/SHOW\n/show Contact\n")))
    close_graph(agent)

    shown = out.getvalue()
    assert "Contact list of Lance" in shown and "555-0100" in shown
    assert "Name a memory kind after /show; the kinds are profile, todo, instructions, contact, health." in shown
    assert "There is no memory kind 'Contact'" in shown


def test_a_default_command_for_a_kind_not_declared_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("MAISTRO_MEMORY_KINDS", "testing.custom_kinds:WITHOUT_INSTRUCTIONS")

    shown = cli.invoke(app, ["instructions", "--data-dir", str(tmp_path / "data")])

    assert shown.exit_code == 1
    assert "There is no memory kind 'instructions'; the kinds are profile, todo, contact." in shown.output


def test_build_graph_checks_the_kinds_once(model, tmp_path, monkeypatch):
    checked = []
    check = kinds_module.check_kinds
    monkeypatch.setattr(kinds_module, "check_kinds", lambda kinds: checked.append(kinds) or check(kinds))

    close_graph(build_graph(tmp_path / "data", chat_model=lambda _: model, memory_kinds=KINDS))

    assert len(checked) == 1


def add_contacts(store, user_id: str, count: int) -> None:
    """Give the user `count` numbered contacts, in one batch."""
    store.batch([
        PutOp(namespace(CONTACT, user_id), f"contact-{n:05d}", {"name": f"Friend {n}", "phone": f"555-{n:04d}", "relation": "friend"})
        for n in range(count)
    ])


def test_an_added_collection_past_the_limit_shows_the_named_documents_and_counts_the_rest(kinds_agent, model):
    add_contacts(kinds_agent.store, "Lance", 300)
    kinds_agent.store.put(namespace(CONTACT, "Lance"), "zed", {"name": "Zed Okafor", "phone": "555-0199", "relation": None})
    add_contacts(kinds_agent.store, "Lance", 0)
    model.add("task_maistro", route("contact"), say("Updated Zed's number."))
    model.add("update_contact", patch_where("Okafor", replace("/phone", "555-0200")))

    turn(kinds_agent, "Zed Okafor has a new number: 555-0200.")

    prompt = model.calls_in("task_maistro")[0].system
    extraction = model.calls_in("update_contact")[0]
    assert "- Zed Okafor | 555-0199 | " in prompt, "the contact the user names is shown"
    assert prompt.count("| friend") == 29 and "(Not shown: 271 more items. Items the user names are always shown.)" in prompt
    assert len(documents_in_prompt(extraction.system)) == 12, "an update patches the documents the turn chose"
    assert contacts(kinds_agent)["Zed Okafor"]["phone"] == "555-0200"


def test_an_added_collections_prompt_stays_flat_as_it_grows(model, tmp_path):
    agent = build_graph(tmp_path / "data", chat_model=lambda _: model, memory_kinds=KINDS)
    add_contacts(agent.store, "many", 500)
    sizes = {}
    for user_id in ("none", "many"):
        model.add("task_maistro", say("Hello!"))
        turn(agent, "Hi, how are you today?", user_id=user_id, thread_id=user_id)
        sizes[user_id] = model.calls_in("task_maistro")[-1].prompt_tokens
    close_graph(agent)

    assert sizes["many"] <= 1.5 * sizes["none"], sizes


class Habit(BaseModel):
    """A habit the user keeps."""

    name: str
    status: Literal["active", "dropped"] = "active"


HABIT = MemoryKind(name="habit", schema=Habit, collection=True, description="habits", status_field="status",
                   open_statuses=("active",))


def test_a_collection_with_a_status_field_counts_its_closed_documents_apart(tmp_path):
    with open_store(tmp_path, "", "") as store:
        store.batch([
            PutOp(namespace(HABIT, "u"), f"h{n}", {"name": f"Habit {n}", "status": "dropped" if n % 2 else "active"})
            for n in range(100)
        ])
        settings = RunContext(user_id="u", collection_prompt_limit=10, collection_update_limit=5)
        memories = read_turn_memories(store, settings, [HumanMessage("hello")], (*DEFAULT_MEMORY_KINDS, HABIT))

    shown = memories.prompt["habit"]
    assert [item.value["status"] for item in shown.items] == ["active"] * 10, "closed ones are shown only when named"
    assert (shown.hidden_open, shown.hidden_closed) == (40, 50)
    assert render_collection(HABIT, shown).endswith(
        "(Not shown: 40 more open and 50 closed items. Items the user names are always shown.)"
    )


def test_a_turn_reads_only_the_documents_of_an_added_collection_that_changed(database, monkeypatch):
    fetched: list[dict] = []
    read = CollectionChangeLog.read_memory_rows

    def counting(store, user_id, kinds, marks, stored=()):
        rows = read(store, user_id, kinds, marks, stored)
        fetched.append({name: len(changes) for name, changes in rows.changes.items()})
        return rows

    monkeypatch.setattr(CollectionChangeLog, "read_memory_rows", counting)
    settings = RunContext(user_id="u")
    with open_store(**database) as reader, open_store(**database) as writer:
        add_contacts(writer, "u", 200)
        writer.put(namespace(HEALTH, "u"), HEALTH.key, {"allergies": ["peanuts"], "conditions": []})
        reads = MemoryReads()
        read_turn_memories(reader, settings, [HumanMessage("hello")], KINDS, reads)
        read_turn_memories(reader, settings, [HumanMessage("hello")], KINDS, reads)
        writer.put(namespace(CONTACT, "u"), "okapi", {"name": "Okapi Keeper", "phone": None, "relation": None})
        writer.delete(namespace(CONTACT, "u"), "contact-00007")
        memories = read_turn_memories(reader, settings, [HumanMessage("Call the Okapi Keeper")], KINDS, reads)
        forget_user(writer, InMemorySaver(), "u")
        logged = dict(query_rows(writer, database, f"SELECT prefix, count(*) FROM {collection_changes.TABLE} GROUP BY prefix"))
        after_forget = read_turn_memories(reader, settings, [HumanMessage("hello")], KINDS, reads)

    # After the forget, the read finds the count of forgotten users changed and reads every list again.
    assert [counts["contact"] for counts in fetched] == [200, 0, 2, 0, 0]
    assert "Okapi Keeper" in {item.value["name"] for item in memories.prompt["contact"].items}
    assert memories.documents["health"] == [{"allergies": ["peanuts"], "conditions": []}]
    assert memories.prompt["contact"].hidden_open == 200 - 30
    assert logged == {}, "forgetting the user left nothing of theirs in the log"
    assert after_forget.prompt["contact"].items == [] and after_forget.documents["health"] == []


def query_rows(store, database: dict, statement: str) -> list[tuple]:
    """The rows of a statement run straight on the database (on PostgreSQL, through a connection of its own)."""
    if database["database_url"]:
        with psycopg.connect(database["database_url"]) as conn:
            return conn.execute(statement).fetchall()
    with store._cursor(transaction=False) as cur:
        cur.execute(statement)
        return cur.fetchall()


class Tone(BaseModel):
    """How the user wants to be answered."""

    memory: str


TONE = MemoryKind(name="tone", schema=Tone, collection=False, description="how the user wants replies to sound",
                  text=True, guidance=True)


def system_prompt(kinds, user_id: str = "Lance", store=None) -> str:
    """The chat prompt of a turn that says hello, for `kinds`: its stable part and the context block with the memories."""
    store = store or InMemoryStore()
    settings = RunContext(user_id=user_id)
    memories = read_turn_memories(store, settings, [HumanMessage("hello")], kinds)
    return chat_system_prompt(settings, kinds) + "\n\n" + chat_context(memories, settings, kinds).content


def test_the_chat_prompt_names_the_memories_declared_and_tells_the_user_of_each_change():
    store = InMemoryStore()
    store.put(namespace(TONE, "Lance"), TONE.key, {"memory": "Short answers, no emoji."})
    kinds = [kind_named(DEFAULT_MEMORY_KINDS, "profile"), CONTACT, TONE]

    prompt = system_prompt(kinds, store=store)

    assert "todo" not in prompt.lower(), "with the ToDo list not declared, no ToDo talk"
    assert "helping them keep track of their contact list." in prompt
    assert "- Tell the user when you update the contact list, naming what changed" in prompt
    assert "- Tell the user when you update the tone, naming what changed" in prompt
    assert "- Do not tell the user you have updated the user's profile" in prompt
    assert "4. Err on the side of updating the contact list." in prompt
    assert (
        "Here is the user's tone: guidance for you to follow in every reply (may be empty if nothing has been saved "
        "yet):\n<tone>\nShort answers, no emoji.\n</tone>"
    ) in prompt


def test_the_tutorials_kinds_keep_the_tutorials_prompt():
    prompt = system_prompt(DEFAULT_MEMORY_KINDS)

    assert "You are designed to be a companion to a user, helping them keep track of their ToDo list.\n" in prompt
    assert (
        "3. Tell the user that you have updated your memory, if appropriate:\n"
        "- Do not tell the user you have updated the user's profile\n"
        "- Tell the user when you update the todo list, naming what changed\n"
        "- Do not tell the user that you have updated instructions\n\n"
        "4. Err on the side of updating the todo list. No need to ask for explicit permission.\n"
    ) in prompt
    assert "Here is the current instructions of the user (may be empty if nothing has been saved yet):" in prompt
    assert "helping them keep track of their ToDo list and contact list." in system_prompt(KINDS)


def test_a_collection_of_large_documents_shows_the_most_relevant_that_fit_and_counts_the_rest(tmp_path):
    long_note = "met at the harbour festival, " * 8
    with open_store(tmp_path, "", "") as store:
        store.batch([
            PutOp(namespace(CONTACT, "u"), f"c{n:02d}", {"name": f"Friend {n}", "phone": None, "relation": long_note})
            for n in range(20)
        ])
        store.put(namespace(CONTACT, "u"), "zed", {"name": "Zed Okafor", "phone": None, "relation": long_note})
        memories = read_turn_memories(store, RunContext(user_id="u"), [HumanMessage("Call Zed Okafor")], KINDS)

    section = render_collection(CONTACT, memories.prompt["contact"])

    assert len(memories.prompt["contact"].items) == 21, "all of them are within the limit of documents"
    assert "- Zed Okafor |" in section, "the one the user names comes first"
    shown = section.count("\n- ")
    assert 1 < shown < 21 and f"(Not shown: {21 - shown} more items." in section
    assert count_text_tokens(section) <= COLLECTION_TOKENS + 40
