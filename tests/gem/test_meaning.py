import pytest
from hypothesis import given
from hypothesis import strategies as st

from gem.meaning import meaning_words, near_duplicate, semantic_hash

pytestmark = pytest.mark.store_free

WORDS = st.lists(st.sampled_from("cilantro recipes tea sugar physio friday cats the no".split()))


def test_it_hashes_a_retag_with_other_spacing_case_order_and_endings_alike():
    assert semantic_hash("no cilantro in recipes") == semantic_hash("Recipe,  no CILANTRO!")
    assert semantic_hash("no cilantro in recipes") != semantic_hash("no basil in recipes")
    assert len(semantic_hash("tea")) == 16


def test_a_text_of_stop_words_keeps_its_words():
    assert meaning_words("I am here") == ["am", "here", "i"]
    assert semantic_hash("I am here") != semantic_hash("you were there")


@given(WORDS, st.randoms())
def test_the_hash_ignores_word_order_case_and_spacing(words, random):
    shuffled = list(words)
    random.shuffle(shuffled)
    spaced = "   ".join(word.upper() for word in shuffled)
    assert semantic_hash(" ".join(words)) == semantic_hash(spaced)


def test_a_near_duplicate_shares_most_of_the_shorter_items_words():
    assert near_duplicate("no cilantro in ANY recipe suggestions!", "no cilantro in recipes")
    assert not near_duplicate("call mom on sunday", "call mom on monday")
    assert not near_duplicate("I hate cilantro", "I love cilantro")
    assert not near_duplicate("tea", "tea")  # one shared word says too little
