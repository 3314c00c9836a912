import re
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from gem.models import KEY_VALIDATOR
from gem.waking import TRIGGERS_MAX, name_words, triggers_problem
from transfer.bundle import LoreEntry
from transfer.lore import (
    KEY_PATTERN,
    MENTION_MIN_CHARS,
    MENTIONS_MAX,
    NAMES,
    RECOGNITION_CHARS,
    FragmentData,
    LoreFragment,
    entries_left_out,
    entries_of,
    fragments_of,
    key_of,
    keys_indexed,
    keys_line_split,
    macros_replaced,
)


def entry(
    name="", keys=(), content="", constant=False, enabled=True, secondary=(), where="0", note=""
):
    return LoreEntry(
        name=name,
        keys=tuple(keys),
        secondary_keys=tuple(secondary),
        content=content,
        constant=constant,
        enabled=enabled,
        where=where,
        note=note,
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


def test_an_entry_is_keyed_by_its_first_key_and_its_comment_is_only_a_note():
    (fragment,) = fragments_of(
        [entry(keys=["Old Grey", "the seal"], content="A grey seal.", note="disabled-entry")]
    )
    assert fragment.key == "old-grey"
    assert fragment.notes == ["0: its comment: “disabled-entry”"]
    assert "disabled" not in fragment.triggers


def test_without_keys_an_entry_is_keyed_by_its_name_then_its_comment():
    named, noted, bare = fragments_of(
        [
            entry("Maren", [], "Runs the ferry.", note="ferry woman", where="a"),
            entry("", [], "The old quay.", note="Old Quay", where="b"),
            entry("", ["/sea(side)?/i"], "Salt.", where="c"),
        ]
    )
    assert (named.key, noted.key, bare.key) == ("maren", "old-quay", "entry-c")
    assert bare.notes == ["c: the key “/sea(side)?/i” is a regular expression, not a trigger here"]


def test_its_keys_are_its_triggers_and_its_secondary_keys_are_not():
    (fragment,) = fragments_of(
        [
            entry(
                keys=["Lighthouse", "the light", "LIGHTHOUSE", "{{char}}'s tower"],
                secondary=["storm"],
                content="The lighthouse on the point.",
            )
        ],
        names={"char": "Sera"},
    )
    assert fragment.key == "lighthouse"
    assert fragment.triggers == ["the light", "Sera's tower"]
    assert fragment.tiers == {"recognition": "The lighthouse on the point."}
    assert triggers_problem(fragment.triggers) is None


def test_a_key_too_long_to_wake_anything_is_said_and_left_out():
    sentence = " ".join(["word"] * 20)
    (fragment,) = fragments_of([entry(keys=["moon", sentence], content="Pale.")])
    assert fragment.triggers == []
    assert "too long" in fragment.notes[0]


def test_a_fragment_has_at_most_so_many_triggers():
    keys = ["hub", *(f"spoke {n}" for n in range(TRIGGERS_MAX + 5))]
    (fragment,) = fragments_of([entry(keys=keys, content="A wheel.")])
    assert len(fragment.triggers) == TRIGGERS_MAX
    assert triggers_problem(fragment.triggers) is None
    assert f"“spoke {TRIGGERS_MAX}” and the keys after it are not triggers" in fragment.notes[0]


def test_a_constant_entry_is_recognition_and_ambient_and_named_for_the_ambient_prose():
    (fragment,) = fragments_of(
        [entry("The Well", ["well", "old well"], "A deep well.", constant=True)]
    )
    assert fragment.key == "well"
    assert fragment.constant
    assert fragment.tiers == {"recognition": "A deep well.", "ambient": "A deep well."}
    assert fragment.triggers == ["old well"]


def test_a_long_constant_entry_is_ambient_by_its_first_paragraph():
    content = "Always so.\n\nAnd more besides, at length."
    (fragment,) = fragments_of([entry(keys=["rule"], content=content, constant=True)])
    assert fragment.tiers == {
        "recognition": "Always so.",
        "ambient": "Always so.",
        "inventory": content,
    }


def test_a_disabled_entry_is_left_out():
    disabled = entry("well", ["well"], "A deep well.", constant=True, enabled=False, where="1")
    fragments = fragments_of([disabled, entry(keys=["moon"], content="Pale.", where="2")])
    assert [f.key for f in fragments] == ["moon"]
    assert entries_left_out([disabled, entry(keys=["moon"])]) == [disabled]


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
            entry(keys=["fairy"], content="Lives by the Well.", where="a"),
            entry(keys=["Fairy", "sprite"], content="Another fairy.", where="b"),
            entry(keys=["well"], content="Deep and old.", where="c"),
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


def test_triggers_travel_with_the_exported_fragment_unless_the_gem_would_refuse_them():
    fragments = [FragmentData("fairy", "", "A light.", "", triggers=("wisp", "Fairy"))]
    (entry,) = entries_of(fragments)
    assert [f.triggers for f in fragments_of([entry])] == [["wisp", "Fairy"]]

    twins = replace(entry, fragment={**entry.fragment, "triggers": ["wisp", "WISP"]})
    (read,) = fragments_of([twins])
    assert (read.triggers, read.tiers) == (["wisp"], {"recognition": "A light."})


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

    assert fragments[-1].edges == [(f"place{n}", NAMES) for n in range(MENTIONS_MAX)]


# --- Folding into the Gem's fragments ---------------------------------------------------------


def test_an_entry_of_an_existing_key_in_any_case_folds_into_it():
    existing = keys_indexed(["Biscuit", "moon"])
    (fragment,) = fragments_of(
        [entry(keys=["BISCUIT", "the cat"], content="A ginger cat.", where="7")],
        existing=existing,
    )
    assert (fragment.key, fragment.fold) == ("Biscuit", True)
    assert fragment.tiers == {"recognition": "A ginger cat."}
    assert fragment.triggers == ["the cat"]
    assert fragment.notes == ["7: folded into the existing “Biscuit”: “BISCUIT” is it"]


def test_biscuit_the_cat_beside_biscuit_folds_into_it():
    (fragment,) = fragments_of(
        [entry(keys=["Biscuit the cat", "biscuit"], content="Ginger.", note="biscuit-the-cat")],
        existing=keys_indexed(["biscuit"]),
    )
    assert (fragment.key, fragment.fold) == ("biscuit", True)
    assert fragment.triggers == ["Biscuit the cat"]
    assert "“Biscuit the cat” begins with its name and answers to it" in fragment.notes[1]


def test_an_entry_that_only_begins_with_an_existing_key_is_a_fragment_of_its_own():
    fragments = fragments_of(
        [
            entry(keys=["Tower keeper", "keeper"], content="Keeps the tower.", where="a"),
            entry(keys=["cat", "biscuit"], content="Any cat.", where="b"),
        ],
        existing=keys_indexed(["tower", "biscuit"]),
    )
    assert [(f.key, f.fold) for f in fragments] == [("tower-keeper", False), ("cat", False)]


def test_entries_folded_into_one_fragment_add_up_and_name_no_one_but_others():
    fragments = fragments_of(
        [
            entry(keys=["biscuit"], content="A cat; see the Biscuit tin.", where="a"),
            entry(keys=["Biscuit tin", "biscuit"], content="Biscuit lives in it.", where="b"),
            entry(keys=["moon"], content="Biscuit watches it.", where="c"),
        ],
        existing=keys_indexed(["biscuit"]),
    )
    assert [f.key for f in fragments] == ["biscuit", "moon"]
    assert fragments[0].tiers == {
        "recognition": "A cat; see the Biscuit tin.\n\nBiscuit lives in it."
    }
    assert fragments[0].triggers == ["Biscuit tin"]
    assert fragments[0].edges == []
    assert fragments[1].edges == [("biscuit", NAMES)]


def test_a_numbered_key_is_never_an_existing_one():
    fragments = fragments_of(
        [entry(keys=["fairy"], where="a"), entry(keys=["fairy"], where="b")],
        existing=keys_indexed(["fairy-2"]),
    )
    assert [f.key for f in fragments] == ["fairy", "fairy-3"]


def fold_pair_by_pair(title_key, keys, existing_keys):
    """The fold's rule, each existing key compared with the entry in turn."""
    words = name_words(title_key)
    for existing in existing_keys:
        if name_words(existing) == words:
            return existing
    best = None
    for existing in existing_keys:
        said = name_words(existing)
        if (
            len(said) < len(words)
            and words[: len(said)] == said
            and any(name_words(k) == said for k in keys)
            and (best is None or len(said) > len(name_words(best)))
        ):
            best = existing
    return best


a_word = st.sampled_from(["biscuit", "Biscuit", "the", "cat", "tower", "keeper", "old", "grey"])
a_key = st.lists(a_word, min_size=1, max_size=3).map(" ".join)


@given(st.lists(a_key, min_size=1, max_size=4), st.lists(a_key.map(key_of), max_size=5))
def test_it_folds_through_its_index_as_pair_by_pair_would(keys, gem_keys):
    gem_keys = list(keys_indexed(gem_keys).values())
    (fragment,) = fragments_of([entry(keys=keys, content="Text.")], existing=keys_indexed(gem_keys))
    into = fold_pair_by_pair(key_of(keys[0]), keys, gem_keys)
    assert (fragment.key if fragment.fold else None) == into
