"""Merges due and the summaries chosen for the context (``mirror.merge``): pure."""

import itertools

from hypothesis import given
from hypothesis import strategies as st

from mirror.merge import Span, merges_due, summaries_for_context, unmerged


def l0s(count: int, *, size: int = 10) -> list[Span]:
    return [Span(n + 1, "L0", n * size + 1, (n + 1) * size) for n in range(count)]


def test_it_merges_whole_groups_of_three_unmerged_summaries():
    spans = l0s(7)
    assert [[s.id for s in g] for g in merges_due(spans, "L0")] == [[1, 2, 3], [4, 5, 6]]
    spans.append(Span(100, "L1", 1, 30))
    assert [[s.id for s in g] for g in merges_due(spans, "L0")] == [[4, 5, 6]]
    assert [s.id for s in unmerged(spans, "L0")] == [4, 5, 6, 7]
    assert merges_due(spans, "L2") == []


def test_it_shows_the_newest_stretch_in_l0_and_older_time_coarser():
    spans = l0s(11)  # events 1-110
    spans += [Span(101, "L1", 1, 30), Span(102, "L1", 31, 60), Span(103, "L1", 61, 90)]
    spans += [Span(201, "L2", 1, 90)]
    chosen = summaries_for_context(spans, before=111)
    # Two L0 for the newest stretch; a third would commit to three more inside an L1: L1s then.
    assert [(s.level, s.first_event_id) for s in chosen] == [
        ("L0", 101),
        ("L0", 91),
        ("L1", 61),
        ("L1", 31),
        ("L1", 1),
    ]
    # Once three L1 are shown, the L2 stands for the three L1 it covers.
    older = [Span(300 + n, "L1", 1 + 30 * n, 30 + 30 * n) for n in range(6)]  # events 1-180
    older += [Span(400, "L2", 1, 90), Span(501, "L0", 181, 190), Span(502, "L0", 191, 200)]
    assert [(s.level, s.first_event_id) for s in summaries_for_context(older, before=201)] == [
        ("L0", 191),
        ("L0", 181),
        ("L1", 151),
        ("L1", 121),
        ("L1", 91),
        ("L2", 1),
    ]


def test_it_shows_a_summary_once_its_first_turn_left_the_recent_window():
    spans = l0s(3)
    assert summaries_for_context(spans, before=21) == [spans[1], spans[0]]
    assert summaries_for_context(spans, before=22) == [spans[2], spans[1], spans[0]]
    assert summaries_for_context(spans, before=1) == []


@given(
    st.lists(
        st.tuples(st.sampled_from(["L0", "L1", "L2"]), st.integers(1, 60), st.integers(0, 20)),
        max_size=20,
    ),
    st.integers(1, 100),
)
def test_it_never_chooses_overlapping_summaries(raw, before):
    spans = [Span(n, level, first, first + length) for n, (level, first, length) in enumerate(raw)]
    chosen = summaries_for_context(spans, before=before)
    assert all(s.first_event_id < before for s in chosen)
    for newer, older in itertools.pairwise(chosen):
        assert older.last_event_id < newer.first_event_id
