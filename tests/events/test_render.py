"""What the chat page shows for an event (``events.render``) and the ``inline_markup`` filter."""

import re
from datetime import UTC, datetime

import pytest
from django.template import Context, Template
from hypothesis import given
from hypothesis import strategies as st

from events.parse import MARKUP, parse
from events.render import (
    DisplaySegment,
    Part,
    emphasis_plain,
    identity_colors,
    identity_slug,
    message_display,
    reply_edited,
    side_of,
    user_segments,
)
from heart.templatetags.heart_text import inline_markup

pytestmark = pytest.mark.store_free

SIDES = {
    "luna": "user",
    "hasuki": "user",
    "claude": "companion",
    "y'lhara": "companion",
}
TS = datetime(2026, 3, 1, 12, 30, tzinfo=UTC)


def show(content, actor="luna", **kwargs):
    return message_display(event_id=7, content=content, actor=actor, sides=SIDES, ts=TS, **kwargs)


def kinds(message):
    return [(segment.kind, segment.text) for segment in message.segments]


# --- The companion's messages --------------------------------------------------------------


def test_it_shows_the_companions_display_segments():
    message = show(
        "<claude>thinking first <say>I'm **here**.</say><do>leans in</do>"
        "<feeling>glad</feeling><narrate>The rain stops.</narrate></claude>",
        actor="claude",
    )
    assert message.side == "companion"
    assert message.identity == "claude" and message.identity_slug == "claude"
    assert kinds(message) == [
        ("say", "I'm **here**."),
        ("do", "leans in"),
        ("narrate", "The rain stops."),
    ]
    assert not message.is_secret


def test_it_shows_nothing_for_a_secret_reply():
    message = show("<claude><thought>only thinking</thought> processing</claude>", actor="claude")
    assert message.segments == ()
    assert message.is_secret


def test_it_treats_a_turns_reply_as_the_companions_whatever_the_actor():
    message = show("plain processing text", actor="", is_reply=True)
    assert message.side == "companion" and message.is_secret
    assert side_of("mono", SIDES) == "user"
    assert side_of("y'lhara", SIDES) == "companion"


# --- The person's messages ------------------------------------------------------------------


def test_it_shows_the_persons_plain_text_as_say_without_the_identity_tag():
    message = show("<luna>hello there</luna>")
    assert message.side == "user"
    assert kinds(message) == [("say", "hello there")]


def test_it_keeps_do_and_narrate_and_marks_knowledge_in_the_persons_message():
    message = show(
        "<luna>hi <plan>call the pharmacy</plan> ok <do>waves</do> <narrate>Dusk.</narrate>"
    )
    assert message.segments == (
        DisplaySegment("say", (Part("hi "), Part("call the pharmacy", "plan"), Part(" ok"))),
        DisplaySegment("do", (Part("waves"),)),
        DisplaySegment("narrate", (Part("Dusk."),)),
    )


def test_it_merges_neighbouring_pieces_of_one_kind_but_not_two_tags():
    message = show("<luna><do>wal</do><do>ks </do><say>and</say> talks <pin>tea</pin><pin>!</pin>")
    assert message.segments == (
        DisplaySegment("do", (Part("walks"),)),
        DisplaySegment("say", (Part("and talks "), Part("tea", "pin"), Part("!", "pin"))),
    )
    assert message.segments[1].text_apart == "and talks tea!"


@pytest.mark.parametrize(
    ("content", "read"),
    [
        ("<pin>tea with honey</pin><pin>walks at dusk</pin>", "tea with honey; walks at dusk"),
        ("<plan>tonight</plan>\n<plan>call her</plan>", "tonight; call her"),
        ("I love<pin>tea</pin>and more", "I love tea and more"),
        ("<pin>done.</pin><pin>next</pin> (<pin>x</pin>)", "done. next (x)"),
    ],
)
def test_it_reads_the_words_of_two_tags_apart(content, read):
    (segment,) = show(f"<luna>{content}</luna>").segments
    assert segment.text_apart == read


PIECE_WORDS = st.lists(st.sampled_from(["tea", "honey", "walks", "Ana", "5pm", "x"]), min_size=1)


@given(st.lists(st.tuples(st.sampled_from(["pin", "plan", ""]), PIECE_WORDS), max_size=6))
def test_two_tags_or_a_tag_and_its_text_never_run_their_words_together(pieces):
    pieces = [p for i, p in enumerate(pieces) if p[0] or i == 0 or pieces[i - 1][0]]
    content = "".join(
        f"<{mark}>{' '.join(words)}</{mark}>" if mark else " ".join(words) for mark, words in pieces
    )

    read = " ".join(segment.text_apart for segment in show(f"<luna>{content}</luna>").segments)

    assert read.replace(";", " ").split() == [word for _, words in pieces for word in words]


def test_it_drops_segments_that_are_only_whitespace():
    message = show("<luna>  <do>  </do>\n <say>hey</say>  </luna>")
    assert kinds(message) == [("say", "hey")]
    assert show("<luna></luna>").segments == ()


def test_it_keeps_line_breaks_inside_the_persons_text():
    assert kinds(show("<luna>one\ntwo</luna>")) == [("say", "one\ntwo")]


def test_it_knows_the_image_and_the_time():
    message = show("<luna>look</luna>", has_image=True)
    assert message.has_image and message.ts == TS and message.event_id == 7


def test_it_leaves_the_slug_empty_for_an_unknown_actor():
    message = show("hello", actor="mono")
    assert message.identity == "mono" and message.identity_slug == ""


@given(st.text(alphabet="ab <>/sydonrateplinuc\n*", max_size=80))
def test_it_never_loses_the_persons_visible_text(text):
    parsed = parse(text, identities=list(SIDES))
    shown = "".join(segment.text for segment in user_segments(parsed))
    kept = "".join(span.text for span in parsed.spans if span.role != MARKUP)
    assert "".join(shown.split()) == "".join(kept.split())


# --- Identity names as CSS ---------------------------------------------------------------------


def test_it_slugs_identity_names_for_css():
    assert identity_slug("y'lhara") == "ylhara"
    assert identity_slug("Y’lhara") == "ylhara"
    assert identity_slug("Luna") == "luna"
    assert identity_slug("two words") == "two-words"


def test_it_lists_only_plain_colours():
    colors = identity_colors(
        [("luna", "#b0b0bc"), ("y'lhara", "#9fc4b8"), ("bad", "red;}body{x"), ("none", "")]
    )
    assert colors == [("luna", "#b0b0bc"), ("ylhara", "#9fc4b8")]


# --- inline_markup ----------------------------------------------------------------------------


def test_it_renders_bold_italic_and_line_breaks():
    assert inline_markup("**bold** and *soft*\nnext") == (
        "<strong>bold</strong> and <em>soft</em><br>next"
    )
    assert inline_markup("**a *b* c**") == "<strong>a <em>b</em> c</strong>"
    assert inline_markup("***both***") == "<em><strong>both</strong></em>"


def test_it_does_not_cross_lines_or_read_lone_stars():
    assert inline_markup("**not\nbold**") == "**not<br>bold**"
    assert inline_markup("2 * 3 * 4") == "2 * 3 * 4"
    assert inline_markup("* a list item") == "* a list item"


def test_it_escapes_scripts():
    assert inline_markup("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;"


def test_it_escapes_markup_inside_bold():
    assert inline_markup("**<img src=x onerror=alert(1)>**") == (
        "<strong>&lt;img src=x onerror=alert(1)&gt;</strong>"
    )


def test_it_escapes_attribute_breakouts():
    rendered = inline_markup("*\" onmouseover=\"alert(1)* 'x'")
    assert '"' not in rendered and "'" not in rendered
    assert rendered.startswith("<em>&quot; onmouseover=&quot;alert(1)</em>")


def test_it_is_safe_in_a_template():
    template = Template("{% load heart_text %}{{ text|inline_markup }}")
    rendered = template.render(Context({"text": "<b>**hi**</b>"}))
    assert rendered == "&lt;b&gt;<strong>hi</strong>&lt;/b&gt;"


ALLOWED_TAG_RE = re.compile(r"</?(?:strong|em)>|<br>")


@given(st.text(alphabet="*<>\"'&ab \n", max_size=60))
def test_it_never_emits_markup_of_its_own_beyond_its_tags(text):
    rendered = inline_markup(text)
    assert "<" not in ALLOWED_TAG_RE.sub("", rendered)
    assert '"' not in rendered and "'" not in rendered
    opened = re.findall(r"<(/?)(strong|em)>", rendered)
    stack = []
    for closing, name in opened:  # the tags nest properly
        if closing:
            assert stack and stack.pop() == name
        else:
            stack.append(name)
    assert not stack


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        ("the **blue** one, *finally*", "the blue one, finally"),
        ("*a **bold** word inside*", "a bold word inside"),
        ("2 * 3 * 4 and a lone ** pair", "2 * 3 * 4 and a lone ** pair"),
        ("**across\nlines**", "**across\nlines**"),
    ],
)
def test_emphasis_reads_plain_as_the_chat_page_draws_it(text, plain):
    assert emphasis_plain(text) == plain


REPLY_PIECES = st.sampled_from(
    [
        "<say>",
        "</say>",
        "<do>",
        "</do>",
        "<narrate>",
        "</narrate>",
        "<feeling>",
        "</feeling>",
        "<pin>",
        "</pin>",
        "<secret>",
        "</secret>",
        "<claude>",
        "</claude>",
        "<luna>",
        "<b>",
        "hello ",
        "the rain ",
        "calm",
        "recall(fairy) ",
        " ",
        "\n",
        "*so* ",
        "x",
    ]
)


@given(st.lists(REPLY_PIECES, max_size=20).map("".join), st.text("abc xyz.", max_size=30))
def test_a_reply_edited_shows_the_new_words_and_keeps_all_it_did_not_show(content, text):
    names = ["claude", "luna"]
    before, after = (
        parse(content, identities=names),
        parse(reply_edited(content, text, names), identities=names),
    )

    assert after.segments == parse(f"<say>{text}</say>", identities=names).segments
    assert after.knowledge == before.knowledge
    assert after.identity == before.identity
