"""What the search page and the command show of a hit: the text a person sees."""

from datetime import UTC, datetime, timedelta

import pytest

from gem.models import Fragment, Identity
from heart.ingest import event_record
from lens.display import hits_display
from lens.search import MARK_OPEN, search

pytestmark = pytest.mark.django_db(databases="__all__")

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def identities():
    for name, side in (("luna", "user"), ("claude", "companion")):
        Identity.objects.get_or_create(name=name, defaults={"side": side, "color": "#888888"})


def said(text, actor, at):
    event, _ = event_record(text=text, actor=actor, ts=START + timedelta(hours=at))
    return event


def test_a_turn_shows_its_display_text_without_markup_or_processing_text():
    said("<luna>I have physio on Tuesday <plan>physio Tuesday 10am</plan></luna>", "luna", 0)
    reply = said(
        "<thought>she worries</thought><say>Good luck with the physio!</say> recall(about)",
        "claude",
        1,
    )
    shown = {item.hit.id: item for item in hits_display(search("physio", kinds=["event"]))}
    passage = shown[reply.pk].passage
    assert passage == f"Good luck with the {MARK_OPEN}physio{MARK_OPEN}!"
    (asked,) = shown[reply.pk].before
    assert (asked.actor, asked.text) == ("luna", "I have physio on Tuesday physio Tuesday 10am")
    for item in shown.values():
        for text in (item.passage, *(turn.text for turn in (*item.before, *item.after))):
            assert "<" not in text and "recall(" not in text and "worries" not in text


def test_a_turn_found_by_the_turns_before_it_holds_none_of_the_words():
    said("<luna>the physio was hard today</luna>", "luna", 0)
    reply = said("<say>Rest now, you earned it.</say>", "claude", 1)
    shown = {item.hit.id: item for item in hits_display(search("physio", kinds=["event"]))}
    assert shown[reply.pk].found_by == "the turns before it"
    assert shown[reply.pk].passage == "Rest now, you earned it."
    assert shown[reply.pk - 1].found_by == ""


def test_a_reply_that_shows_nothing_has_no_passage():
    said("<luna>any news on the physio?</luna>", "luna", 0)
    secret = said("<thought>the physio called, keep it quiet</thought>", "claude", 1)
    shown = {item.hit.id: item for item in hits_display(search("physio", kinds=["event"]))}
    assert shown[secret.pk].passage == ""
    assert shown[secret.pk].found_by == "what it does not show"


def test_a_fragment_shows_its_matching_tier_and_reads_no_identities(
    django_assert_num_queries,
):
    Fragment.objects.create(key="tea", ambient="Warm.", recognition="Genmaicha at dusk.")
    hits = search("genmaicha", kinds=["fragment"])
    with django_assert_num_queries(0):
        (shown,) = hits_display(hits)
    assert (
        shown.passage == f"{MARK_OPEN}Genmaicha{MARK_OPEN} at dusk."
        and shown.hit.tier == "recognition"
    )


def test_a_turns_emphasis_reads_plain_so_only_the_querys_words_are_marked():
    said("<luna>I finished the **blue** crewneck at last, *finally*.</luna>", "luna", 0)
    reply = said("<say>Show me the **collar** of the crewneck?</say>", "claude", 1)
    shown = {item.hit.id: item for item in hits_display(search("crewneck", kinds=["event"]))}
    marked = f"{MARK_OPEN}crewneck{MARK_OPEN}"
    assert shown[reply.pk - 1].passage == f"I finished the blue {marked} at last, finally."
    assert shown[reply.pk].passage == f"Show me the collar of the {marked}?"
    (asked,) = shown[reply.pk].before
    assert asked.text == "I finished the blue crewneck at last, finally."
