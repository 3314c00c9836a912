from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from gem.due import due_from_text

LONDON = ZoneInfo("Europe/London")
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
