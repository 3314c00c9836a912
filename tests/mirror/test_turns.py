"""Reading the log as turns (``mirror.turns``)."""

import pytest

from events.models import Correction, Event, Turn
from mirror.turns import turns_after, turns_before, turns_between

pytestmark = pytest.mark.django_db(databases="__all__")
SIDES = {"luna": "user", "claude": "companion"}


@pytest.fixture
def long_turns():
    """Four turns of one message and five replies each (more than a page of events per turn)."""
    ids = []
    for n in range(4):
        turn = [Event.objects.create(actor="luna", content=f"<luna>hello {n}</luna>").pk]
        turn += [
            Event.objects.create(actor="claude", content=f"<say>reply {n}.{k}</say>").pk
            for k in range(5)
        ]
        ids.append(turn)
    return ids


def test_it_reads_whole_turns_page_after_page(long_turns):
    turns = turns_after(0, sides=SIDES, limit=2)
    assert [[e.event_id for e in t.events] for t in turns] == long_turns[:2]
    assert [len(t.events) for t in turns_after(0, sides=SIDES)] == [6, 6, 6, 6]
    assert [t.first_event_id for t in turns_after(long_turns[1][-1], sides=SIDES, limit=9)] == [
        long_turns[2][0],
        long_turns[3][0],
    ]


def test_it_stops_before_a_turn_still_being_answered(long_turns):
    Turn.objects.create(event_id=long_turns[2][0], number=3, status="queued")
    assert [t.first_event_id for t in turns_after(0, sides=SIDES)] == [
        long_turns[0][0],
        long_turns[1][0],
    ]


def test_it_reads_the_whole_turns_before_a_chunk_and_a_range(long_turns):
    before = turns_before(long_turns[3][0], count=2, sides=SIDES)
    assert [t.first_event_id for t in before] == [long_turns[1][0], long_turns[2][0]]
    assert len(before[0].events) == 6  # whole, not cut at the page
    (turn,) = turns_between(long_turns[1][0], long_turns[1][-1], sides=SIDES)
    assert [line.text for line in turn.lines][:2] == ["hello 1", "reply 1.0"]


def test_it_reads_the_log_as_its_corrections_leave_it(long_turns):
    edited, retracted = long_turns[1][0], long_turns[1][1]
    Correction.objects.create(
        event_id=edited, sequence=0, kind="edit", text="<luna>hi there</luna>", made_by="owner"
    )
    Correction.objects.create(event_id=retracted, sequence=0, kind="retraction", made_by="owner")

    (turn,) = turns_between(long_turns[1][0], long_turns[1][-1], sides=SIDES)

    assert [line.text for line in turn.lines][:2] == ["hi there", "reply 1.1"]
    assert retracted not in [event.event_id for event in turn.events]


def test_it_reads_on_past_a_page_whose_events_were_all_retracted(long_turns):
    for event_id in long_turns[0][1:]:
        Correction.objects.create(event_id=event_id, sequence=0, kind="retraction", made_by="owner")

    turns = turns_after(0, sides=SIDES, limit=2)

    assert [[e.event_id for e in t.events] for t in turns] == [long_turns[0][:1], long_turns[1]]
