import re

from hypothesis import given
from hypothesis import strategies as st

from gem.models import KEY_VALIDATOR
from transfer.bundle import LoreEntry
from transfer.lore import (
    KEY_PATTERN,
    MENTION_MIN_CHARS,
    MENTIONS_MAX,
    NAMES,
    RECOGNITION_CHARS,
    FragmentData,
    LoreFragment,
    entries_of,
    fragments_of,
    key_of,
    keys_line_split,
    macros_replaced,
)


def entry(name="", keys=(), content="", constant=False, enabled=True, secondary=(), where="0"):
    return LoreEntry(
        name=name,
        keys=tuple(keys),
        secondary_keys=tuple(secondary),
        content=content,
        constant=constant,
        enabled=enabled,
        where=where,
    )


def test_keys_are_read_as_the_gem_reads_them():
    assert KEY_VALIDATOR.regex.pattern == f"^{KEY_PATTERN.pattern}$"


def test_a_title_becomes_one_key_word():
    assert key_of("Old Harbour") == "old-harbour"
    assert key_of("  Y'lhara's  Tower!! ") == "y'lhara's-tower"
    assert key_of("???") == ""


@given(st.text(max_size=150))
def test_every_key_made_is_one_the_gem_takes(title):
    key = key_of(title)
    if key:
        KEY_VALIDATOR(key)
        assert len(key) <= 100


def test_a_constant_entry_is_ambient_and_its_other_keys_end_the_recognition():
    (fragment,) = fragments_of(
        [
            entry(
                "The Well", ["well", "old well"], "A deep well.", constant=True, secondary=["water"]
            )
        ]
    )
    assert fragment.key == "the-well"
    assert fragment.tiers == {
        "ambient": "A deep well.",
        "recognition": "Keys: well, old well, water",
    }


def test_a_disabled_constant_entry_is_never_ambient():
    (fragment,) = fragments_of(
        [entry("well", ["well"], "A deep well.", constant=True, enabled=False)]
    )
    assert fragment.tiers == {"recognition": "A deep well."}


def test_a_long_entry_is_recognition_by_its_first_paragraph_and_inventory_whole():
    content = "First part.\n\nSecond part, longer."
    (fragment,) = fragments_of([entry("moon", ["moon"], content)])
    assert fragment.tiers == {"recognition": "First part.", "inventory": content}
    long_line = "word " * (RECOGNITION_CHARS // 4)
    (fragment,) = fragments_of([entry("sun", ["sun"], long_line)])
    assert fragment.tiers["inventory"] == long_line.strip()


def test_two_entries_of_one_title_are_told_apart_and_one_naming_another_proposes_an_edge():
    fragments = fragments_of(
        [
            entry("Fairy", ["fairy"], "Lives by the Well.", where="a"),
            entry("Fairy", ["sprite"], "Another fairy.", where="b"),
            entry("Well", ["well"], "Deep and old.", where="c"),
        ]
    )
    assert [f.key for f in fragments] == ["fairy", "fairy-2", "well"]
    assert fragments[0].edges == [("well", NAMES)]
    assert fragments[1].edges == [("fairy", NAMES)]
    assert fragments[2].edges == []


def test_macros_become_names():
    assert macros_replaced("{{char}} greets {{ USER }}.", {"char": "Sera", "user": "luna"}) == (
        "Sera greets luna."
    )


def test_the_keys_line_is_read_back():
    assert keys_line_split("Text.\n\nKeys: a, b c") == ("Text.", ["a", "b c"])
    assert keys_line_split("No keys here.") == ("No keys here.", [])


tier_text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=40)


@given(
    st.lists(
        st.tuples(
            st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True).filter(
                lambda k: not k.endswith("-") and "--" not in k
            ),
            tier_text,
            tier_text,
            tier_text,
        ),
        max_size=5,
        unique_by=lambda t: t[0],
    )
)
def test_fragments_exported_as_entries_read_back_the_same(rows):
    fragments = [FragmentData(key, a, r, i) for key, a, r, i in rows]
    read = {f.key: f.tiers for f in fragments_of(entries_of(fragments))}
    for fragment in fragments:
        expected = {
            "recognition": fragment.recognition,
            "inventory": fragment.inventory,
            "ambient": fragment.ambient,
        }
        assert read[fragment.key] == expected


def test_edges_travel_with_the_exported_fragment():
    fragments = [
        FragmentData("fairy", "A light.", "", "", (("well", "lives in"),)),
        FragmentData("well", "", "Deep.", "", ()),
    ]
    read = {f.key: f for f in fragments_of(entries_of(fragments))}
    assert read["fairy"].edges == [("well", "lives in")]


def test_a_mark_that_is_not_one_of_ours_is_read_as_any_entry():
    foreign = {"key": "maren", "tiers": {"ambient": "Maren."}}
    (fragment,) = fragments_of(
        [
            LoreEntry(
                name="",
                keys=("Maren",),
                secondary_keys=(),
                content="Maren runs the ferry.",
                constant=False,
                enabled=True,
                where="entries.7",
                fragment=foreign,
            )
        ]
    )
    assert (fragment.key, fragment.tiers) == ("maren", {"recognition": "Maren runs the ferry."})


def mentions_one_pattern_each(keys_of_entry, by_key):
    """How edges were proposed before the index of names: a pattern of each entry's names,
    searched in every other entry's content."""
    words_of = {
        key: [
            word
            for word in dict.fromkeys((entry.name, *entry.keys))
            if len(word.strip()) >= MENTION_MIN_CHARS
        ]
        for key, entry in keys_of_entry
    }
    patterns = {
        key: re.compile(
            "|".join(r"(?<!\w)" + re.escape(word.strip()) + r"(?!\w)" for word in words), re.I
        )
        for key, words in words_of.items()
        if words
    }
    for key, entry in keys_of_entry:
        for other, pattern in patterns.items():
            if other != key and pattern.search(entry.content):
                by_key[key].edges.append((other, NAMES))


ALPHABET = "aAbBéÉ1_ \t\n.'-()"
name_word = st.sampled_from(
    "fairy|Fairy|WELL|well|Old|old  harbour|Old Harbour|(tower)|Mr.|y'lhara|Y'LHARA's|moon-lit"
    "|_x_|ab|é1| well |...".split("|")
) | st.text(ALPHABET, max_size=6)
a_name = st.lists(name_word, max_size=3).map(" ".join)
a_content = st.lists(
    name_word | st.sampled_from([" ", "\n", ".", "-", "(", ")", "'", "x", "_", "  "]), max_size=14
).map("".join)
a_book = st.lists(
    st.tuples(a_name, st.lists(a_name, max_size=3), a_content), min_size=1, max_size=8
).map(
    lambda rows: [
        entry(name, keys, content, where=str(n)) for n, (name, keys, content) in enumerate(rows)
    ]
)


@given(a_book)
def test_it_proposes_the_edges_one_pattern_per_entry_proposed(book):
    fragments = fragments_of(book)
    keys_of_entry = [(fragment.key, e) for fragment, e in zip(fragments, book, strict=True)]
    by_key = {key: LoreFragment(key) for key, _ in keys_of_entry}
    mentions_one_pattern_each(keys_of_entry, by_key)

    assert [f.edges for f in fragments] == [
        list(dict.fromkeys(by_key[f.key].edges)) for f in fragments
    ]


def test_it_names_at_most_so_many_entries_the_first_in_the_file():
    others = [entry(f"Place {n}", [f"place{n}"], "", where=str(n)) for n in range(MENTIONS_MAX + 9)]
    every = " ".join(f"PLACE{n}" for n in reversed(range(MENTIONS_MAX + 9)))
    fragments = fragments_of([*others, entry("Atlas", [], every, where="atlas")])

    assert fragments[-1].edges == [(f"place-{n}", NAMES) for n in range(MENTIONS_MAX)]
