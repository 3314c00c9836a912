import pytest

from gem.state import (
    state_get,
    state_get_many,
    state_set,
    turn_counter_advance,
    turn_counter_current,
)

pytestmark = pytest.mark.django_db


def test_it_keeps_json_values_by_key():
    assert state_get("pending_recall", []) == []
    state_set("pending_recall", [{"key": "fairy", "deep": True}])
    assert state_get("pending_recall") == [{"key": "fairy", "deep": True}]


def test_it_counts_turns_from_one():
    assert turn_counter_current() == 0
    assert [turn_counter_advance() for _ in range(3)] == [1, 2, 3]
    assert turn_counter_current() == 3


def test_it_reads_several_values_in_one_query(django_assert_num_queries):
    state_set("chars_per_token", 3.5)
    with django_assert_num_queries(1):
        values = state_get_many({"chars_per_token": 4.0, "pending_recall": []})
    assert values == {"chars_per_token": 3.5, "pending_recall": []}
