"""Reading the hybrid output, capping and de-duplicating suggestions (``mirror.output``)."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirror.output import (
    HEADING_WORDS,
    SUGGESTION_TYPES,
    Suggestion,
    output_parse,
    suggestions_chosen,
)

pytestmark = pytest.mark.store_free

WORD = re.compile(r"[^\W_]+")
LIST_MARKER = re.compile(r"^\s*(?:[-*•]|\d{1,3}[.)])\s+", re.MULTILINE)
MARKERS = {w for h in HEADING_WORDS for w in h.split()} | {"none", "nothing"}


def words(text: str) -> set[str]:
    return set(WORD.findall(text.casefold()))


def test_it_reads_the_shape_notes_and_suggestions():
    output = output_parse(
        "## Shape\nQuiet, then warm.\n\n## Notes\n- tea at nine\n- the dentist went well\n"
        "## Suggestions\n- pin: no calls after nine\n- desc (hasuki): grey crewneck\n"
        "- [thought] she seemed lighter\n- <pattern>tea when anxious</pattern>\n- none"
    )
    assert output.shape == "Quiet, then warm."
    assert output.notes == ("- tea at nine", "- the dentist went well")
    assert output.suggestions == (
        Suggestion("pin", "no calls after nine"),
        Suggestion("desc", "grey crewneck", "hasuki"),
        Suggestion("thought", "she seemed lighter"),
        Suggestion("pattern", "tea when anxious"),
    )
    assert output.content == "Quiet, then warm.\n- tea at nine\n- the dentist went well"


def test_it_reads_bold_or_colon_headings_and_keeps_what_it_does_not_understand():
    output = output_parse(
        "A lead line.\n**Notes:**\nsomething\n### Tag suggestions\n"
        "- mood: unknown type\n- <desc>room: fairy lights</desc>"
    )
    assert output.shape == "A lead line."
    assert output.notes == ("something", "- mood: unknown type")
    assert output.suggestions == (Suggestion("desc", "fairy lights", "room"),)


def test_it_puts_text_before_the_headings_into_the_notes_when_a_shape_follows():
    output = output_parse("preamble\n## Shape\nthe shape")
    assert (output.shape, output.notes) == ("the shape", ("preamble",))


@given(st.text())
def test_it_never_raises_and_never_loses_a_word(text):
    output = output_parse(text)
    kept = words(output.content)
    for s in output.suggestions:
        kept |= words(f"{s.type} {s.subject} {s.content}")
    assert words(LIST_MARKER.sub(" ", text)) - MARKERS <= kept


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["-", "*", "1.", ""]),
            st.sampled_from(SUGGESTION_TYPES),
            st.text(alphabet="abc xyz:()", min_size=1, max_size=30),
        ),
        max_size=6,
    )
)
def test_it_never_loses_a_word_of_a_suggestions_section(lines):
    text = "## Suggestions\n" + "\n".join(f"{m} {t}: {body}" for m, t, body in lines)
    output = output_parse(text)
    kept = words(output.content)
    for s in output.suggestions:
        kept |= words(f"{s.type} {s.subject} {s.content}")
    assert words(LIST_MARKER.sub(" ", text)) - MARKERS <= kept


def test_it_caps_suggestions_with_pins_first():
    offered = [Suggestion("thought", "a"), Suggestion("pin", "b"), Suggestion("desc", "c")]
    chosen = suggestions_chosen(offered, active=[], pending=[], cap=2)
    assert chosen == [Suggestion("pin", "b"), Suggestion("thought", "a")]
    assert suggestions_chosen(offered, active=[], pending=[], cap=0) == []


def test_it_drops_near_duplicates_of_memory_the_queue_and_each_other():
    offered = [
        Suggestion("pin", "tea without sugar always"),
        Suggestion("pin", "no calls after nine"),
        Suggestion("pin", "No calls after nine!"),
        Suggestion("desc", "roses by the fence", "garden"),
    ]
    chosen = suggestions_chosen(
        offered, active=["Tea without sugar, always"], pending=["roses along the fence"], cap=5
    )
    assert chosen == [Suggestion("pin", "no calls after nine")]
