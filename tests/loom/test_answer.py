import pytest
from hypothesis import given
from hypothesis import strategies as st

from loom.answer import AnswerError, Pattern, answer_read

pytestmark = pytest.mark.store_free


def test_it_reads_notes_draft_and_patterns():
    text = (
        "Here is what I found.\n"
        "=== notes ===\n"
        "The pane is blue.\n"
        "\n"
        "=== draft ===\n"
        "\n"
        "# lantern\n"
        "\n"
        "## inventory\n"
        "\n"
        "- blue pane\n"
        "=== Patterns ===\n"
        "- She names lamps after stars.\n"
        "  reason: lantern and star\n"
        "\n"
        "* Another one\n"
    )
    read = answer_read(text, patterns_allowed=True)
    assert read.notes == "Here is what I found.\nThe pane is blue."
    assert read.draft == "# lantern\n\n## inventory\n\n- blue pane"
    assert read.draft_line == 6  # the draft's line 1 is the answer's line 7
    assert read.patterns == [
        Pattern("She names lamps after stars.", "lantern and star"),
        Pattern("Another one"),
    ]


def test_an_empty_draft_section_is_notes_only():
    read = answer_read("=== notes ===\nnothing\n=== draft ===\n", patterns_allowed=False)
    assert (read.notes, read.draft, read.patterns) == ("nothing", "", [])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("just talk", "no “=== draft ===” line"),
        ("=== draft ===\n=== draft ===", "line 2 of the answer: a second “=== draft ===”"),
        ("=== summary ===\n=== draft ===", "line 1 of the answer: “=== summary ===” is not"),
        ("=== draft ===\n=== patterns ===\n- p", "line 2 of the answer: only the Weaver"),
    ],
)
def test_it_refuses_an_answer_without_its_shape(text, message):
    with pytest.raises(AnswerError, match=message):
        answer_read(text, patterns_allowed=False)


def test_it_refuses_a_pattern_that_is_no_list_item():
    with pytest.raises(AnswerError, match="line 4 of the answer: “loose words” is not a pattern"):
        answer_read("=== draft ===\n=== patterns ===\n- fine\nloose words", patterns_allowed=True)


@given(st.text())
def test_any_text_is_read_or_refused_with_an_answer_error(text):
    try:
        read = answer_read(text, patterns_allowed=True)
    except AnswerError:
        return
    assert read.draft in text.replace("\r\n", "\n")
