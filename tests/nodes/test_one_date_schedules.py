"""A schedule naming one date a year ends after that date's next occurrence (`graph.schedules.one_date_end`,
`cron_end_time`): a cron line has no year, so without an end the reminder would fire again every year."""

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from graph.schedules import cron_end_time, one_date_end

NEW_YORK = ZoneInfo("America/New_York")


def test_a_date_still_ahead_this_year_ends_at_its_midnight_in_the_zone():
    end = one_date_end("0 9 5 12 *", "Asia/Tokyo", datetime(2026, 12, 3, 15, tzinfo=UTC))
    assert end == datetime(2026, 12, 6, tzinfo=ZoneInfo("Asia/Tokyo"))
    assert end.astimezone(UTC) == datetime(2026, 12, 5, 15, tzinfo=UTC)


def test_a_date_past_this_year_ends_next_year():
    assert one_date_end("0 9 5 12 *", "UTC", datetime(2026, 12, 6, tzinfo=UTC)) == datetime(2027, 12, 6, tzinfo=UTC)


def test_a_date_whose_firings_have_all_passed_today_ends_next_year():
    # 10:00 UTC on December 5: the 9:00 firing is past, the date's next occurrence with a firing is next year's.
    now = datetime(2026, 12, 5, 10, tzinfo=UTC)
    assert one_date_end("0 9 5 dec *", "UTC", now) == datetime(2027, 12, 6, tzinfo=UTC)
    assert one_date_end("0 9-17 5 12 *", "UTC", now) == datetime(2026, 12, 6, tzinfo=UTC)


def test_february_29_ends_in_the_next_leap_year():
    assert one_date_end("30 8 29 2 *", "UTC", datetime(2026, 3, 1, tzinfo=UTC)) == datetime(2028, 3, 1, tzinfo=UTC)


def test_the_end_follows_the_zones_daylight_saving_time():
    # New York moves to EDT on 2026-03-08 and back to EST on 2026-11-01: each date ends at its own local midnight.
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert one_date_end("0 9 8 3 *", "America/New_York", now).astimezone(UTC) == datetime(2026, 3, 9, 4, tzinfo=UTC)
    assert one_date_end("0 9 1 11 *", "America/New_York", now).astimezone(UTC) == datetime(2026, 11, 2, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    "schedule",
    ["0 8 * * *", "0 9 5 * *", "0 9 * 12 *", "0 9 5 12 1", "0 9 5,6 12 *", "0 9 5 1-3 *", "0 9 */2 12 *", "30 7 * * 1-5"],
)
def test_a_recurring_schedule_has_no_end(schedule):
    assert one_date_end(schedule, "Europe/Berlin", datetime(2026, 12, 3, tzinfo=UTC)) is None


def test_the_crons_end_time_is_the_dates_end_or_on_aegra_its_last_firing():
    now = datetime(2026, 12, 3, tzinfo=UTC)
    for schedule, last_hour in (("0 9-17 5 12 *", 17), ("0 9 5 12 *", 9)):
        assert cron_end_time(schedule, "America/New_York", now, aegra=False) == datetime(2026, 12, 6, tzinfo=NEW_YORK)
        assert cron_end_time(schedule, "America/New_York", now, aegra=True) == datetime(2026, 12, 5, last_hour, tzinfo=NEW_YORK)
    assert cron_end_time("0 8 * * *", "America/New_York", now, aegra=True) is None
