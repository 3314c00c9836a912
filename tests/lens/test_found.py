"""Old conversation found for the person's message (lens/found.py)."""

from datetime import UTC, datetime, timedelta

import pytest

from events.models import Event
from lens import found
from lens.found import FOUND_QUERY_WORDS, FOUND_TIER, found_for_message, telling_words
from lens.search import events_holding

pytestmark = pytest.mark.django_db(databases="__all__")

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def log():
    said = [
        ("renki", "<renki>work tomorrow is the big presentation</renki>"),
        ("claude", "<say>You will be fine.</say>"),
        ("luna", "<luna>the garden needs water</luna>"),
        ("claude", "<say>I will remind you.</say>"),
        ("luna", "<luna>we moved the piano upstairs</luna>"),
        ("claude", "<say>Heavy work!</say>"),
        ("luna", "<luna>how did the presentation go?</luna>"),
    ]
    return [
        Event.objects.create(actor=actor, content=text, ts=START + timedelta(minutes=n))
        for n, (actor, text) in enumerate(said)
    ]


def test_it_finds_the_passage_with_the_turns_around_it_without_tags(log):
    [found] = found_for_message("how did the presentation go?", before_event=log[4].pk)

    assert (found.key, found.tier) == (f"event:{log[0].pk}", FOUND_TIER)
    assert found.text.splitlines() == [
        "2026-03-02 09:00",
        "renki: work tomorrow is the big presentation",
        "claude: You will be fine.",
    ]


def test_it_never_searches_what_recent_shows(log):
    assert found_for_message("presentation", before_event=log[0].pk) == []
    assert found_for_message("piano", before_event=log[4].pk) == []


def test_a_message_without_words_to_search_finds_nothing(log):
    assert found_for_message("?!", before_event=log[-1].pk) == []
    assert found_for_message("", before_event=log[-1].pk) == []


def test_hits_whose_turns_overlap_are_one_passage(log):
    found = found_for_message("presentation fine", before_event=log[4].pk)

    assert len(found) == 1
    assert found[0].text.count("renki:") == 1


def test_a_long_message_is_searched_by_its_rarest_words(log):
    """Words the log holds more often are left out first; order stays the message's."""
    for n in range(FOUND_QUERY_WORDS + 2):
        Event.objects.create(actor="luna", content=" ".join(f"w{k}" for k in range(n + 1)))
    message = " ".join(f"w{k}" for k in reversed(range(FOUND_QUERY_WORDS + 2)))

    words = telling_words(message)

    assert words == [f"w{k}" for k in reversed(range(2, FOUND_QUERY_WORDS + 2))]


def test_a_word_too_many_events_hold_is_not_searched(log, monkeypatch):
    monkeypatch.setattr(found, "FOUND_WORD_EVENTS_MAX", 1)
    Event.objects.create(actor="luna", content="the presentation slides again")

    assert telling_words("presentation slides") == ["slides"]
    assert found_for_message("presentation", before_event=log[4].pk) == []


def test_it_counts_the_events_holding_each_word_no_further_than_asked(log):
    """An event's index row holds its words and those of the two turns before it, as the
    search reads them: "piano", said once, is in three rows."""
    assert events_holding(["presentation", "piano", "cello"], most=10) == {
        "presentation": 4,
        "piano": 3,
        "cello": 0,
    }
    assert events_holding(["piano"], most=1) == {"piano": 2}  # counted to 2 and no further
