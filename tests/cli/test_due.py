"""`maistro due`: the open ToDos overdue, then those due within --days days, by deadline, from the store alone."""

import json
import os
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from typer.testing import CliRunner

from graph import open_store
from graph.app.cli import app
from graph.memory.kinds import PROFILE, TODO
from graph.memory.store import namespace

runner = CliRunner()
ZONE = ZoneInfo("Asia/Tokyo")


@pytest.fixture(autouse=True)
def tokyo(monkeypatch):
    """Deadlines read in Tokyo's time, tables as wide as a desktop terminal."""
    monkeypatch.setenv("MAISTRO_TIMEZONE", "Asia/Tokyo")
    monkeypatch.setenv("COLUMNS", "200")


def todo(task: str, deadline: datetime | None, status: str = "not started") -> dict:
    return {
        "task": task,
        "deadline": deadline.isoformat() if deadline else None,
        "status": status,
        "time_to_complete": None,
        "solutions": [],
    }


@pytest.fixture
def todos():
    """Lance's ToDos: two overdue, one due tomorrow, one in ten days, one done and one archived overdue, one without
    a deadline; stored in an order that is none of theirs."""
    now = datetime.now(ZONE)
    stored = {
        "k-next-week": todo("Renew passport", now + timedelta(days=10)),
        "k-tomorrow": todo("Call the bank", now + timedelta(days=1)),
        "k-late": todo("Pay rent", now - timedelta(hours=2), "in progress"),
        "k-done": todo("File taxes", now - timedelta(days=1), "done"),
        "k-archived": todo("Old chore", now - timedelta(days=3), "archived"),
        "k-later": todo("Return the books", now - timedelta(days=4)),
        "k-someday": todo("Learn the cello", None),
    }
    with open_store(Path(os.environ["MAISTRO_DATA_DIR"])) as store:
        for key, value in stored.items():
            store.put(namespace(TODO, "Lance"), key, value)
    return stored


def due(*args: str):
    return runner.invoke(app, ["due", "--user", "Lance", *args])


def test_overdue_first_then_by_deadline_within_a_week(todos):
    result = due()
    assert result.exit_code == 0, result.output
    output = result.output
    overdue, upcoming = output.index("Overdue ToDos of Lance"), output.index("ToDos of Lance due by ")
    assert overdue < output.index("Return the books") < output.index("Pay rent") < upcoming < output.index("Call the bank")
    for left_out in ("Renew passport", "File taxes", "Old chore", "Learn the cello"):
        assert left_out not in output


def test_json_is_store_key_to_value_in_that_order(todos):
    result = due("--json", "--days", "14")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert list(shown) == ["k-later", "k-late", "k-tomorrow", "k-next-week"]
    assert shown["k-late"] == todos["k-late"]


def test_days_zero_is_what_is_overdue_or_due_today(todos):
    assert list(json.loads(due("--json", "--days", "0").stdout)) == ["k-later", "k-late"]


def test_nothing_due_is_one_sentence():
    result = due()
    last_day = (datetime.now(ZONE) + timedelta(days=7)).date()
    assert result.exit_code == 0
    assert result.output == f"Nothing is due for Lance: no open ToDos overdue or due by {last_day:%Y-%m-%d}.\n"
    assert json.loads(due("--json").stdout) == {}


def test_a_negative_number_of_days_is_refused():
    result = due("--days", "-1")
    assert result.exit_code == 2 and "--days" in result.output


def test_the_days_are_the_users_profile_zones_over_maistro_timezone(monkeypatch):
    """Kiritimati (UTC+14) and Pago Pago (UTC-11) are 25 hours apart: never on the same date."""
    monkeypatch.setenv("MAISTRO_TIMEZONE", "Pacific/Pago_Pago")
    with open_store(Path(os.environ["MAISTRO_DATA_DIR"])) as store:
        store.put(namespace(PROFILE, "Lance"), PROFILE.key, {"name": "Lance", "timezone": "Pacific/Kiritimati"})

    result = due("--days", "0")

    today = datetime.now(ZoneInfo("Pacific/Kiritimati")).date()
    assert result.output == f"Nothing is due for Lance: no open ToDos overdue or due by {today:%Y-%m-%d}.\n"
