"""Lifecycle matching by word overlap: pure functions, no database."""

from hypothesis import given, settings
from hypothesis import strategies as st

from gem.match import best_match, word_overlap


def test_it_measures_word_overlap():
    assert word_overlap("Exercise routine", "exercise routine!") == 1.0
    assert word_overlap("weekly review", "review the week") == 0.25
    assert word_overlap("a b", "c d") == 0.0
    assert word_overlap("", "") == 0.0
    assert word_overlap("", "word") == 0.0
    assert word_overlap("...", "!!!") == 0.0
    assert word_overlap("don't", "Don’t") == 1.0


def test_it_picks_the_best_match_above_the_threshold():
    candidates = [(1, "weekly review"), (2, "exercise routine every morning"), (3, "tea")]

    assert best_match("exercise routine", candidates) == 2
    assert best_match("something else entirely", candidates) is None
    assert best_match("exercise", candidates, threshold=0.5) is None
    assert best_match("anything", []) is None


def test_it_breaks_best_match_ties_by_order():
    assert best_match("tea", [("a", "tea now"), ("b", "now tea")]) == "a"


def test_it_matches_at_exactly_the_threshold():
    # one shared word out of two: 0.5
    assert best_match("tea", [(7, "tea cup")], threshold=0.5) == 7


@settings(max_examples=200, deadline=None)
@given(a=st.text(), b=st.text())
def test_it_keeps_word_overlap_symmetric_and_between_zero_and_one(a, b):
    score = word_overlap(a, b)

    assert 0.0 <= score <= 1.0
    assert score == word_overlap(b, a)
    assert word_overlap(a, a) in (0.0, 1.0)
