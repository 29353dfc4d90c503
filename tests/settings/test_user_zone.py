"""Whose time a run uses: a client's zone, else the profile's, else MAISTRO_TIMEZONE; and the time the user wrote the
message, within 24 hours of the server's clock."""

import re
from datetime import datetime, timedelta, timezone

import pytest

from graph.memory.user_time import calendar_text, profile_zone
from graph.run_context import AUTH_USER_KEY, RunContext, message_moment
from prompts import ZONE_UNKNOWN

SERVER_NOW = datetime(2026, 12, 3, 14, 0, tzinfo=timezone.utc)


def test_a_clients_zone_beats_the_profiles_which_beats_the_operators(monkeypatch):
    monkeypatch.setenv("MAISTRO_TIMEZONE", "America/Los_Angeles")
    assert RunContext(timezone="Europe/Berlin").zone_name("Asia/Tokyo") == "Europe/Berlin"
    assert RunContext().zone_name("Asia/Tokyo") == "Asia/Tokyo"
    assert RunContext().zone_name("") == "America/Los_Angeles"
    assert RunContext().zone_name("Mars/Base") == "America/Los_Angeles", "a zone this machine does not know is skipped"
    monkeypatch.delenv("MAISTRO_TIMEZONE")
    assert RunContext().zone_name(None) == "", "none known: the system's zone, and the prompt says so"


def test_the_profile_zone_is_read_from_the_single_documents():
    assert profile_zone({"profile": [{"name": "Ann", "timezone": "Asia/Tokyo"}], "instructions": []}) == "Asia/Tokyo"
    assert profile_zone({"profile": [{"name": "Ann", "timezone": "Tokyo"}]}) == ""
    assert profile_zone({"profile": []}) == ""


def test_now_is_the_message_time_in_the_users_zone():
    """23:30 in Tokyo is 14:30 UTC the same day; 00:30 in Tokyo is still the day before in UTC."""
    late = RunContext(message_time="2026-12-03T14:30:00+00:00").now("Asia/Tokyo")
    early = RunContext(message_time="2026-12-03T15:30:00Z").now("Asia/Tokyo")
    assert late.isoformat() == "2026-12-03T23:30:00+09:00"
    assert early.isoformat() == "2026-12-04T00:30:00+09:00" and early.astimezone(timezone.utc).date().day == 3


@pytest.mark.parametrize(
    "text, problem",
    [
        ("2026-12-03T21:30:00", "is not an ISO 8601 date-time with a UTC offset, such as 2026-12-03T21:30+09:00."),
        ("Thursday night", "is not an ISO 8601 date-time with a UTC offset"),
        ("2026-12-04T14:00:01+00:00", "is more than 24 hours from the server's clock; send the time the user wrote."),
        ("2026-12-02T13:59:59+00:00", "is more than 24 hours from the server's clock"),
    ],
)
def test_a_message_time_without_an_offset_or_far_from_the_server_clock_is_refused(text, problem):
    with pytest.raises(ValueError, match=re.escape(problem)) as refused:
        message_moment(text, SERVER_NOW)
    assert str(refused.value).startswith(f"message_time {text!r} ") and "\n" not in str(refused.value)


def test_a_message_time_within_a_day_is_taken():
    assert message_moment("2026-12-04T13:59:00+00:00", SERVER_NOW) == SERVER_NOW + timedelta(hours=23, minutes=59)
    assert message_moment("2026-12-03T23:30:00+09:00", SERVER_NOW).utcoffset() == timedelta(hours=9)


def test_with_auth_on_a_client_still_sends_its_zone_and_message_time():
    sent = datetime.now(timezone.utc).isoformat()
    settings = RunContext.from_runnable_config(
        {"configurable": {AUTH_USER_KEY: {"identity": "alice"}}}, {"timezone": "Asia/Tokyo", "message_time": sent}
    )
    assert (settings.timezone, settings.message_time) == ("Asia/Tokyo", sent)
    with pytest.raises(ValueError, match="more than 24 hours"):
        RunContext.from_runnable_config({"configurable": {"message_time": "2020-01-01T00:00:00+00:00"}})


def test_the_calendar_names_today_and_this_week_monday_to_sunday():
    sunday = datetime.fromisoformat("2026-12-06T23:30:00+09:00")
    text = calendar_text(sunday, ask_zone=False)
    assert text == "Today is Sunday 2026-12-06 where the user is; this week runs from Monday 2026-11-30 to Sunday 2026-12-06."
    assert calendar_text(sunday, ask_zone=True).endswith(ZONE_UNKNOWN)
