"""Merges due and the summaries chosen for the context (``mirror.merge``): pure."""

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirror.merge import (
    LEVELS,
    NEXT_LEVEL,
    Span,
    covers,
    merges_due,
    summaries_for_context,
    unmerged,
)


def l0s(count: int, *, size: int = 10) -> list[Span]:
    return [Span(n + 1, "L0", n * size + 1, (n + 1) * size) for n in range(count)]


def test_it_merges_whole_groups_of_three_unmerged_summaries():
    spans = l0s(7)
    assert [[s.id for s in g] for g in merges_due(spans, "L0")] == [[1, 2, 3], [4, 5, 6]]
    spans.append(Span(100, "L1", 1, 30))
    assert [[s.id for s in g] for g in merges_due(spans, "L0")] == [[4, 5, 6]]
    assert [s.id for s in unmerged(spans, "L0")] == [4, 5, 6, 7]
    assert merges_due(spans, "L2") == []


@pytest.mark.parametrize("before", [61, 71, 81])
@pytest.mark.parametrize("budget", [800, None])
def test_it_shows_the_l0s_behind_recent_rather_than_an_l1_reaching_into_it(before, budget):
    spans = [
        Span(1, "L0", 1, 40, 225),
        Span(2, "L0", 41, 80, 225),
        Span(3, "L0", 81, 92, 90),
        Span(4, "L1", 1, 92, 260),
    ]
    # 41-80 reaches into Recent too, but nothing finer covers the time before it.
    assert summaries_for_context(spans, before=before, budget=budget) == [spans[1], spans[0]]
    # Once Recent starts inside the last L0, that L0 comes in; the L1 never does.
    assert summaries_for_context(spans, before=85, budget=budget) == [spans[2], spans[1], spans[0]]


def test_it_shows_the_newest_stretch_in_l0_and_older_time_coarser_as_the_budget_calls_for():
    spans = [Span(n + 1, "L0", n * 10 + 1, (n + 1) * 10, 200) for n in range(11)]  # events 1-110
    spans += [Span(101 + n, "L1", n * 30 + 1, (n + 1) * 30, 250) for n in range(3)]
    spans += [Span(201, "L2", 1, 90, 300)]

    def chosen(budget):
        shown = summaries_for_context(spans, before=111, budget=budget)
        return [(s.level, s.first_event_id) for s in shown]

    # The two newest L0 leave 400: the three L0 of 61-90 would not fit, nor would the three L1
    # of 1-90, so the L2 stands for 1-90.
    assert chosen(800) == [("L0", 101), ("L0", 91), ("L2", 1)]
    # With more room, L0 for as long as a whole L1's worth of them fits, then L1.
    l0s_61_to_110 = [("L0", 101), ("L0", 91), ("L0", 81), ("L0", 71), ("L0", 61)]
    assert chosen(1500) == [*l0s_61_to_110, ("L1", 31), ("L1", 1)]
    # The walk ends after the first that does not fit what is left, as the assembler's does.
    assert chosen(1300) == [*l0s_61_to_110, ("L1", 31), ("L0", 21)]
    assert chosen(None) == [("L0", 101 - 10 * n) for n in range(11)]
    # A coarser summary is taken only when it fits: else the finer one, and the walk ends.
    assert chosen(100) == [("L0", 101)]


def test_it_shows_a_summary_once_its_first_turn_left_the_recent_window():
    spans = l0s(3)
    assert summaries_for_context(spans, before=21) == [spans[1], spans[0]]
    assert summaries_for_context(spans, before=22) == [spans[2], spans[1], spans[0]]
    assert summaries_for_context(spans, before=1) == []


@given(
    st.lists(
        st.tuples(st.sampled_from(LEVELS), st.integers(1, 60), st.integers(0, 20)),
        max_size=20,
    ),
    st.integers(1, 100),
)
def test_it_never_chooses_overlapping_or_needlessly_coarse_summaries(raw, before):
    spans = [Span(n, level, first, first + length) for n, (level, first, length) in enumerate(raw)]
    chosen = summaries_for_context(spans, before=before)
    assert all(s.first_event_id < before for s in chosen)
    for newer, older in itertools.pairwise(chosen):
        assert older.last_event_id < newer.first_event_id  # so no event is shown twice
    for shown in chosen:
        # No finer summaries that overlap none of the others cover its time before Recent.
        others = [s for s in chosen if s != shown]
        finer = [
            s
            for s in spans
            if LEVELS.index(s.level) < LEVELS.index(shown.level)
            and s.first_event_id < before
            and not any(overlap(s, other) for other in others)
        ]
        covered = {e for s in finer for e in events(s)}
        newest = min(shown.last_event_id, before - 1)
        assert not set(range(shown.first_event_id, newest + 1)) <= covered


@st.composite
def merged_levels(draw) -> list[Span]:
    """L0 of random lengths back to back from event 1, merged as the Mirror merges them, each
    summary with a random size."""
    lengths = draw(st.lists(st.integers(1, 12), max_size=30))
    spans, first = [], 1
    for length in lengths:
        spans.append(Span(len(spans) + 1, "L0", first, first + length - 1))
        first += length
    for level in ("L0", "L1"):
        for group in merges_due(spans, level):
            upper = NEXT_LEVEL[level]
            spans.append(
                Span(len(spans) + 1, upper, group[0].first_event_id, group[-1].last_event_id)
            )
    sizes = draw(st.lists(st.integers(1, 300), min_size=1, max_size=8))
    return [s._replace(tokens=sizes[s.id % len(sizes)]) for s in spans]


@given(merged_levels(), st.integers(1, 400), st.one_of(st.none(), st.integers(0, 1500)))
def test_it_takes_a_coarser_summary_only_where_the_budget_calls_for_it(spans, before, budget):
    chosen = summaries_for_context(spans, before=before, budget=budget)
    for newer, older in itertools.pairwise(chosen):
        assert older.last_event_id < newer.first_event_id
    left = math.inf if budget is None else budget
    for shown in chosen:
        newest = min(shown.last_event_id, before - 1)
        finer = [
            s
            for s in spans
            if LEVELS.index(s.level) < LEVELS.index(shown.level)
            and covers(shown, s)
            and s.first_event_id <= newest <= s.last_event_id
        ]
        if finer:
            # Coarser than the finest: it ends before Recent and fits, and the next finer
            # level inside it would not have fitted what was left.
            next_finer = LEVELS[LEVELS.index(shown.level) - 1]
            inside = sum(s.tokens for s in spans if s.level == next_finer and covers(shown, s))
            assert shown.last_event_id < before
            assert shown.tokens <= left < inside
        if shown.last_event_id >= before:
            # Reaching into Recent: nothing finer covers the newest event before it.
            assert not any(
                LEVELS.index(s.level) < LEVELS.index(shown.level)
                and s.first_event_id < before <= s.last_event_id + 1
                for s in spans
            )
        assert shown is chosen[-1] or shown.tokens <= left  # only the last may not fit
        left -= shown.tokens
    if budget is None:
        # Everything before Recent that the L0 cover is shown.
        l0_events = {e for s in spans if s.level == "L0" for e in events(s) if e < before}
        assert l0_events <= {e for s in chosen for e in events(s)}


def overlap(a: Span, b: Span) -> bool:
    return a.first_event_id <= b.last_event_id and b.first_event_id <= a.last_event_id


def events(span: Span) -> range:
    return range(span.first_event_id, span.last_event_id + 1)
