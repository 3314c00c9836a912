from hypothesis import given
from hypothesis import strategies as st

from gem.models import KEY_VALIDATOR
from transfer.bundle import LoreEntry
from transfer.lore import (
    KEY_PATTERN,
    NAMES,
    RECOGNITION_CHARS,
    FragmentData,
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
