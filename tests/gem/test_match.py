"""Lifecycle matching by word overlap: pure functions, no database."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gem.match import MATCH_THRESHOLD, best_match, word_overlap
from gem.words import STOP_WORDS

pytestmark = pytest.mark.store_free

stop_words = st.lists(st.sampled_from(sorted(STOP_WORDS))).map(" ".join)


def test_it_measures_word_overlap():
    assert word_overlap("Exercise routine", "exercise routine!") == 1.0
    assert word_overlap("weekly review", "review the week") == 1 / 3
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


def test_it_compares_content_words_only():
    assert word_overlap("Call THE pharmacy, then go!", "call pharmacy") == 1.0
    assert word_overlap("the dishes", "call the pharmacy") == 0.0
    assert word_overlap("the", "the") == 0.0
    assert best_match("the dishes", [(1, "call the pharmacy")]) is None


def test_it_resolves_by_content_words_diluted_by_stop_words():
    assert best_match("dishes", [(1, "wash the dishes")]) == 1
    # 1 of 13 words, 1 of 5 content words
    long = "wash all of the dishes in the sink before we go to bed tonight"
    assert best_match("dishes", [(1, long)]) == 1


def test_it_gives_a_tie_to_the_earlier_candidate_the_newest():
    assert best_match("tea", [("a", "tea now"), ("b", "now tea")]) == "a"
    # "the" no longer makes the older "wash the dishes" the better match
    newest_first = [("new", "dry dishes"), ("old", "wash the dishes")]
    assert best_match("the dishes", newest_first) == "new"


def test_it_matches_at_exactly_the_threshold():
    # one shared word out of two: 0.5
    assert best_match("tea", [(7, "tea cup")], threshold=0.5) == 7


@settings(max_examples=200)
@given(a=st.text(), b=st.text())
def test_it_keeps_word_overlap_symmetric_and_between_zero_and_one(a, b):
    score = word_overlap(a, b)

    assert 0.0 <= score <= 1.0
    assert score == word_overlap(b, a)
    assert word_overlap(a, a) in (0.0, 1.0)


words = st.text(alphabet=st.characters(categories=["L", "Nd"]), min_size=1, max_size=8)
texts = st.lists(words, max_size=6).map(" ".join)


@settings(max_examples=200)
@given(a=texts, b=texts, extra_a=stop_words, extra_b=stop_words)
def test_it_never_counts_stop_words(a, b, extra_a, extra_b):
    plain = word_overlap(a, b)

    assert word_overlap(f"{extra_a} {a}", f"{b} {extra_b.upper()}") == plain
    assert word_overlap(extra_a, b) == 0.0


@settings(max_examples=200)
@given(text=texts, candidates=st.lists(texts, max_size=5))
def test_it_picks_the_first_of_the_best_candidates(text, candidates):
    scores = [word_overlap(text, candidate) for candidate in candidates]
    chosen = best_match(text, list(enumerate(candidates)))

    if not scores or max(scores) < MATCH_THRESHOLD:
        assert chosen is None
    else:
        assert chosen == scores.index(max(scores))
