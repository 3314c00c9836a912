from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from transfer import limits
from transfer.limits import DEPTH_MAX, DEPTH_PROBLEM, json_depth, json_problem, text_problem

pytestmark = pytest.mark.store_free

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(alphabet="ab\x00", max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(alphabet="ab\x00", max_size=2), inner, max_size=3)
    ),
    max_leaves=30,
)


def nested(depth: int, inner=None):
    """``inner`` inside ``depth`` lists, built without recursion."""
    for _ in range(depth):
        inner = [inner]
    return inner


def depth_recursively(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth_recursively, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth_recursively, value), default=0)
    return 0


def problem_recursively(value, depth: int = 0) -> str | None:
    """What ``json_problem`` finds, walked the recursive way: the first problem in the order the
    value is written."""
    if isinstance(value, str):
        return text_problem(value)
    if isinstance(value, dict):
        parts = [each for pair in value.items() for each in pair]
    elif isinstance(value, list):
        parts = value
    else:
        return None
    if depth == limits.DEPTH_MAX:
        return DEPTH_PROBLEM
    return next((found for part in parts if (found := problem_recursively(part, depth + 1))), None)


@given(json_values)
def test_it_measures_depth_as_the_recursive_walk_does(value):
    assert json_depth(value) == depth_recursively(value)


@given(json_values, st.integers(min_value=0, max_value=4))
def test_it_finds_the_problem_the_recursive_walk_finds_first(value, depth_max):
    with mock.patch.object(limits, "DEPTH_MAX", depth_max):
        assert json_problem(value) == problem_recursively(value)


def test_it_measures_a_depth_past_any_recursion():
    assert json_depth(nested(100_000)) == 100_000
    assert json_depth({"a": [1, {"b": nested(3)}], "c": "d"}) == 6


def test_it_refuses_nesting_past_the_limit_and_no_sooner():
    assert json_problem(nested(DEPTH_MAX, "fine")) is None
    assert json_problem(nested(DEPTH_MAX - 1, ["fine", "not \x00 fine"])) == (
        "holds a NUL character (\\x00), which PostgreSQL cannot store"
    )
    assert json_problem(nested(DEPTH_MAX + 1)) == DEPTH_PROBLEM
    assert json_problem({"kept": nested(100_000)}) == DEPTH_PROBLEM
    assert DEPTH_PROBLEM == (
        "nested too deeply (lists and objects more than 64 levels inside one another; "
        "at most 64 are read)"
    )
