from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gem.due import due_from_text

pytestmark = pytest.mark.store_free

LONDON = ZoneInfo("Europe/London")
NEW_YORK = ZoneInfo("America/New_York")
MONDAY_6PM = datetime(2026, 11, 23, 18, 0, tzinfo=LONDON)
TUESDAY_NOON = datetime(2026, 11, 24, 12, 0, tzinfo=LONDON)


def due(text, at=MONDAY_6PM, zone="Europe/London"):
    return due_from_text(text, written_at=at, time_zone=zone)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("call the pharmacy friday at 5pm", datetime(2026, 11, 27, 17, 0, tzinfo=LONDON)),
        ("water the plants in 3 days", datetime(2026, 11, 26, 18, 0, tzinfo=LONDON)),
        ("dentist tomorrow morning", datetime(2026, 11, 24, 9, 0, tzinfo=LONDON)),
        ("gym next tuesday", datetime(2026, 11, 24, 0, 0, tzinfo=LONDON)),
        ("gym tuesday", datetime(2026, 11, 24, 0, 0, tzinfo=LONDON)),
        ("exam on 2026-12-01", datetime(2026, 12, 1, 0, 0, tzinfo=LONDON)),
    ],
)
def test_it_reads_a_due_date_relative_to_when_the_plan_was_written(text, expected):
    assert due(text) == expected


def test_it_takes_next_weekday_on_that_weekday_as_a_week_on():
    assert due("gym next tuesday", at=TUESDAY_NOON) == datetime(2026, 12, 1, tzinfo=LONDON)
    assert due("this tuesday", at=TUESDAY_NOON) == datetime(2026, 12, 1, tzinfo=LONDON)


@pytest.mark.parametrize(
    "text", ["finish the scarf", "may the force be with us", "sun at the park"]
)
def test_it_leaves_plans_without_a_clear_time_open_ended(text):
    assert due(text) is None


def test_it_reads_times_in_the_owners_time_zone():
    at = datetime(2026, 11, 23, 18, 0, tzinfo=ZoneInfo("UTC"))
    moment = due("call friday at 5pm", at=at, zone="America/New_York")
    assert moment == datetime(2026, 11, 27, 17, 0, tzinfo=ZoneInfo("America/New_York"))


def test_it_reads_a_time_of_day_already_past_as_tomorrow():
    at = datetime(2026, 11, 23, 10, 0, tzinfo=LONDON)
    assert due("pills at 9am", at=at) == datetime(2026, 11, 24, 9, 0, tzinfo=LONDON)
    assert due("call at noon", at=at) == datetime(2026, 11, 23, 12, 0, tzinfo=LONDON)


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Tokyo", "Australia/Sydney"])
def test_it_reads_a_time_of_day_in_the_owners_zone_wherever_they_are(zone):
    at = datetime(2026, 7, 6, 10, 0, tzinfo=ZoneInfo(zone))
    assert due("pills at 9am", at=at, zone=zone) == datetime(
        2026, 7, 7, 9, 0, tzinfo=ZoneInfo(zone)
    )
    assert due("call at noon", at=at, zone=zone) == datetime(
        2026, 7, 6, 12, 0, tzinfo=ZoneInfo(zone)
    )


def test_it_keeps_a_late_tonight_due_when_written_not_in_the_past():
    at = datetime(2026, 11, 23, 21, 0, tzinfo=LONDON)
    assert due("call mum tonight", at=at) == at
    assert due("call mum tonight", at=at.astimezone(UTC), zone="America/New_York") == datetime(
        2026, 11, 23, 20, 0, tzinfo=NEW_YORK
    )


@pytest.mark.parametrize("text", ["tidy up this morning", "exam on 2026-11-01", "today at 9am"])
def test_it_makes_a_plan_for_a_moment_gone_by_due_when_written(text):
    assert due(text) == MONDAY_6PM


PHRASES = [
    "call mum tonight",
    "pills at 9am",
    "call at noon",
    "at midnight",
    "this morning",
    "this evening",
    "today",
    "today at 9am",
    "in 2 hours",
    "tomorrow morning",
    "friday at 5pm",
    "next tuesday",
    "exam on 2026-11-01",
    "3 days ago",
    "call at 5pm EST",
]
ZONES = ["UTC", "Europe/London", "America/New_York", "Asia/Tokyo", "Asia/Kathmandu"]


@settings(max_examples=150)
@given(
    written_at=st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2090, 1, 1), timezones=st.just(UTC)
    ),
    text=st.sampled_from(PHRASES),
    zone=st.sampled_from(ZONES),
)
def test_it_never_makes_a_plan_due_before_it_was_written(written_at, text, zone):
    moment = due(text, at=written_at, zone=zone)

    assert moment is None or moment >= written_at
    assert moment is None or moment.utcoffset() is not None
