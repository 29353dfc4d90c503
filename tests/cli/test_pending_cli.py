"""`maistro pending`: the updates that failed, one a line with its id; --retry ID and --drop ID; one sentence and
exit 1 for an id that names none of the user's, or more than one; exports say they leave them out. Through the
real ChatOpenAI against the strict stub."""

import json
import os
from pathlib import Path

import pytest
from langgraph.store.base import PutOp
from typer.testing import CliRunner

from graph import open_store
from graph.app.cli import app
from graph.memory.pending import PendingChange, list_pending
from graph.memory.store import PENDING, namespace
from testing.openai_stub import StubError, text_reply, tool_calls_reply
from testing.stub_script import update

runner = CliRunner()


def maistro(*args: str, input: str | None = None):
    return runner.invoke(app, list(args), input=input)


@pytest.fixture
def data_dir() -> Path:
    return Path(os.environ["MAISTRO_DATA_DIR"])


def pending_of(data_dir: Path, user_id: str = "Lance") -> list[PendingChange]:
    with open_store(data_dir) as store:
        return list_pending(store, user_id)


@pytest.fixture
def failed(stub, script, data_dir) -> PendingChange:
    """A chat whose profile extraction is answered in text: the update is kept as a pending change."""
    script.add("chat", update("user", content="Nice to meet you, Lance!"), text_reply("Sorry, your profile did not save."))
    script.add("profile", text_reply("The user's name is Lance."))
    assert maistro("chat", "--user", "Lance", input="I'm Lance and I live in Oakland.\n").exit_code == 0
    (pending,) = pending_of(data_dir)
    return pending


def test_pending_lists_each_with_its_id_and_retry_saves_it(failed, stub, script, data_dir):
    listed = maistro("pending", "--user", "Lance")

    assert listed.exit_code == 0
    (line,) = listed.output.splitlines()
    assert line.startswith(f"{failed.id[:8]}  ") and '  profile: ' in line and line.endswith('"I\'m Lance and I live in Oakland."')
    as_json = json.loads(maistro("pending", "--user", "Lance", "--json").output)
    assert as_json == {failed.id: failed.model_dump()}
    script.add("profile", tool_calls_reply(("Profile", {"name": "Lance", "location": "Oakland"})))

    retried = maistro("pending", "--retry", failed.id[:8], "--user", "Lance")

    assert (retried.exit_code, retried.output) == (
        0, f"✎ Profile updated (name, location)\nPending change {failed.id[:8]} is saved and no longer pending.\n"
    )
    assert pending_of(data_dir) == []
    assert json.loads(maistro("profile", "--user", "Lance", "--json").output)["user_profile"]["location"] == "Oakland"
    assert maistro("pending", "--user", "Lance").output == "No pending changes for Lance: every update was saved or dropped.\n"


def test_a_retry_that_fails_again_exits_1_and_keeps_it(failed, stub, script, data_dir):
    script.add("profile", text_reply("Lance lives in Oakland."))

    retried = maistro("pending", "--retry", failed.id, "--user", "Lance")

    assert retried.exit_code == 1
    assert retried.stdout.startswith("✗ Profile not updated: the update failed (kept as pending change ")
    assert retried.stderr == (
        f"Pending change {failed.id[:8]} failed again and is still pending; `maistro pending --drop {failed.id[:8]}` drops it.\n"
    )
    assert pending_of(data_dir) == [failed]


def test_drop_removes_it_and_another_user_cannot_see_retry_or_drop_it(failed, data_dir):
    assert maistro("pending", "--user", "Bob").output == "No pending changes for Bob: every update was saved or dropped.\n"
    for option in ("--retry", "--drop"):
        refused = maistro("pending", option, failed.id[:8], "--user", "Bob")
        assert (refused.exit_code, refused.stderr) == (1, f"No pending change of Bob has the id {failed.id[:8]!r}; see `maistro pending`.\n")
    assert pending_of(data_dir) == [failed]

    dropped = maistro("pending", "--drop", failed.id[:8], "--user", "Lance")

    assert dropped.exit_code == 0 and dropped.output.startswith(f"Dropped pending change {failed.id[:8]} of Lance (")
    assert pending_of(data_dir) == []


def test_an_unknown_or_ambiguous_id_is_one_sentence(data_dir):
    with open_store(data_dir) as store:
        for key in ("abcd1111", "abcd2222"):
            value = PendingChange(id=key, time="2026-12-03T10:00:00+00:00", kind="todo", thread_id="t", message="m", problem="p")
            store.batch([PutOp(namespace(PENDING, "Lance"), key, value.model_dump())])

    for given, sentence in [
        ("abcd", "More than one pending change of Lance starts with 'abcd'; give more of its id (see `maistro pending`)."),
        ("abc", "No pending change of Lance has the id 'abc'; see `maistro pending`."),
        ("zzzz", "No pending change of Lance has the id 'zzzz'; see `maistro pending`."),
    ]:
        refused = maistro("pending", "--drop", given, "--user", "Lance")
        assert (refused.exit_code, refused.stderr) == (1, sentence + "\n")
    both = maistro("pending", "--retry", "abcd1111", "--drop", "abcd2222", "--user", "Lance")
    assert (both.exit_code, both.stderr) == (1, "--retry and --drop each name one pending change: pass one of them, not both.\n")
    assert len(pending_of(data_dir)) == 2


def test_an_export_says_it_leaves_pending_changes_out(failed, data_dir):
    exported = maistro("export", "--user", "Lance")

    assert exported.exit_code == 0 and "pending" not in json.loads(exported.stdout)
    assert exported.stderr == "Warning: Lance has 1 pending change; exports leave them out (see `maistro pending`).\n"


def test_a_retry_without_a_working_model_is_one_sentence_and_keeps_it(failed, stub, script, data_dir, monkeypatch):
    script.add("profile", *[StubError(500, "overloaded")] * 10)

    down = maistro("pending", "--retry", failed.id[:8], "--user", "Lance")

    assert (down.exit_code, down.stderr) == (
        1, f"Pending change {failed.id[:8]} is still pending: the model endpoint kept failing; try again later.\n"
    )
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    unset = maistro("pending", "--retry", failed.id[:8], "--user", "Lance")
    assert unset.exit_code == 1 and unset.stderr.count("\n") == 1 and "OPENAI_API_KEY" in unset.stderr
    assert pending_of(data_dir) == [failed]
