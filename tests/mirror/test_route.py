"""The trigger, the route and turns and chunks (``mirror.route``): pure."""

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirror.route import (
    THREE_PASS,
    TWO_PASS,
    Line,
    TurnEvent,
    chunks_of,
    do_density,
    hole_near,
    route_for,
    should_fire,
    turns_of,
)

pytestmark = pytest.mark.store_free

TS = datetime(2026, 3, 2, tzinfo=UTC)


def line(kind: str, text: str) -> Line:
    return Line(1, "claude", kind, text, True)


def event(event_id: int, companion: bool) -> TurnEvent:
    return TurnEvent(event_id, TS, "claude" if companion else "luna", companion, ())


@pytest.mark.parametrize(
    ("turns", "hours", "density", "fires"),
    [
        (20, 0, 0.0, True),
        (19, 0, 0.0, False),
        (19, 3.99, 0.0, False),
        (5, 4, 0.0, True),
        (4, 100, 0.0, False),
        (100, 100, 0.81, False),  # held while intense
        (20, 0, 0.8, True),  # exactly 0.8 does not hold
    ],
)
def test_it_fires_exactly_as_the_seed_says(turns, hours, density, fires):
    assert should_fire(turns, hours, density) is fires


@given(st.integers(0, 200), st.floats(0, 500), st.floats(0, 1), st.booleans())
def test_it_never_fires_while_the_do_density_is_over_four_fifths(turns, hours, density, near):
    if density > 0.8:
        assert not should_fire(turns, hours, density, near=near)
    else:
        assert should_fire(turns, hours, density, near=near) == (
            (near and turns > 0) or turns >= 20 or (hours >= 4 and turns >= 5)
        )


def test_it_fires_with_fewer_turns_when_a_hole_is_near():
    assert should_fire(3, 0, 0.0, near=True)
    assert not should_fire(0, 0, 0.0, near=True)  # nothing pending: nothing to do
    assert not should_fire(3, 0, 0.9, near=True)  # the hold still holds


def test_a_hole_is_near_when_a_full_window_holds_few_summarised_turns():
    starts = [11, 13, 15, 17, 19]  # the newest five summarised turns (margin 4, and one)
    # Recent starting at or before the fifth newest summarised turn holds five or more of them.
    assert not hole_near(window_first=11, window_full=True, summarised_turn_starts=starts)
    assert not hole_near(window_first=3, window_full=True, summarised_turn_starts=starts)
    # Four or fewer: a few turns more and the window passes the newest summary's end.
    assert hole_near(window_first=12, window_full=True, summarised_turn_starts=starts)
    assert hole_near(window_first=25, window_full=True, summarised_turn_starts=starts)
    # A window with room to spare loses nothing yet; one that shows nothing is past every turn.
    assert not hole_near(window_first=25, window_full=False, summarised_turn_starts=starts)
    assert hole_near(window_first=None, window_full=True, summarised_turn_starts=starts)
    # Nothing summarised yet and the window full: the first run is due before it loses a turn.
    assert hole_near(window_first=1, window_full=True, summarised_turn_starts=[])


def test_it_measures_do_density_over_do_and_narrate_characters():
    lines = [line("say", "x" * 60), line("do", "x" * 30), line("narrate", "x" * 10)]
    assert do_density(lines) == pytest.approx(0.4)
    assert do_density([]) == 0.0


def test_it_routes_at_forty_percent():
    assert route_for(0.4) == TWO_PASS
    assert route_for(0.41) == THREE_PASS


def test_it_groups_events_into_turns_opened_by_the_person():
    events = [event(1, True), event(2, False), event(3, True), event(4, True), event(5, False)]
    assert [[e.event_id for e in t.events] for t in turns_of(events)] == [[1, 2, 3, 4], [5]]


@given(st.lists(st.booleans(), max_size=60), st.integers(1, 25), st.booleans())
def test_it_cuts_turns_into_consecutive_chunks_losing_none(companions, size, keep_short):
    turns = turns_of([event(n, c) for n, c in enumerate(companions, 1)])
    chunks = chunks_of(turns, size=size, keep_short=keep_short)
    flat = [turn for chunk in chunks for turn in chunk]
    assert flat == turns[: len(flat)]
    assert all(len(chunk) == size for chunk in chunks[:-1])
    assert len(turns) - len(flat) == (0 if keep_short else len(turns) % size)
