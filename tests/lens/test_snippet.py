"""The passages lens.snippet makes, held to what SQLite's FTS5 makes of the same text."""

import importlib
import sqlite3

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from lens.search import fts5_expression, query_terms
from lens.snippet import is_plain, snippet, tokens

pytestmark = pytest.mark.store_free

TOKENIZER = importlib.import_module("lens.migrations.0001_search_indexes").TOKENIZER

# Words the Porter steps treat differently (every suffix of each step, double letters, a y
# after a vowel or a consonant), accented ones, and some the tokenizer cuts in two.
WORDS = [
    "caresses", "ponies", "ties", "caress", "cats", "feed", "agreed", "plastered", "bled",
    "motoring", "sing", "conflated", "troubled", "sized", "hopping", "tanned", "falling",
    "hissing", "fizzed", "failing", "filing", "happy", "sky", "relational", "conditional",
    "rational", "valenci", "hesitanci", "digitizer", "conformabli", "radicalli", "differentli",
    "vileli", "analogousli", "vietnamization", "predication", "operator", "feudalism",
    "decisiveness", "hopefulness", "callousness", "formaliti", "sensitiviti", "sensibiliti",
    "triplicate", "formative", "formalize", "electriciti", "electrical", "hopeful",
    "goodness", "revival", "allowance", "inference", "airliner", "gyroscopic", "adjustable",
    "defensible", "irritant", "replacement", "adjustment", "dependent", "adoption",
    "homologou", "communism", "activate", "angulariti", "homologous", "effective",
    "bowdlerize", "probate", "rate", "cease", "controll", "roll", "generalizations",
    "oscillators", "eed", "ing", "yes", "by", "ay", "a", "I", "42", "3rd", "Puppies",
    "NAMED", "café", "Café", "naïve", "über", "straße", "mañana", "résumés", "øre", "ætat",
    "don’t", "half—way", "snake_case", "x2",
]  # fmt: skip
SEPARATORS = [
    " ", " ", " ", "  ", ", ", ". ", ": ", ".", ":", "\n", "\n\n", "\t", " - ", "! ", "? ",
    "<luna>", "</luna> ", "<say>", "</say>", " (", ") ", "…", " “", "” ", "’s ", " — ", "\xa0",
]  # fmt: skip
EMOJI_AND_NEWER = ["🙂", "🥰", "中文", "µ", "ǿ", "e\u0301"]


@pytest.fixture(scope="module")
def fts5():
    """An in-memory FTS5 table cut as the event index is: the text and another column."""
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(content, other, tokenize='{TOKENIZER}')")
    db.execute("CREATE VIRTUAL TABLE terms USING fts5vocab(t, instance)")
    yield db
    db.close()


def fts5_terms(db, text: str) -> list[str]:
    db.execute("DELETE FROM t")
    db.execute("INSERT INTO t(rowid, content, other) VALUES (1, ?, '')", [text])
    return [term for (term,) in db.execute("SELECT term FROM terms ORDER BY offset")]


def fts5_snippet(db, text: str, other: str, words: list[str]) -> str | None:
    db.execute("DELETE FROM t")
    db.execute("INSERT INTO t(rowid, content, other) VALUES (1, ?, ?)", [text, other])
    row = db.execute(
        "SELECT snippet(t, 0, '[', ']', '…', 24) FROM t WHERE t MATCH ?",
        [fts5_expression(words)],
    ).fetchone()
    return row and row[0]


def as_text(stem: str) -> str:
    """A stem of lens.snippet (one character a UTF-8 byte) as the text fts5vocab gives."""
    return stem.encode("latin-1").decode()


def test_it_stems_every_word_as_the_index_does(fts5):
    for word in WORDS:
        assert [as_text(stem) for stem in tokens(word)] == fts5_terms(fts5, word), word


@given(st.text(alphabet="abcdeilmnorstuyzAEIOUY éüñßç", max_size=40))
@settings(max_examples=300)
def test_it_cuts_and_stems_any_plain_text_as_the_index_does(fts5, text):
    assert [as_text(stem) for stem in tokens(text)] == fts5_terms(fts5, text)


texts = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), max_size=90)


@given(
    pieces=texts,
    lead=st.sampled_from(["", " ", "<claude><say>", ". "]),
    question=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
    elsewhere=st.booleans(),
)
@settings(max_examples=400)
def test_it_makes_the_passage_fts5_makes(fts5, pieces, lead, question, elsewhere):
    text = lead + "".join(word + separator for word, separator in pieces)
    words = query_terms(" ".join(question))
    # Also rows that match in another column only: their passage has no marks.
    expected = fts5_snippet(fts5, text, " ".join(words) if elsewhere else "", words)
    assume(expected is not None)
    assert snippet(text, words, start="[", end="]", ellipsis="…", size=24) == expected


@given(pieces=texts, odd=st.sampled_from(EMOJI_AND_NEWER))
def test_it_leaves_a_text_it_cannot_cut_alike_to_fts5(pieces, odd):
    text = odd.join(word + separator for word, separator in pieces) + odd
    assert not is_plain(text)
    assert snippet(text, ["puppy"], start="[", end="]", ellipsis="…", size=24) is None
    assert snippet("a puppy", [odd], start="[", end="]", ellipsis="…", size=24) is None
