"""Old conversation found for the person's message (lens/found.py)."""

from datetime import UTC, datetime, timedelta

import pytest

from events.models import Event
from lens import found
from lens.found import FOUND_QUERY_WORDS, FOUND_TIER, found_for_message, telling_words
from lens.search import events_holding, newest_holding

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

    words, first_event = telling_words(message, before_event=log[-1].pk)

    assert words == [f"w{k}" for k in reversed(range(2, FOUND_QUERY_WORDS + 2))]
    assert first_event == 0  # the whole log


def test_a_word_too_many_events_hold_is_left_out_for_the_rarer(log, monkeypatch):
    monkeypatch.setattr(found, "FOUND_WORD_EVENTS_MAX", 1)
    Event.objects.create(actor="luna", content="the presentation slides again")

    assert telling_words("presentation slides", before_event=log[-1].pk) == (["slides"], 0)


def test_a_message_of_common_words_is_searched_in_the_newest_stretch_holding_them(log, monkeypatch):
    """With every word held by more events than the cap, the newest of them are searched: here
    the second newest row holding "presentation" starts the stretch (an event's row holds the
    two turns before it too), so the later talk of it is found and not the first."""
    monkeypatch.setattr(found, "FOUND_WORD_EVENTS_MAX", 2)
    later = [
        Event.objects.create(actor=actor, content=text, ts=START + timedelta(hours=n))
        for n, (actor, text) in enumerate(
            [
                ("claude", "<say>It went well.</say>"),
                ("luna", "<luna>the presentation was long</luna>"),
                ("claude", "<say>Rest now.</say>"),
                ("luna", "<luna>tea?</luna>"),
            ],
            start=1,
        )
    ]
    before = later[-1].pk

    assert telling_words("presentation", before_event=before) == (["presentation"], later[1].pk)
    assert [item.key for item in found_for_message("presentation", before_event=before)] == [
        f"event:{later[1].pk}"
    ]


def test_a_message_of_common_words_searches_none_the_lens_leaves_out(log, monkeypatch):
    """The word "the", in every turn here, is no word to find a passage by (PostgreSQL's index
    holds no such word; SQLite's does, and the stretch leaves it out)."""
    monkeypatch.setattr(found, "FOUND_WORD_EVENTS_MAX", 1)

    assert found_for_message("the", before_event=log[-1].pk + 1) == []


def test_it_counts_the_events_holding_each_word_no_further_than_asked(log):
    """An event's index row holds its words and those of the two turns before it, as the
    search reads them: "piano", said once, is in three rows."""
    assert events_holding(["presentation", "piano", "cello"], most=10) == {
        "presentation": 4,
        "piano": 3,
        "cello": 0,
    }
    assert events_holding(["piano"], most=1) == {"piano": 2}  # counted to 2 and no further


def test_it_finds_where_the_newest_stretch_holding_each_word_starts(log):
    """ "piano" is in the rows of the turn that said it and of the two after it."""
    after = log[-1].pk + 1

    assert newest_holding(["piano"], most=1, before=after) == {"piano": log[6].pk}
    assert newest_holding(["piano", "cello"], most=3, before=after) == {
        "piano": log[4].pk,
        "cello": 0,
    }
    assert newest_holding(["piano"], most=4, before=after) == {"piano": 0}  # fewer hold it
    assert newest_holding(["piano"], most=1, before=log[6].pk) == {"piano": log[5].pk}
