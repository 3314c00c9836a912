"""What the weekly review finds (``compass.findings``)."""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from compass.findings import (
    CLASH,
    OVERDUE,
    UNDATED,
    UNPLANNED,
    UNPLANNED_MAX,
    Item,
    findings_of,
    findings_text,
)

pytestmark = pytest.mark.store_free

ZONE = "Europe/Amsterdam"
NOW = datetime(2026, 11, 24, 10, 0, tzinfo=ZoneInfo(ZONE))


def plan(id, content, due=None, **more):
    return Item(id=id, type="plan", content=content, due=due, **more)


def kinds(items):
    return [(f.kind, [i.id for i in f.items]) for f in findings_of(items, now=NOW, time_zone=ZONE)]


def test_it_finds_overdue_clashing_undated_and_unplanned():
    items = [
        plan(1, "call the physio", NOW - timedelta(days=3)),
        plan(2, "dentist", NOW + timedelta(days=1)),
        plan(3, "physio session", NOW + timedelta(days=1, minutes=45)),
        plan(4, "haircut", NOW + timedelta(days=1, hours=3)),
        plan(5, "learn the guitar"),
        Item(id=6, type="pin", content="no sugar in tea", score=0.9),
        Item(id=7, type="pattern", content="runs when stressed", score=0.4),
        Item(id=8, type="pin", content="the guitar is in the attic", score=0.8),
    ]
    assert kinds(items) == [
        (OVERDUE, [1]),
        (CLASH, [2, 3]),
        (UNDATED, [5]),
        (UNPLANNED, [6]),
        (UNPLANNED, [7]),
    ]


def test_it_says_each_finding_in_a_line_with_the_owners_time():
    found = findings_of(
        [plan(1, "call the physio", NOW - timedelta(days=3))], now=NOW, time_zone=ZONE
    )
    assert findings_text(found) == (
        "- overdue: plan wm 1 “call the physio” was due Sat 2026-11-21 10:00, and is still "
        "active (3 days ago)."
    )


def test_plans_an_hour_and_a_minute_apart_do_not_clash_and_past_ones_never_do():
    items = [
        plan(1, "a", NOW + timedelta(hours=5)),
        plan(2, "b", NOW + timedelta(hours=6, minutes=1)),
        plan(3, "c", NOW - timedelta(minutes=10)),
        plan(4, "d", NOW - timedelta(minutes=20)),
    ]
    assert kinds(items) == [(OVERDUE, [4]), (OVERDUE, [3])]


def test_it_names_at_most_the_strongest_unplanned():
    pins = [Item(id=i, type="pin", content=f"word{i}", score=i / 10) for i in range(10)]
    found = kinds(pins)
    assert found == [(UNPLANNED, [i]) for i in range(9, 9 - UNPLANNED_MAX, -1)]


def test_nothing_found_is_said_so():
    assert findings_text([]) == (
        "Nothing is overdue, no plans clash, and nothing is missing a plan."
    )
