"""The `maistro` console script: every command through typer's runner, and `maistro chat` as a real process."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graph import build_graph, open_store
from graph.app.cli import app
from graph.app.tutorial import LOCAL_VENDORS, LOCK, SWIM
from graph.memory.admin import export_memories, last_thread, user_items
from testing.helpers import LANCE_PROFILE, before_import, free_port, remember
from testing.openai_stub import OpenAIStub, StubError, text_reply, tool_calls_reply
from testing.stub_script import kind_of, update

ROOT = Path(__file__).resolve().parents[2]
ANSI_ESCAPE = "\x1b["
runner = CliRunner()


def maistro(*args: str, input: str | None = None):
    """Run a `maistro` command in this process."""
    return runner.invoke(app, list(args), input=input)


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch):
    """Tables as wide as a desktop terminal, so cells do not wrap in the middle of the asserted text."""
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def data_dir() -> Path:
    return Path(os.environ["MAISTRO_DATA_DIR"])


@pytest.fixture
def stored(data_dir):
    """Lance's memories in the default data directory."""
    with open_store(data_dir) as store:
        remember(store, "Lance")


def chat_requests(stub: OpenAIStub) -> list[dict]:
    return [request for request in stub.requests if kind_of(request) == "chat"]


def test_demo_needs_no_key_and_keeps_nothing(data_dir):
    result = maistro("demo")

    assert result.exit_code == 0, result.output
    out = result.output
    assert "Scripted demo" in out and "not from an AI model" in out
    for note in (
        "Profile updated (name, location, connections)",
        f"ToDo added: {SWIM}",
        f"Instructions updated:\n  + {LOCAL_VENDORS}",
        f"ToDo updated: {SWIM} (solutions)",
        f"ToDo updated: {SWIM} (deadline)",
        "ToDo removed: Call back City Toyota to schedule car service.",
        f"ToDo done: {LOCK}",
    ):
        assert f"✎ {note}\n" in out
    assert "With 30 minutes you could book the swim lessons" in out
    tables = out[out.index("Profile of Lance") :]
    assert "San Francisco" in tables and SWIM in tables and LOCK in tables and "City Toyota" not in tables
    assert "-11-30 23:59" in tables and LOCAL_VENDORS[:40] in tables
    assert not data_dir.exists()


def test_demo_keeps_its_database_in_the_given_directory_and_never_overwrites(tmp_path):
    assert maistro("demo", "--data-dir", str(tmp_path / "demo")).exit_code == 0

    memories = export_memories(build_graph(tmp_path / "demo").store, "Lance")
    assert sorted(todo["task"] for todo in memories["todo"].values()) == sorted([SWIM, LOCK])
    assert memories["instructions"] == {"user_instructions": {"memory": LOCAL_VENDORS}}

    again = maistro("demo", "--data-dir", str(tmp_path / "demo"))
    assert again.exit_code == 1 and "already has memories" in again.output
    assert export_memories(build_graph(tmp_path / "demo").store, "Lance") == memories


def test_memory_tables(stored):
    todos = maistro("todos", "--user", "Lance")
    assert todos.exit_code == 0
    for cell in ("Book swim lessons", "Fix the Yale lock", "not started", "done", "2026-11-30 23:59", "30 min", "La Petite Baleen"):
        assert cell in todos.output
    assert "Wife" in maistro("profile", "--user", "Lance").output
    assert "Name local vendors." in maistro("instructions", "--user", "Lance").output
    assert ANSI_ESCAPE not in todos.output


def test_memory_json(stored, data_dir):
    exported = export_memories(build_graph(data_dir).store, "Lance")
    for command, kind in (("todos", "todo"), ("profile", "profile"), ("instructions", "instructions")):
        result = maistro(command, "--user", "Lance", "--json")
        assert json.loads(result.stdout) == exported[kind]
    assert json.loads(maistro("profile", "--user", "Lance", "--json").stdout) == {"user_profile": LANCE_PROFILE}


def test_empty_memories_of_the_default_user(stored, monkeypatch):
    monkeypatch.setenv("MAISTRO_DEFAULT_USER", "me")
    assert "No ToDos yet for me." in maistro("todos").output
    assert "No profile yet for me." in maistro("profile").output
    assert "No instructions yet for me." in maistro("instructions").output
    assert json.loads(maistro("todos", "--json").stdout) == {}


def test_export_import_into_another_user_then_export_is_the_same(stored, tmp_path):
    exported = tmp_path / "lance.json"
    assert maistro("export", "--user", "Lance", "-o", str(exported)).exit_code == 0

    imported = maistro("import", str(exported), "--user", "lance.copy@example.com")
    assert imported.exit_code == 0 and "1 profile, 2 todo, 1 instructions" in imported.output

    again = maistro("export", "--user", "lance.copy@example.com")
    assert before_import(json.loads(again.stdout)) == json.loads(exported.read_text(encoding="utf-8"))
    assert json.loads(again.stdout)["todo"]


def test_import_of_a_file_that_is_not_an_export_fails_clearly(tmp_path):
    bad = tmp_path / "notes.json"
    bad.write_text('{"todo": []}', encoding="utf-8")
    result = maistro("import", str(bad), "--user", "Ann")
    assert result.exit_code == 1 and "not a task-maistro memory export" in result.output
    bad.write_text("{", encoding="utf-8")
    assert maistro("import", str(bad), "--user", "Ann").exit_code == 1


def test_forget_asks_then_deletes_that_user_only(stored, data_dir, stub, script):
    with open_store(data_dir) as store:
        remember(store, "Ann")
    script.add("chat", text_reply("Hello Lance."), text_reply("Hello Ann."))
    maistro("chat", "--user", "Lance", "--thread", "lance-1", input="Hi\n")
    maistro("chat", "--user", "Ann", "--thread", "ann-1", input="Hi\n")

    declined = maistro("forget", "--user", "Lance", input="n\n")
    assert declined.exit_code == 1 and "Delete 5 memories and 1 thread of Lance?" in declined.output
    assert export_memories(build_graph(data_dir).store, "Lance")["todo"]

    assert "deleted 5 memories and 1 thread." in maistro("forget", "--user", "Lance", input="y\n").output
    agent = build_graph(data_dir)
    assert user_items(agent.store, "Lance") == []
    assert agent.get_state({"configurable": {"thread_id": "lance-1"}}).values == {}
    assert len(export_memories(agent.store, "Ann")["todo"]) == 2
    assert [m.content for m in agent.get_state({"configurable": {"thread_id": "ann-1"}}).values["messages"]] == [
        "Hi",
        "Hello Ann.",
    ]
    assert "Nothing is stored for Lance." in maistro("forget", "--user", "Lance", "--yes").output


@pytest.mark.parametrize("user", ["", "   "])
def test_forget_refuses_a_blank_user_and_requires_one(stored, data_dir, user):
    refused = maistro("forget", "--user", user, "--yes")
    assert refused.exit_code == 1 and "--user must name the user to forget" in refused.output
    assert maistro("forget", "--yes").exit_code == 2, "--user is required"
    with open_store(data_dir) as store:
        assert len(user_items(store, "Lance")) == 4


def test_forget_of_a_wildcard_user_deletes_only_that_user(stored, data_dir):
    with open_store(data_dir) as store:
        remember(store, "*")
    assert "deleted 4 memories" in maistro("forget", "--user", "*", "--yes").output
    with open_store(data_dir) as store:
        assert len(user_items(store, "Lance")) == 4 and user_items(store, "*") == []


def test_chat_without_a_model_says_what_to_set():
    result = maistro("chat", input="Hello\n")

    assert result.exit_code == 1
    message = result.stderr.strip()
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "MAISTRO_MODEL", "maistro demo"):
        assert name in message
    assert message.count(". ") == 0 and "\n" not in message


def test_chat_reports_a_server_error_and_the_same_message_can_be_sent_again(stub, script, data_dir):
    script.add("chat", StubError(500, "upstream exploded"), update("todo"), text_reply("I added the swim lessons."))
    script.add("todo", tool_calls_reply(("ToDo", {"task": "Book swim lessons", "solutions": ["SF swim schools"]})))

    result = maistro("chat", "--user", "Lance", "--retries", "0", input="Book swim lessons\nBook swim lessons\n")

    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "The model endpoint answered HTTP 500 (upstream exploded). Your message is saved in the thread: "
        "send it again to retry.",
        "✎ ToDo added: Book swim lessons",
        "I added the swim lessons.",
    ]
    assert [m["role"] for m in chat_requests(stub)[-1]["messages"]] == ["system", "system", "user", "assistant", "tool"]
    assert all(request.get("stream") for request in chat_requests(stub))


def test_chat_reports_an_endpoint_that_is_down_and_keeps_the_message(monkeypatch, data_dir):
    port = free_port()
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")

    result = maistro("chat", "--user", "Lance", "--thread", "t1", "--retries", "0", input="Remember the milk\n")

    assert result.exit_code == 1, "a message was left without an answer"
    assert f"Could not reach the model endpoint at http://127.0.0.1:{port}/v1/chat/completions;" in result.stdout
    thread = build_graph(data_dir).get_state({"configurable": {"thread_id": "t1"}})
    assert [m.content for m in thread.values["messages"]] == ["Remember the milk"]


def test_chat_slash_commands_print_plain_text(stored, stub, script):
    script.add("chat", text_reply("Hi there."))
    result = maistro(
        "chat", "--user", "Lance", input="/help\n/todos\n/profile\n/instructions\n/bogus\n/new\nHello\n/quit\nNever sent\n"
    )

    out = result.stdout
    assert result.exit_code == 0 and ANSI_ESCAPE not in out
    assert all(command in out for command in ("/todos", "/profile", "/instructions", "/new", "/help", "/quit"))
    assert "Book swim lessons" in out and "San Francisco" in out and "Name local vendors." in out
    assert "Unknown command /bogus; /help lists the commands." in out
    assert "New thread " in out and out.rstrip().endswith("Hi there.")
    assert [m["content"] for m in chat_requests(stub)[-1]["messages"][2:]] == ["Hello"], "after the context block"


def run_chat_process(*args: str, input: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "graph.app.cli", "chat", *args],
        input=input,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )


def test_chat_process_saves_memory_and_the_next_run_continues_the_thread(stub, script, data_dir):
    script.add("chat", update("todo"), text_reply("I added the swim lessons to your ToDo list."))
    script.add("todo", tool_calls_reply(("ToDo", {"task": "Book swim lessons", "solutions": ["SF swim schools"]})))

    first = run_chat_process("--user", "Lance", input="My wife asked me to book swim lessons.\n")

    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == ["✎ ToDo added: Book swim lessons", "I added the swim lessons to your ToDo list."]

    script.add("chat", text_reply("You asked me to book swim lessons."))
    second = subprocess.Popen(
        [sys.executable, "-m", "graph.app.cli", "chat", "--user", "Lance"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    watchdog = threading.Timer(60, second.kill)
    watchdog.start()
    try:
        second.stdin.write("What did I ask you?\n")
        second.stdin.flush()
        reply = second.stdout.readline()
        time.sleep(0.3)  # Ctrl-C at the prompt, not in the middle of printing the reply
        second.send_signal(signal.SIGINT)
        out, err = second.communicate()
    finally:
        watchdog.cancel()

    assert reply == "You asked me to book swim lessons.\n"
    assert second.returncode == 0 and "Traceback" not in err and out.strip() == ""
    sent = chat_requests(stub)[-1]["messages"]
    # The ended turn reaches the prompt without its tool-call bookkeeping; the thread below keeps it.
    # The memories come in the context block right before the latest message (what changes, last).
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "system", "user"]
    assert sent[1]["content"] == "My wife asked me to book swim lessons." and "Book swim lessons" in sent[3]["content"]
    agent = build_graph(data_dir)
    thread = agent.get_state({"configurable": {"thread_id": last_thread(agent.checkpointer, "Lance")}})
    assert [m.type for m in thread.values["messages"]] == ["human", "ai", "tool", "ai", "human", "ai"]


def lock_status(data_dir: str) -> str:
    todo_list = json.loads(maistro("todos", "--user", "Lance", "--json", "--data-dir", data_dir).output)
    return next(item["status"] for item in todo_list.values() if item["task"] == LOCK)


def test_history_lists_changes_and_undo_reverts_them(tmp_path):
    demo_dir = str(tmp_path / "demo")
    assert maistro("demo", "--data-dir", demo_dir).exit_code == 0

    listed = maistro("history", "--user", "Lance", "--data-dir", demo_dir)
    by_key = json.loads(maistro("history", "--user", "Lance", "--json", "--data-dir", demo_dir).output)
    exported = json.loads(maistro("export", "--user", "Lance", "--data-dir", demo_dir).output)
    entries = list(by_key.values())

    assert by_key == exported["history"], "history --json has the shape of the export's history section"
    assert listed.exit_code == 0 and "Change history of Lance" in listed.output
    assert entries[-1]["kind"] == "todo" and entries[-1]["after"]["status"] == "done"
    assert entries[-1]["id"][:8] in listed.output

    undone = maistro("undo", "--user", "Lance", "--data-dir", demo_dir)
    assert undone.exit_code == 0
    made = entries[-1]["time"][:16].replace("T", " ")
    assert undone.output == (
        f'Undid change {entries[-1]["id"][:8]} of Lance (ToDo "{LOCK}" updated on {made}): ToDo "{LOCK}" changed back.\n'
    )
    assert lock_status(demo_dir) == "not started"

    assert maistro("undo", "--user", "Lance", "--data-dir", demo_dir).exit_code == 0
    assert lock_status(demo_dir) == "done"

    first = maistro("undo", entries[0]["id"][:8], "--user", "Lance", "--data-dir", demo_dir)
    assert first.exit_code == 0 and f"Undid change {entries[0]['id'][:8]}" in first.output
    missing = maistro("undo", "zzzz", "--user", "Lance", "--data-dir", demo_dir)
    assert missing.exit_code == 1 and "No changes of Lance start with 'zzzz'" in missing.output


def test_undo_refuses_an_id_prefix_too_short_to_name_a_change(tmp_path):
    """`maistro undo 2` (meant as "undo two changes", say) names no change: one sentence, nothing undone."""
    demo_dir = str(tmp_path / "demo")
    assert maistro("demo", "--data-dir", demo_dir).exit_code == 0
    before = json.loads(maistro("history", "--all", "--user", "Lance", "--json", "--data-dir", demo_dir).output)
    oldest = next(iter(before))

    for short in (oldest[:1], oldest[:3]):
        refused = maistro("undo", short, "--user", "Lance", "--data-dir", demo_dir)
        assert refused.exit_code == 1
        assert refused.output == (
            f"{short!r} is too short to name a change: give at least 4 characters of its id (see `maistro history`).\n"
        )
    after = json.loads(maistro("history", "--all", "--user", "Lance", "--json", "--data-dir", demo_dir).output)
    assert after == before, "nothing was undone"

    undone = maistro("undo", oldest[:4], "--user", "Lance", "--data-dir", demo_dir)
    assert undone.exit_code == 0
    assert undone.output.startswith(f'Undid change {oldest[:8]} of Lance (profile "Lance" created on ')
