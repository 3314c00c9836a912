"""Which fragments a message names (gem/waking.py): whole words, any case, never fuzzy."""

import string

from hypothesis import given
from hypothesis import strategies as st

from gem.waking import (
    NAME_WORDS_MAX,
    TRIGGERS_MAX,
    Named,
    name_words,
    names_found,
    names_index,
    triggers_joined,
    triggers_problem,
)

INDEX = names_index(
    [
        ("biscuit", ["biscuit"]),
        ("old-grey", ["old-grey", "Old Grey the seal"]),
        ("y'lhara", ["y'lhara"]),
        ("lighthouse", ["lighthouse", "the point"]),
    ]
)


def keys(message: str) -> list[str]:
    return [named.key for named in names_found(message, INDEX)]


def test_a_key_is_named_as_a_whole_word_in_any_case():
    assert keys("What about BISCUIT?") == ["biscuit"]
    assert keys("biscuits and gravy") == []  # exact words, never fuzzy
    assert keys("abiscuit") == []


def test_hyphens_apostrophes_and_underscores_part_words_as_spaces_do():
    assert keys("Old Grey was there") == ["old-grey"]
    assert keys("old_grey") == ["old-grey"]
    assert keys("Y'lhara's hat") == ["y'lhara"]
    assert keys("Y’lhara") == ["y'lhara"]


def test_the_longest_name_comes_first_then_the_latest():
    found = names_found("biscuit saw Old Grey the seal at the point", INDEX)
    assert found == [
        Named("old-grey", "Old Grey the seal", 4, 6),
        Named("lighthouse", "the point", 2, 9),
        Named("biscuit", "biscuit", 1, 1),
    ]
    assert keys("the point, then biscuit") == ["lighthouse", "biscuit"]
    assert keys("biscuit, then y'lhara") == ["y'lhara", "biscuit"]


def test_a_fragment_is_named_once_by_its_longest_name():
    assert names_found("old grey, Old Grey the seal", INDEX) == [
        Named("old-grey", "Old Grey the seal", 4, 6)
    ]


def test_names_without_words_or_too_long_name_nothing():
    index = names_index([("a", ["--", "one " * (NAME_WORDS_MAX + 1)])])
    assert index == {}


def test_it_says_what_is_wrong_with_triggers():
    assert triggers_problem(["Old Grey", "the point"]) is None
    assert triggers_problem("lighthouse") == "Triggers are a list of words or phrases."
    assert triggers_problem(["?!"]) == "The trigger “?!” has no words in it."
    assert "are the same words" in triggers_problem(["Old Grey", "old-grey"])
    assert "at most" in triggers_problem(["x"] * (TRIGGERS_MAX + 1))
    assert "too long" in triggers_problem(["word " * (NAME_WORDS_MAX + 1)])


def test_triggers_are_joined_once_in_words_never_the_keys_and_up_to_the_most():
    joined, past = triggers_joined("old-grey", ["the seal"], ["THE SEAL", "Old Grey", "rocks"])
    assert (joined, past) == (["the seal", "rocks"], [])
    many = [f"word{n}" for n in range(TRIGGERS_MAX + 2)]
    joined, past = triggers_joined("k", ["own"], many)
    assert len(joined) == TRIGGERS_MAX and joined[0] == "own"
    assert past == many[TRIGGERS_MAX - 1 :]


words = st.text(alphabet=string.ascii_letters + "éßİΣς", min_size=1, max_size=8)
separators = st.sampled_from([" ", "-", "_", "'", ", ", "! ", "’", "\n"])


@given(
    name=st.lists(words, min_size=1, max_size=4),
    before=st.lists(words, max_size=4),
    after=st.lists(words, max_size=4),
    glue=separators,
    case=st.sampled_from([str.upper, str.lower, str.title, str]),
)
def test_a_name_said_between_other_words_is_found_whatever_its_case(
    name, before, after, glue, case
):
    phrase = " ".join(name)
    message = glue.join([*before, case(phrase), *after])
    index = names_index([("k", [phrase])])
    found = names_found(message, index)
    if name_words(case(phrase)) == name_words(phrase):
        assert [named.key for named in found] == ["k"]


@given(message=st.text(max_size=200), names=st.lists(st.text(max_size=30), max_size=10))
def test_whatever_it_is_given_each_fragment_is_found_at_most_once(message, names):
    index = names_index([(f"k{n}", [name]) for n, name in enumerate(names)])
    found = names_found(message, index)
    assert len({named.key for named in found}) == len(found)
    for named in found:
        assert name_words(named.said) in {name_words(name) for name in names}
