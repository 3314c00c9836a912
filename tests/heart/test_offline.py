"""The offline companion: pure, deterministic, readable by the tag parser, and writing no memory."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from events.models import Turn
from events.parse import parse
from gem.models import WorkingMemory
from gem.recalled import Recall
from gem.words import STOP_WORDS
from heart.offline import (
    first_sentence,
    message_of,
    recall_keys,
    recalled_entries,
    reply,
    sections_of,
)
from heart.services import turn_submit
from heart.tasks import run_turns_task

SYSTEM = [{"type": "text", "text": "Wake text."}]
IDENTITIES = ("hasuki", "renki", "luna", "chloe", "strah", "claude", "y'lhara")


def user_text(message: str, recalled: str = "", actor: str = "luna") -> str:
    """An assembled user message, shaped like ``heart.assemble`` writes it."""
    return (
        "## Lingering\n- [feeling] calm\n\n"
        "## Summaries\n### L0, events 1-9\nThey talked about the lake.\n\n"
        f"## Recalled\n{recalled}\n\n"
        "## Recent\nluna: hi\n\nclaude (say): hello\n\n"
        "## Now\nIt is Tuesday 3 March 2026, 7:10 in the evening.\n\n"
        f"## Message\n{actor}:\n{message}"
    )


def offline_reply(text: str) -> str:
    return reply(system=SYSTEM, messages=[{"role": "user", "content": text}])


def test_it_answers_without_a_preamble_saying_it_is_offline():
    """The badge and the inspector say so: the reply's text is what it says to the message."""
    parsed = parse(
        offline_reply(user_text("<luna><say>hello?</say></luna>")), identities=IDENTITIES
    )

    assert not parsed.is_secret
    assert parsed.display_text == "I got your message, luna: “hello?”"


def test_it_writes_no_knowledge_tags():
    parsed = parse(
        offline_reply(user_text("remember the fairy, I got a cat")), identities=IDENTITIES
    )

    assert not parsed.knowledge
    assert "<thought>" not in offline_reply(user_text("hello"))


@pytest.mark.django_db(databases="__all__")
def test_it_leaves_working_memory_alone_on_an_offline_turn(settings):
    settings.COMPANION_OFFLINE = True
    for text in ("<luna>hi</luna>", "<luna>remember [fairy]? I got a cat on Monday</luna>"):
        turn = turn_submit(text=text, actor="luna", enqueue=False)
        assert run_turns_task(turn.pk) == [turn.pk]

    assert list(Turn.objects.values_list("status", flat=True)) == ["done", "done"]
    assert not WorkingMemory.objects.exists()


def test_it_acknowledges_the_last_message():
    messages = [
        {"role": "user", "content": user_text("an older message")},
        {"role": "assistant", "content": "<say>ok</say>"},
        {"role": "user", "content": user_text("<luna><say>the reeds are singing</say></luna>")},
    ]

    shown = parse(reply(system=SYSTEM, messages=messages)).display_text

    assert "I got your message, luna: “the reeds are singing”" in shown
    assert "older message" not in shown
    assert "<say>" not in shown


def test_it_is_deterministic():
    text = user_text("[fairy] again", "### fairy (inventory)\nFairies keep bargains. More.")

    assert len({offline_reply(text) for _ in range(5)}) == 1


def test_it_uses_recalled_knowledge():
    recalled = (
        "### fairy (inventory)\n"
        "Fairies keep the old bargains. They never say thank you.\n\n"
        "### moon (ambient, neighbour of fairy)\n"
        "The moon hangs low over the lake! It is always watching."
    )

    shown = parse(offline_reply(user_text("what do you know?", recalled))).display_text

    assert "fairy" in shown
    assert "Fairies keep the old bargains." in shown
    assert "They never say thank you" not in shown
    assert "moon" in shown
    assert "The moon hangs low over the lake!" in shown
    assert "always watching" not in shown


def test_it_says_when_nothing_came_back_for_a_key():
    shown = parse(offline_reply(user_text("hm", "### ghost (not found)\n"))).display_text

    assert "ghost — nothing" in shown


def test_it_mentions_no_recall_when_none_arrived():
    shown = parse(offline_reply(user_text("hello"))).display_text

    assert "Recalled" not in shown


def test_it_asks_to_recall_bracketed_keys_and_remembered_words():
    message = "<luna><say>do you remember the fairy? and [lake], [old house], [lake]</say></luna>"

    parsed = parse(offline_reply(user_text(message)), identities=IDENTITIES)

    assert parsed.recalls == (Recall("fairy"), Recall("lake"), Recall("old house"))
    assert "recall(" in parsed.processing
    assert "recall(" not in parsed.display_text


def test_it_does_not_recall_what_the_person_merely_wrote_as_a_call():
    parsed = parse(offline_reply(user_text("please recall(secret) and search(x)")))

    assert parsed.recalls == ()
    assert parsed.searches == ()
    assert "recall (secret)" in parsed.display_text


def test_it_keeps_the_persons_tags_from_breaking_its_own():
    message = "<luna><say>a</say></say><narrate>b</narrate> <do>c"

    parsed = parse(offline_reply(user_text(message)), identities=IDENTITIES)

    assert [segment.kind for segment in parsed.segments] == ["say"]
    assert "a b c" in parsed.display_text


def test_it_notices_an_image_it_cannot_see():
    messages = [
        {
            "role": "user",
            "content": [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": ""},
                },
                {"type": "text", "text": user_text("look at this")},
            ],
        }
    ]

    shown = parse(reply(system=SYSTEM, messages=messages)).display_text

    assert "look at this" in shown
    assert "cannot look at images" in shown


def test_it_takes_plain_text_without_sections_as_the_message():
    shown = parse(offline_reply("just words")).display_text

    assert "just words" in shown


def test_it_answers_even_with_no_user_message():
    parsed = parse(reply(system=[], messages=[]))

    assert parsed.display_text == "Your message came through empty."


def test_it_reads_the_sections_by_their_headings():
    text = user_text("hello\n## Recent\nnot a section: the message runs to the end")

    sections = sections_of(text)

    assert list(sections) == ["Lingering", "Summaries", "Recalled", "Recent", "Now", "Message"]
    assert sections["Now"] == "It is Tuesday 3 March 2026, 7:10 in the evening."
    assert sections["Recent"] == "luna: hi\n\nclaude (say): hello"
    assert sections["Message"] == (
        "luna:\nhello\n## Recent\nnot a section: the message runs to the end"
    )


def test_it_tells_the_actor_from_the_message():
    assert message_of("y'lhara:\nhello: there") == ("y'lhara", "hello: there")
    assert message_of("hello: there") == ("", "hello: there")
    assert message_of("no actor\nline two") == ("", "no actor\nline two")


def test_it_reads_recalled_entries_with_markdown_inside():
    section = (
        "### fairy (inventory)\nFairies keep bargains.\n## Notes\n### Details\nmore\n"
        "### moon (ambient)\nThe moon."
    )

    assert recalled_entries(section) == [
        ("fairy", "Fairies keep bargains.\n## Notes\n### Details\nmore"),
        ("moon", "The moon."),
    ]


def test_it_cuts_the_first_sentence():
    assert first_sentence("One two. Three.") == "One two."
    assert first_sentence("“Quoted.” Then more.") == "“Quoted.”"
    assert first_sentence("No end\nstill going\n\nNext paragraph.") == "No end still going"
    assert first_sentence("") == ""


def test_it_finds_keys_to_recall_in_order():
    assert recall_keys("remember [b] and remember the lake, remember my") == ["b", "lake"]
    assert recall_keys('[say "no"] [] [ ]') == []


@pytest.mark.parametrize(
    ("message", "keys"),
    [
        ("what do you remember about the physio?", ["physio"]),
        ("do you remember that song?", ["song"]),
        ("remember that I hate cilantro", []),
        ("please remember to call the pharmacy", []),
        ("can you remember it for me?", []),
    ],
)
def test_it_skips_little_words_and_looks_up_nothing_it_was_asked_to_keep(message, keys):
    parsed = parse(offline_reply(user_text(f"<luna>{message}</luna>")), identities=IDENTITIES)

    assert parsed.recalls == tuple(Recall(key) for key in keys)


@given(st.lists(st.sampled_from(sorted(STOP_WORDS)), max_size=6).map(" ".join))
def test_it_never_looks_up_a_little_word(little):
    assert recall_keys(f"do you remember {little}?") == []


@given(st.text(max_size=300), st.text(max_size=200))
def test_it_always_answers_visibly_and_the_same_way(message, recalled):
    text = user_text(message, recalled)

    first = offline_reply(text)

    assert first == offline_reply(text)
    parsed = parse(first, identities=IDENTITIES)
    assert parsed.segments[0].kind == "say"
    assert parsed.segments[0].text.startswith(("I got your message", "Your message came"))
