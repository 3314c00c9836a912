import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gem.models import State
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


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.dictionaries(st.sampled_from(["a", "b", "key", "value"]), json_values))
def test_it_gives_back_what_was_set_and_the_default_for_the_rest(values):
    for key, value in values.items():
        state_set(key, value)
        state_set(key, value)  # the second time an update of the row the first one made
    expected = {key: values.get(key, "unset") for key in ("a", "b", "key", "value", "other")}
    assert state_get_many(dict.fromkeys(expected, "unset")) == expected
    assert State.objects.filter(key__in=values).count() == len(values)
    State.objects.all().delete()


def test_it_reads_nothing_for_no_keys(django_assert_num_queries):
    with django_assert_num_queries(0):
        assert state_get_many({}) == {}


def test_it_advances_the_counter_in_one_statement_and_stamps_it(django_assert_num_queries):
    turn_counter_advance()
    before = State.objects.get(key="turn_counter").updated_at
    with django_assert_num_queries(1):
        assert turn_counter_advance() == 2
    assert State.objects.get(key="turn_counter").updated_at > before
