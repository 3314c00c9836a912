from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gem.importance import importance_of, importance_refreshed, valence_of
from gem.models import WorkingMemoryType

pytestmark = pytest.mark.store_free


def test_it_reads_the_valence_of_the_words():
    assert valence_of("We adopted a cat! She is lovely") > 0.3
    assert valence_of("I hate cilantro") < -0.3
    assert valence_of("call the physio on friday") == 0.0


def test_it_scores_by_what_the_type_stands_for_in_mira():
    def score(type_, **kwargs):
        return importance_of(
            type=type_, due=kwargs.get("due"), linked_fragments=kwargs.get("links", 0), valence=0
        )

    assert score("thought") == 0.5
    assert score("pin") == score("pattern") == 0.8  # insight +0.3
    assert score("plan", due=datetime(2026, 1, 1, tzinfo=UTC)) == 0.7  # urgent +0.2
    assert score("plan") == 0.6
    assert score("feeling") == 0.6  # emotion +0.1
    assert score("thought", links=10) == 0.7  # links at most +0.2
    assert importance_of(type="thought", due=None, linked_fragments=0, valence=-0.8) == 0.58


@given(
    st.sampled_from(WorkingMemoryType.values),
    st.booleans(),
    st.integers(0, 50),
    st.floats(-1, 1),
)
def test_importance_stays_between_0_and_1(type_, due, links, valence):
    when = datetime(2026, 1, 1, tzinfo=UTC) if due else None
    score = importance_of(type=type_, due=when, linked_fragments=links, valence=valence)
    assert 0.5 <= score <= 1.0
    assert score <= importance_refreshed(score) <= 1.0
