from datetime import UTC, datetime

from transfer.facts import DESC, PIN, PLAN, fact_typed

AT = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)  # a Monday


def test_a_dated_intention_is_a_plan_due_when_it_says_from_when_it_was_remembered():
    kind, due = fact_typed("Plans to visit Lisbon on Friday at 5pm", at=AT, zone="UTC")
    assert kind == PLAN
    assert due == datetime(2026, 3, 6, 17, 0, tzinfo=UTC)


def test_an_intention_without_a_time_is_not_a_plan():
    assert fact_typed("Wants to learn the cello", at=AT, zone="UTC") == (DESC, None)


def test_a_stated_preference_is_a_pin():
    assert fact_typed("Prefers tea over coffee", at=AT, zone="UTC") == (PIN, None)
    assert fact_typed("Can't stand loud music", at=AT, zone="UTC") == (PIN, None)


def test_anything_else_is_a_description():
    assert fact_typed("Works as a nurse in Porto", at=AT, zone="UTC") == (DESC, None)
