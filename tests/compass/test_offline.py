"""The offline Compass (``compass.offline``): placeholders in the Compass's own format."""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from compass.answer import answer_parse
from compass.findings import Item, findings_of
from compass.offline import OFFLINE_LABEL, consult_answer, review_answer, topic_of

pytestmark = pytest.mark.store_free

ZONE = "Europe/Amsterdam"
NOW = datetime(2026, 11, 24, 10, 0, 30, tzinfo=ZoneInfo(ZONE))


def test_a_consultation_gets_three_labelled_plans_due_in_one_three_and_seven_days():
    text = consult_answer("A training plan for the next month?", now=NOW, time_zone=ZONE)
    read = answer_parse(text, now=NOW, time_zone=ZONE)
    assert OFFLINE_LABEL in read.reasoning
    assert [(p.plan, p.due) for p in read.proposals] == [
        ("Begin: training plan next month", datetime(2026, 11, 25, 10, 0, tzinfo=NOW.tzinfo)),
        ("Keep going: training plan next month", datetime(2026, 11, 27, 10, 0, tzinfo=NOW.tzinfo)),
        ("Look back on: training plan next month", datetime(2026, 12, 1, 10, 0, tzinfo=NOW.tzinfo)),
    ]
    assert all(OFFLINE_LABEL in p.why for p in read.proposals)
    assert text == consult_answer("A training plan for the next month?", now=NOW, time_zone=ZONE)


def test_a_question_of_stop_words_still_gets_a_topic():
    assert topic_of("what should it be?") == "what was asked"


def test_a_review_gets_one_plan_per_finding():
    items = [
        Item(id=1, type="plan", content="call the physio", due=NOW - timedelta(days=1)),
        Item(id=2, type="plan", content="dentist", due=NOW + timedelta(days=2)),
        Item(id=3, type="plan", content="gym", due=NOW + timedelta(days=2, minutes=30)),
        Item(id=4, type="plan", content="learn guitar"),
        Item(id=5, type="pin", content="tea without sugar", score=0.5),
    ]
    found = findings_of(items, now=NOW, time_zone=ZONE)
    read = answer_parse(review_answer(found, now=NOW, time_zone=ZONE), now=NOW, time_zone=ZONE)
    assert [p.plan for p in read.proposals] == [
        "Reschedule: call the physio",
        "Move one of: dentist / gym",
        "Set a date for: learn guitar",
        "Plan something for: tea without sugar",
    ]
    assert all(p.due > NOW for p in read.proposals)
    assert "was due" in read.proposals[0].why
