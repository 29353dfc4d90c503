"""`maistro done`: what a user finished, from their done log, counted; `maistro todos` shows the active list only."""

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from langgraph.store.base import PutOp
from typer.testing import CliRunner

from graph import open_store
from graph.app.cli import app
from graph.memory.done_log import read_log
from graph.memory.kinds import TODO
from graph.memory.store import namespace

runner = CliRunner()
NOW = datetime.now(timezone.utc)


def done_todo(task: str, finished: datetime) -> dict:
    return {"task": task, "time_to_complete": None, "deadline": None, "solutions": [], "status": "done",
            "completed_at": finished.isoformat()}


@pytest.fixture
def finished(monkeypatch):
    """Lance finished three ToDos in May 2026 and one in June (all moved to the log), one two days ago (still on
    the list), and has one open."""
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("MAISTRO_DONE_LOG_AFTER_DAYS", "14")
    ns = namespace(TODO, "Lance")
    with open_store(Path(os.environ["MAISTRO_DATA_DIR"])) as store:
        store.batch([
            PutOp(ns, "may-1", done_todo("Renew passport", datetime(2026, 5, 3, 9, tzinfo=timezone.utc))),
            PutOp(ns, "may-2", done_todo("Pay the May rent", datetime(2026, 5, 1, 8, tzinfo=timezone.utc))),
            PutOp(ns, "may-3", done_todo("Call grandma", datetime(2026, 5, 30, 18, tzinfo=timezone.utc))),
            PutOp(ns, "june", done_todo("Pay the June rent", datetime(2026, 6, 1, 8, tzinfo=timezone.utc))),
            PutOp(ns, "recent", done_todo("Clean gutters", NOW - timedelta(days=2))),
            PutOp(ns, "open", {**done_todo("Book swim lessons", NOW), "status": "not started", "completed_at": None}),
        ])


def test_todos_shows_the_active_list_and_done_counts_the_log(finished):
    listed = runner.invoke(app, ["todos", "--user", "Lance", "--json"])
    assert listed.exit_code == 0, listed.output
    assert sorted(value["task"] for value in json.loads(listed.output).values()) == ["Book swim lessons", "Clean gutters"]

    since_may = runner.invoke(app, ["done", "--user", "Lance", "--since", "2026-05-01"])
    assert since_may.exit_code == 0, since_may.output
    assert "Lance finished 4 ToDos since 2026-05-01." in since_may.output
    assert "By month (UTC): 2026-05: 3, 2026-06: 1" in since_may.output
    lines = since_may.output.splitlines()
    order = [next(n for n, line in enumerate(lines) if task in line) for task in ("May rent", "Renew", "grandma", "June")]
    assert order == sorted(order), "oldest finish first"

    in_june = runner.invoke(app, ["done", "--user", "Lance", "--since", "2026-06-01", "--json"])
    report = json.loads(in_june.output)["todo"]
    assert report["count"] == 1 and report["by_month"] == {"2026-06": 1}
    assert [item["task"] for item in report["items"].values()] == ["Pay the June rent"]


def test_done_finds_words_and_names_a_single_month(finished):
    found = runner.invoke(app, ["done", "--user", "Lance", "--find", "RENT"])
    assert found.exit_code == 0, found.output
    assert "Lance finished 2 ToDos mentioning \"RENT\"." in found.output
    one = runner.invoke(app, ["done", "--user", "Lance", "--find", "grandma"])
    assert "Lance finished 1 ToDo mentioning \"grandma\" in May 2026." in one.output


def test_done_refuses_a_date_it_cannot_read_in_one_sentence(finished):
    result = runner.invoke(app, ["done", "--user", "Lance", "--since", "May"])
    assert result.exit_code == 1
    assert result.output.strip() == "--since 'May' is not a date; write it as YYYY-MM-DD, e.g. 2026-05-01."
    with open_store(Path(os.environ["MAISTRO_DATA_DIR"])) as store:
        assert read_log(store, "Lance", TODO) == [], "a refused command moves nothing"


def test_done_of_a_user_with_no_log(monkeypatch):
    result = runner.invoke(app, ["done", "--user", "Nobody"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "Nobody finished 0 ToDos."
