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

pytestmark = pytest.mark.store_free


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

    # The two newest L0 and the L2 reach back to event 1 in 700; the 100 left would not turn
    # the L2 into its three L1 (750).
    assert chosen(800) == [("L0", 101), ("L0", 91), ("L2", 1)]
    # With more room, the time nearest Recent comes in finer, still reaching back to event 1:
    # the L2 as its three L1 (600 left, 150 after)…
    assert chosen(1300) == [("L0", 101), ("L0", 91), ("L1", 61), ("L1", 31), ("L1", 1)]
    # …and the newest L1 as its three L0, with more still.
    l0s_61_to_110 = [("L0", 101), ("L0", 91), ("L0", 81), ("L0", 71), ("L0", 61)]
    assert chosen(1500) == [*l0s_61_to_110, ("L1", 31), ("L1", 1)]
    assert chosen(None) == [("L0", 101 - 10 * n) for n in range(11)]
    # When not even the nearest fits, it comes alone, for the assembler to cut.
    assert chosen(100) == [("L0", 101)]
    # Where the next coarse one does not fit, finer ones reach as far as they fit.
    assert chosen(500) == [("L0", 101), ("L0", 91)]
    assert chosen(650) == [("L0", 101), ("L0", 91), ("L1", 61)]


def test_it_reaches_back_further_than_the_finest_would():
    """Recent starting at event 370 of a log summarised to event 384 in L0 of 16 events, L1 of
    48 and L2 of 144: the L0 behind Recent would leave 575 for two more L0 (back to event 337);
    the L1 reaching into Recent, the L1 behind it and an L2 reach back to event 145."""
    spans = [Span(n + 1, "L0", n * 16 + 1, (n + 1) * 16, 225) for n in range(24)]  # 1-384
    spans += [Span(101 + n, "L1", n * 48 + 1, (n + 1) * 48, 250) for n in range(8)]
    spans += [Span(201 + n, "L2", n * 144 + 1, (n + 1) * 144, 300) for n in range(2)]

    def chosen(budget):
        shown = summaries_for_context(spans, before=370, budget=budget)
        return [(s.level, s.first_event_id) for s in shown]

    assert chosen(800) == [("L1", 337), ("L1", 289), ("L2", 145)]
    assert chosen(1500) == [("L1", 337), ("L1", 289), ("L2", 145), ("L2", 1)]
    # With room for detail, the time nearest Recent comes in L0, and it still reaches event 1.
    assert chosen(3000)[:3] == [("L0", 369), ("L0", 353), ("L0", 337)]
    assert chosen(3000)[-1] == ("L2", 1)


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


def finest_reach(spans: list[Span], before: int, budget: float) -> float:
    """How far back the finest summaries alone reach within the budget, walking back from
    Recent (the rule before summaries reached back coarser): the first event they cover."""
    reach, newest, left = math.inf, before - 1, budget
    finest = sorted((s for s in spans if s.level == "L0"), key=lambda s: -s.last_event_id)
    for span in finest:
        if span.first_event_id > newest or span.first_event_id >= before:
            continue
        if span.tokens > left:
            break
        left -= span.tokens
        reach, newest = span.first_event_id, span.first_event_id - 1
    return reach


@given(merged_levels(), st.integers(1, 400), st.one_of(st.none(), st.integers(0, 1500)))
def test_it_reaches_back_without_gaps_and_as_far_as_the_finest_would(spans, before, budget):
    chosen = summaries_for_context(spans, before=before, budget=budget)
    for newer, older in itertools.pairwise(chosen):
        assert older.last_event_id < newer.first_event_id
        # No time a summary covers is jumped over.
        assert not any(
            older.last_event_id < e < newer.first_event_id for s in spans for e in events(s)
        )
    assert all(s.first_event_id < before for s in chosen)
    behind = [s for s in spans if s.first_event_id < before]
    if not behind:
        assert chosen == []
        return
    # The newest time behind Recent a summary covers is shown.
    newest = min(before - 1, max(s.last_event_id for s in behind))
    assert chosen and chosen[0].first_event_id <= newest <= chosen[0].last_event_id
    # Only the first may reach into Recent.
    assert all(s.last_event_id < before for s in chosen[1:])
    total = sum(s.tokens for s in chosen)
    if budget is None:
        l0_events = {e for s in spans if s.level == "L0" for e in events(s) if e < before}
        assert l0_events <= {e for s in chosen for e in events(s)}
        assert all(s.level == "L0" for s in chosen)
        return
    if total > budget:  # not even the nearest fits: it comes alone, for the assembler to cut
        assert len(chosen) == 1 and chosen[0].level == "L0"
        return
    # At least as far back as the finest would reach in the same budget.
    assert chosen[-1].first_event_id <= finest_reach(spans, before, budget)
    # Turning any shown summary into the finer ones covering its events would not fit.
    for shown in chosen:
        inside = [s for s in spans if covers(shown, s) and s != shown]
        if inside:
            level = max(LEVELS.index(s.level) for s in inside)
            finer = [s for s in inside if LEVELS.index(s.level) == level]
            if {e for s in finer for e in events(s)} == set(events(shown)) and len(finer) == len(
                {s.first_event_id for s in finer}
            ):
                assert total - shown.tokens + sum(s.tokens for s in finer) > budget


def overlap(a: Span, b: Span) -> bool:
    return a.first_event_id <= b.last_event_id and b.first_event_id <= a.last_event_id


def events(span: Span) -> range:
    return range(span.first_event_id, span.last_event_id + 1)
