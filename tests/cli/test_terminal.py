"""The terminal side of `maistro chat`: what it prints, its exit codes, thread ownership and thread locks."""

import io
import json
import os
from pathlib import Path

import httpx
import openai
import pytest
from rich.console import Console
from typer.testing import CliRunner

from graph import build_graph
from graph.app.cli import app
from graph.app.session import ChatSession
from graph.app.terminal import endpoint_problem, print_turn
from graph.backends.thread_locks import FileThreadLocks, PostgresThreadLocks, open_thread_locks
from testing.openai_stub import StubError, text_reply
from testing.scripted_model import calls, route, say, todo
from testing.stub_script import kind_of

runner = CliRunner()


@pytest.fixture
def data_dir() -> Path:
    return Path(os.environ["MAISTRO_DATA_DIR"])


def maistro(*args: str, input: str | None = None):
    """Run a `maistro` command in this process."""
    return runner.invoke(app, list(args), input=input)


def thread_messages(data_dir: Path, thread_id: str) -> list[str]:
    return [m.text for m in build_graph(data_dir).get_state({"configurable": {"thread_id": thread_id}}).values["messages"]]


def test_version():
    result = maistro("--version")
    assert result.exit_code == 0 and result.output == "maistro (task-maistro) 0.1.0\n"


def test_an_endpoint_host_without_a_port_is_named_by_its_url():
    request = httpx.Request("POST", "https://models.example.invalid/v1/chat/completions?api-version=1")
    problem = endpoint_problem(openai.APIConnectionError(request=request))
    assert problem.startswith("Could not reach the model endpoint at https://models.example.invalid/v1/chat/completions;")
    assert "None" not in problem and "api-version" not in problem


@pytest.mark.parametrize("terminal", [True, False])
def test_a_spinner_shows_on_a_terminal_while_memories_are_updated(agent, model, terminal):
    model.add("task_maistro", route("todo"), say("Added."))
    model.add("update_todos", calls(todo("Book a dentist", solutions=["Dr. Lee"])))
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, color_system=None, width=100)

    print_turn(console, ChatSession(agent, "Lance").send("Book a dentist."))

    shown = out.getvalue()
    assert ("Updating your ToDo list…" in shown) == terminal, "a spinner on a terminal, nothing in a pipe"
    assert "✎ ToDo added: Book a dentist\n" in shown and "Added.\n" in shown


def test_piped_chat_exits_1_when_a_message_is_left_without_an_answer(stub, script):
    script.add("chat", StubError(500, "upstream exploded"), text_reply("Hello."))

    failed = maistro("chat", "--user", "Lance", "--retries", "0", input="Remember the milk\n")
    assert failed.exit_code == 1 and "HTTP 500 (upstream exploded)" in failed.stdout

    answered = maistro("chat", "--user", "Lance", "--retries", "0", input="Hello\n")
    assert answered.exit_code == 0 and answered.stdout == "Hello.\n"


def test_the_notice_that_a_message_was_cut_is_printed(stub, script):
    script.add("chat", text_reply("I read the start of your notes."))
    long_message = "notes " * 20_000

    result = maistro("chat", "--user", "Lance", input=long_message + "\n")

    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "I read the start of your notes."
    assert lines[1].startswith(f"(Your message was {len(long_message.strip()):,} characters long; I read only the first")


def test_chat_refuses_another_users_thread(stub, script, data_dir):
    script.add("chat", text_reply("Hello Ann."))
    assert maistro("chat", "--user", "Ann", "--thread", "ann-1", input="Hi\n").exit_code == 0

    refused = maistro("chat", "--user", "Lance", "--thread", "ann-1", input="What did Ann say?\n")

    assert refused.exit_code == 1
    assert refused.stderr == "Thread ann-1 belongs to another user: pass one of your own threads, or leave out --thread.\n"
    assert [kind_of(request) for request in stub.requests] == ["chat"], "no request was sent for Lance"
    assert thread_messages(data_dir, "ann-1") == ["Hi", "Hello Ann."]


def test_a_thread_continued_by_the_default_user_is_theirs(stub, script, data_dir, monkeypatch):
    monkeypatch.setenv("MAISTRO_DEFAULT_USER", "me")
    script.add("chat", text_reply("Hello."), text_reply("Hello again."))
    assert maistro("chat", "--thread", "mine", input="Hi\n").exit_code == 0

    assert maistro("chat", "--user", "me", "--thread", "mine", input="Hi again\n").exit_code == 0
    assert maistro("chat", "--user", "Lance", "--thread", "mine", input="Hi\n").exit_code == 1
    assert thread_messages(data_dir, "mine") == ["Hi", "Hello.", "Hi again", "Hello again."]


def test_file_thread_locks_exclude_each_other_until_released(tmp_path):
    with open_thread_locks(tmp_path, database_url="") as first, open_thread_locks(tmp_path, database_url="") as second:
        assert isinstance(first, FileThreadLocks)
        assert first.acquire("t1") and first.acquire("t1"), "holding a lock again is fine"
        assert not second.acquire("t1") and second.acquire("t2")
        first.release("t1")
        assert second.acquire("t1")
        second.close()
        assert first.acquire("t1") and first.acquire("t2")
    assert len(list((tmp_path / "thread-locks").glob("*.lock"))) == 2, "one lock file per thread"


def test_postgres_thread_locks_exclude_each_other_until_released_or_disconnected(postgres_url):
    with open_thread_locks(database_url=postgres_url) as first, open_thread_locks(database_url=postgres_url) as second:
        assert isinstance(first, PostgresThreadLocks)
        assert first.acquire("t1") and first.acquire("t1")
        assert not second.acquire("t1") and second.acquire("t2")
        first.release("t1")
        assert second.acquire("t1")
        second.close()
        assert first.acquire("t1") and first.acquire("t2"), "a closed connection holds no lock"


def test_an_export_with_a_byte_order_mark_imports_and_one_that_is_not_utf8_is_one_sentence(tmp_path, data_dir):
    exported = maistro("export", "--user", "Lance").stdout
    with_mark, latin = tmp_path / "with-mark.json", tmp_path / "latin.json"
    with_mark.write_bytes(b"\xef\xbb\xbf" + exported.replace("{}", '{"user_profile": {"name": "Lance"}}', 1).encode())
    latin.write_bytes(exported.replace("{}", '{"user_profile": {"name": "Zoë"}}', 1).encode("latin-1"))

    imported = maistro("import", str(with_mark), "--user", "Ann")
    refused = maistro("import", str(latin), "--user", "Bob")

    assert imported.exit_code == 0 and "Imported into Ann: 1 profile" in imported.stdout
    assert refused.exit_code == 1
    offset = latin.read_bytes().index("ë".encode("latin-1"))
    assert refused.stderr == f"Cannot import {latin}: it is not UTF-8 text (bad byte at offset {offset}); save it as UTF-8.\n"
    assert json.loads(maistro("profile", "--user", "Bob", "--json").stdout) == {}


def test_export_to_a_file_it_cannot_write_is_one_sentence(tmp_path):
    result = maistro("export", "--user", "Lance", "-o", str(tmp_path / "missing" / "lance.json"))
    assert result.exit_code == 1
    assert result.stderr == f"Cannot write {tmp_path / 'missing' / 'lance.json'}: No such file or directory.\n"
