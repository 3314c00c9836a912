"""The tag language: pure functions, no database."""

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from events import parse as parse_module
from events.parse import (
    DISPLAY_TAGS,
    KNOWLEDGE_TAGS,
    MARKUP,
    KnowledgeItem,
    ParsedMessage,
    Search,
    Segment,
    parse,
)
from gem.recalled import Recall

pytestmark = pytest.mark.store_free

IDENTITIES = ("hasuki", "renki", "luna", "chloe", "strah", "claude", "y'lhara")


def non_space(*texts: str) -> Counter:
    return Counter(char for text in texts for char in text if not char.isspace())


def assert_no_text_lost(text: str, parsed: ParsedMessage) -> None:
    """Every character of the input is accounted for, exactly once.

    The spans cut the input into consecutive pieces; the derived fields (segments, knowledge
    bodies, processing, consumed markup) hold every non-whitespace character of the input,
    no more and no fewer; each item's text comes from its own body.
    """
    assert parsed.raw == text
    assert "".join(span.text for span in parsed.spans) == text
    assert all(span.text for span in parsed.spans)
    markup = [span.text for span in parsed.spans if span.role == MARKUP]
    assert non_space(
        *(segment.text for segment in parsed.segments),
        *(item.raw for item in parsed.knowledge),
        parsed.processing,
        *markup,
    ) == non_space(text)
    for item in parsed.knowledge:
        assert not non_space(item.subject, item.text) - non_space(item.raw)
    for segment in parsed.segments:
        assert segment.text == segment.text.strip() and segment.text
    assert parsed.processing == parsed.processing.strip()


def parsed(text: str, **kwargs) -> ParsedMessage:
    result = parse(text, identities=IDENTITIES, **kwargs)
    assert_no_text_lost(text, result)
    return result


# --- display tags --------------------------------------------------------------------------------


def test_it_reads_display_tags_in_order():
    result = parsed("<narrate>Rain.</narrate> <say>Hello.</say> <do>waves</do> <say>Again.</say>")

    assert result.segments == (
        Segment("narrate", "Rain."),
        Segment("say", "Hello."),
        Segment("do", "waves"),
        Segment("say", "Again."),
    )
    assert result.display_text == "Rain.\nHello.\nwaves\nAgain."
    assert not result.is_secret
    assert result.processing == ""


def test_it_keeps_text_outside_display_tags_as_processing():
    result = parsed("She seems tired.\n<say>Hey.</say>\nKeep it light.")

    assert result.segments == (Segment("say", "Hey."),)
    assert result.processing == "She seems tired.\n\nKeep it light."


def test_it_shows_nothing_for_a_secret_reply():
    result = parsed("Just thinking. <thought>she is quiet today</thought>")

    assert result.is_secret
    assert result.segments == ()
    assert result.display_text == ""
    assert result.processing == "Just thinking."
    assert result.knowledge == (
        KnowledgeItem("thought", "she is quiet today", "she is quiet today"),
    )


def test_it_drops_a_segment_that_is_only_whitespace():
    result = parsed("<say>  \n </say>")

    assert result.is_secret
    assert result.tags == {"say"}


def test_it_tidies_whitespace_in_segments():
    result = parsed("<say>  one   two\t three \n\n\n\n four  </say>")

    assert result.segments == (Segment("say", "one two three\n\nfour"),)


def test_it_keeps_display_text_after_a_removed_knowledge_tag_readable():
    result = parsed("<say>I am <feeling>proud</feeling> here.</say>")

    assert result.segments == (Segment("say", "I am here."),)


# --- identity ------------------------------------------------------------------------------------


def test_it_takes_an_identity_wrapper():
    result = parsed("<luna><say>hi</say> thinking</luna> after")

    assert result.identity == "luna"
    assert result.segments == (Segment("say", "hi"),)
    assert result.processing == "thinking after"
    assert "luna" in result.tags


def test_it_takes_a_leading_bare_identity():
    result = parsed("  \n<chloe> <say>morning</say>")

    assert result.identity == "chloe"
    assert result.segments == (Segment("say", "morning"),)
    assert result.processing == ""


def test_it_matches_identity_case_insensitively_and_returns_the_given_name():
    assert parsed("<LUNA><say>x</say></Luna>").identity == "luna"
    assert parse("<luna>hi", identities=["Luna"]).identity == "Luna"


def test_it_takes_an_identity_with_an_apostrophe():
    assert parsed("<y'lhara><say>x</say></y'lhara>").identity == "y'lhara"
    assert parsed("<Y’lhara><say>x</say>").identity == "y'lhara"


def test_it_does_not_take_an_unknown_identity():
    result = parsed("<mira><say>x</say></mira>")

    assert result.identity is None
    assert result.processing == "<mira> </mira>"
    assert "mira" not in result.tags


def test_it_takes_no_identity_when_none_are_given():
    result = parse("<luna><say>x</say>")

    assert result.identity is None
    assert result.processing == "<luna>"


def test_it_takes_an_identity_only_in_leading_position():
    result = parsed("hello <luna><say>x</say>")

    assert result.identity is None
    assert result.processing == "hello <luna>"


def test_it_takes_one_identity_per_message():
    result = parsed("<luna><claude><say>x</say></claude></luna>")

    assert result.identity == "luna"
    assert result.processing == "<claude> </claude>"
    assert "claude" not in result.tags


def test_it_does_not_take_an_identity_named_like_a_tag():
    result = parse("<say>x</say>", identities=["say"])

    assert result.identity is None
    assert result.segments == (Segment("say", "x"),)


def test_it_ignores_identities_that_cannot_be_tags():
    result = parse("<luna>x", identities=["", "two words", None, "luna"])

    assert result.identity == "luna"


# --- knowledge tags ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KNOWLEDGE_TAGS)
def test_it_extracts_every_knowledge_tag(kind):
    result = parsed(f"<{kind}>a small thing</{kind}>")

    assert [(item.kind, item.text) for item in result.knowledge] == [(kind, "a small thing")]
    assert result.tags == {kind}
    assert result.is_secret


def test_it_keeps_knowledge_in_order():
    result = parsed("<thought>one</thought><say>x <feeling>two</feeling></say><pin>three</pin>")

    assert [item.text for item in result.knowledge] == ["one", "two", "three"]


def test_it_splits_a_desc_subject():
    result = parsed("<desc>hasuki : grey crewneck, tired eyes: soft</desc>")

    assert result.knowledge == (
        KnowledgeItem(
            "desc",
            "grey crewneck, tired eyes: soft",
            "hasuki : grey crewneck, tired eyes: soft",
            subject="hasuki",
        ),
    )


def test_it_leaves_a_desc_without_subject_whole():
    (item,) = parsed("<desc>a blurry photo</desc>").knowledge
    assert (item.subject, item.text) == ("", "a blurry photo")

    (item,) = parsed("<desc>first line\nthen: more</desc>").knowledge
    assert (item.subject, item.text) == ("", "first line\nthen: more")


@pytest.mark.parametrize(
    ("word", "action"),
    [
        ("done", "resolve"),
        ("complete", "resolve"),
        ("finished", "resolve"),
        ("cancel", "cancel"),
        ("skip", "cancel"),
        ("drop", "cancel"),
        ("abandon", "cancel"),
    ],
)
def test_it_reads_each_plan_lifecycle_word(word, action):
    (item,) = parsed(f"<plan>{word}: exercise routine</plan>").knowledge

    assert (item.kind, item.lifecycle, item.text) == ("plan", action, "exercise routine")


@pytest.mark.parametrize("word", ["drop", "release", "clear", "remove"])
def test_it_reads_each_pin_lifecycle_word(word):
    (item,) = parsed(f"<pin>{word}: sugars in tea</pin>").knowledge

    assert (item.kind, item.lifecycle, item.text) == ("pin", "drop", "sugars in tea")


def test_it_reads_lifecycle_words_case_and_space_tolerantly():
    (item,) = parsed("<plan>  DONE  :exercise</plan>").knowledge

    assert (item.lifecycle, item.text) == ("resolve", "exercise")


def test_it_keeps_a_plan_or_pin_without_a_lifecycle_word_as_new():
    plan, pin, other = parsed(
        "<plan>note: call mum friday at 5pm</plan><pin>done: no sugar</pin><plan>done soon</plan>"
    ).knowledge

    assert (plan.lifecycle, plan.text) == (None, "note: call mum friday at 5pm")
    assert (pin.lifecycle, pin.text) == (None, "done: no sugar")
    assert (other.lifecycle, other.text) == (None, "done soon")


def test_it_keeps_a_lifecycle_action_with_no_text():
    (item,) = parsed("<plan>done:</plan>").knowledge

    assert (item.lifecycle, item.text) == ("resolve", "")


def test_it_drops_a_knowledge_tag_that_is_only_whitespace():
    result = parsed("<feeling> </feeling>")

    assert result.knowledge == ()
    assert result.tags == {"feeling"}


def test_it_extracts_knowledge_nested_in_a_display_tag():
    result = parsed("<say>hi <feeling>glad</feeling></say>")

    assert result.segments == (Segment("say", "hi"),)
    assert result.knowledge == (KnowledgeItem("feeling", "glad", "glad"),)
    assert "glad" not in result.display_text
    assert result.tags == {"say", "feeling"}


def test_it_shows_knowledge_that_does_not_close_inside_its_display_tag():
    result = parsed("<say>hi <feeling>glad</say></feeling>")

    assert result.segments == (Segment("say", "hi glad"),)
    assert result.knowledge == ()
    assert result.processing == "<feeling> </feeling>"


def test_it_strips_tags_inside_a_knowledge_tag_into_processing():
    result = parsed("<thought>so <feeling>tired</feeling> <say>now</say></thought>")

    assert result.knowledge == (KnowledgeItem("thought", "so tired now", "so tired now"),)
    assert result.segments == ()
    assert result.processing == "<feeling> </feeling> <say> </say>"


# --- display tags do not nest ---------------------------------------------------------------------


def test_it_keeps_display_tags_inside_display_tags_as_stripped_markup():
    result = parsed("<say>a <do>b</do> c</say>")

    assert result.segments == (Segment("say", "a b c"),)
    assert result.processing == "<do> </do>"
    assert result.tags == {"say"}


def test_it_ends_a_display_tag_at_its_first_closing_tag():
    result = parsed("<say>a <say>b</say> c</say>")

    assert result.segments == (Segment("say", "a b"),)
    assert result.processing == "<say> c</say>"


# --- malformed and unknown markup -----------------------------------------------------------------


def test_it_treats_an_unclosed_display_tag_as_processing():
    result = parsed("<say>hello <do>waves</do>")

    assert result.segments == (Segment("do", "waves"),)
    assert result.processing == "<say>hello"
    assert result.tags == {"do"}


def test_it_treats_an_unknown_tag_as_processing():
    result = parsed("<unknown>x</unknown> <say>y</say>")

    assert result.processing == "<unknown>x</unknown>"
    assert result.segments == (Segment("say", "y"),)
    assert result.tags == {"say"}


def test_it_strips_an_unknown_tag_out_of_a_display_tag_and_keeps_its_text():
    result = parsed("<say>very <em>bold</em> move</say>")

    assert result.segments == (Segment("say", "very bold move"),)
    assert result.processing == "<em> </em>"


def test_it_treats_a_stray_closing_tag_as_processing():
    result = parsed("</do> <say>x</say> </say>")

    assert result.processing == "</do> </say>"
    assert result.segments == (Segment("say", "x"),)


def test_it_treats_a_tag_without_closing_bracket_as_processing():
    result = parsed("<say hello")

    assert result.segments == ()
    assert result.processing == "<say hello"


def test_it_treats_a_tag_with_attributes_as_unknown_markup():
    result = parsed('<say foo>hi</say> <say class="x">yo</say>')

    assert result.segments == ()
    assert result.processing == '<say foo>hi</say> <say class="x">yo</say>'


def test_it_treats_odd_brackets_as_text():
    result = parsed("<say>I <3 you, a < b > c, <say/> < say></say>")

    assert result.segments == (Segment("say", "I <3 you, a < b > c, <say/> < say>"),)


def test_it_reads_tag_names_case_insensitively():
    result = parsed("<SAY>hi</say> <Feeling>calm</FEELING> <Plan>Done: walk</PLAN>")

    assert result.segments == (Segment("say", "hi"),)
    assert [(i.kind, i.text, i.lifecycle) for i in result.knowledge] == [
        ("feeling", "calm", None),
        ("plan", "walk", "resolve"),
    ]
    assert result.tags == {"say", "feeling", "plan"}


def test_it_handles_unicode():
    result = parsed("<say>こんにちは 🌙 café</say><desc>Ёлка: зелёная</desc>思考")

    assert result.segments == (Segment("say", "こんにちは 🌙 café"),)
    assert result.knowledge[0].subject == "Ёлка"
    assert result.processing == "思考"


def test_it_handles_the_empty_string():
    result = parsed("")

    assert result == ParsedMessage(raw="")
    assert result.is_secret
    assert result.display_text == ""


def test_it_keeps_carriage_returns_in_raw_and_tidies_them_elsewhere():
    result = parsed("<say>a\r\nb</say>\r\nthink")

    assert result.raw == "<say>a\r\nb</say>\r\nthink"
    assert result.segments == (Segment("say", "a\nb"),)
    assert result.processing == "think"


def test_it_records_the_tags_seen():
    result = parsed(
        "<luna><say>x</say><do>y</do><narrate>z</narrate><thought>t</thought></luna><bogus>"
    )

    assert result.tags == {"luna", *DISPLAY_TAGS, "thought"}


def test_it_accepts_input_that_is_not_a_string():
    assert parse(None).raw == ""
    assert parse(b"<say>hi</say>").segments == (Segment("say", "hi"),)


def test_it_falls_back_to_processing_when_the_parser_fails(monkeypatch):
    def broken(self):
        raise RuntimeError("bug")

    monkeypatch.setattr(parse_module._Parser, "run", broken)
    result = parse("<say>hi</say> there")

    assert result.processing == "<say>hi</say> there"
    assert result.is_secret
    assert_no_text_lost("<say>hi</say> there", result)


# --- partial text (streaming) ---------------------------------------------------------------------


def test_it_shows_the_growing_segment_of_partial_text():
    result = parsed("<say>Hello the", partial=True)

    assert result.segments == (Segment("say", "Hello the"),)


def test_it_hides_a_tag_cut_off_at_the_end_of_partial_text():
    for text in ("<say>Hello <", "<say>Hello </sa", "<say>Hello <feel"):
        result = parsed(text, partial=True)
        assert result.segments == (Segment("say", "Hello"),)


def test_it_hides_an_unfinished_knowledge_tag_in_partial_text():
    result = parsed("<say>Hi <feeling>war", partial=True)

    assert result.segments == (Segment("say", "Hi"),)
    assert result.knowledge == (KnowledgeItem("feeling", "war", "war"),)


def test_it_reads_closed_parts_of_partial_text_as_if_finished():
    text = "<say>Hi <feeling>glad</say> <do>wav"

    assert parsed(text, partial=True).segments == (Segment("say", "Hi glad"), Segment("do", "wav"))


def test_it_does_not_show_unclosed_tags_of_finished_text():
    assert parsed("<say>Hello the").segments == ()


# --- recall and search ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("recall(fairy)", Recall("fairy", deep=True)),
        ('recall("fairy")', Recall("fairy", deep=True)),
        ("recall('fairy')", Recall("fairy", deep=True)),
        ("recall(fairy, deep=True)", Recall("fairy", deep=True)),
        ("recall(fairy, deep=False)", Recall("fairy", deep=False)),
        ('recall( "fairy" ,  deep = False )', Recall("fairy", deep=False)),
        ("recall(\n  fairy\n)", Recall("fairy", deep=True)),
        ("Recall(fairy, deep=false)", Recall("fairy", deep=False)),
        ("recall(y'lhara)", Recall("y'lhara", deep=True)),
        ("recall('y'lhara')", Recall("y'lhara", deep=True)),
        ('recall("  blue shorts ")', Recall("blue shorts", deep=True)),
    ],
)
def test_it_reads_every_recall_form(text, expected):
    result = parsed(f"Let me check. {text} <say>one moment</say>")

    assert result.recalls == (expected,)
    assert "recall(" in result.processing.casefold()  # the call stays where it stands
    assert "recall" not in result.tags


def test_it_keeps_recall_keys_exact():
    result = parsed("recall(Fairy) recall(fairy) recall(FAIRY_dress)")

    assert [recall.key for recall in result.recalls] == ["Fairy", "fairy", "FAIRY_dress"]


def test_it_deduplicates_recalls_in_order_keeping_the_deepest():
    result = parsed("recall(a, deep=False) recall(b, deep=False) recall(a) recall(b, deep=False)")

    assert result.recalls == (Recall("a", deep=True), Recall("b", deep=False))


def test_it_does_not_read_prose_as_a_recall():
    result = parsed('I recall (vaguely) it. unrecall(x) recall() recall("") recall(a, deep=maybe)')

    assert result.recalls == ()


def test_it_finds_recalls_wherever_they_stand():
    result = parsed("<thought>recall(jirai)</thought><say>recall(fairy)</say>")

    assert [recall.key for recall in result.recalls] == ["jirai", "fairy"]


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ('search("fairy dress")', "fairy dress"),
        ("search('fairy')", "fairy"),
        ("search(grey   crewneck )", "grey crewneck"),
    ],
)
def test_it_reads_searches(text, query):
    assert parsed(f"hmm {text}").searches == (Search(query),)


def test_it_deduplicates_searches_in_order():
    result = parsed('search(b) search("a") search(b) research(c) search ( d )')

    assert result.searches == (Search("b"), Search("a"))


# --- properties ----------------------------------------------------------------------------------

FRAGMENTS = [
    *(f"<{name}>" for name in (*DISPLAY_TAGS, *KNOWLEDGE_TAGS, "luna", "y'lhara", "x")),
    *(f"</{name}>" for name in (*DISPLAY_TAGS, *KNOWLEDGE_TAGS, "luna", "x")),
    "<SAY>",
    "</Say>",
    "<say foo>",
    "<say",
    "<",
    ">",
    "</",
    "/>",
    "recall(",
    "search(",
    ")",
    ",",
    "deep=True",
    "deep=False",
    '"',
    "'",
    "’",
    ":",
    "done:",
    "drop:",
    "subject:",
    " ",
    "\n",
    "\r\n",
    "fairy",
    "é",
    "🌙",
]
tagged_text = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4)), max_size=40).map(
    "".join
)


@settings(max_examples=300)
@given(text=st.text(), partial=st.booleans())
def test_it_never_raises_or_loses_text_on_any_text(text, partial):
    result = parse_module._parse_strict(text, identities=IDENTITIES, partial=partial)

    assert_no_text_lost(text, result)
    assert parse(text, identities=IDENTITIES, partial=partial) == result


@settings(max_examples=500)
@given(text=tagged_text, partial=st.booleans())
def test_it_never_raises_or_loses_text_on_tagged_text(text, partial):
    result = parse_module._parse_strict(text, identities=IDENTITIES, partial=partial)

    assert_no_text_lost(text, result)
    assert result.is_secret == (result.display_text == "")
    assert result.identity in (None, *IDENTITIES)
    assert all(segment.kind in DISPLAY_TAGS for segment in result.segments)
    assert all(item.kind in KNOWLEDGE_TAGS for item in result.knowledge)
    assert len({recall.key for recall in result.recalls}) == len(result.recalls)
