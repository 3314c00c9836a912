"""What a consultation reads (``compass.read``)."""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from compass.read import compass_read, keys_named, sections_capped
from events.models import Correction, Event
from gem.models import Fragment
from gem.services import working_memory_create
from mirror.models import Summary

pytestmark = pytest.mark.django_db(databases="__all__")

ZONE = "Europe/Amsterdam"
NOW = datetime(2027, 3, 1, 9, 0, tzinfo=ZoneInfo(ZONE))


def remembered(type: str, content: str, **more):
    return working_memory_create(
        type=type, content=content, actor="luna", at=NOW - timedelta(days=1), turn=1, **more
    ).item


def test_it_reads_plans_pins_patterns_summaries_and_the_fragments_named():
    race = remembered("plan", "the spring race", due=NOW + timedelta(days=30), hidden=True)
    remembered("plan", "learn the guitar")
    knee = remembered("pin", "knee hurts after long runs")
    remembered("feeling", "restless")
    Fragment.objects.create(key="exercise", ambient="Runs by the river.")
    Summary.objects.create(level="L0", first_event_id=1, last_event_id=9, content="Talk of a race.")

    reading = compass_read(question="a plan for [exercise] in April", now=NOW, time_zone=ZONE)

    sections = dict(reading.sections)
    assert sections["Now"] == "Monday 2027-03-01 09:00 in Europe/Amsterdam, the owner's time zone."
    plans = sections["Active plans"].splitlines()
    assert plans[0] == (
        f"- wm {race.pk} · due Wed 2027-03-31 09:00 · hidden until 48 h before due · "
        "score 0.00: the spring race"
    )
    assert plans[1].endswith("learn the guitar")
    assert sections["Pins"].startswith(f"- wm {knee.pk} · score ")
    assert sections["Patterns"] == "None."
    assert "Talk of a race." in sections["Recent summaries"]
    assert "Runs by the river." in sections["Fragments the question names"]
    assert {item.type for item in reading.items} == {"plan", "pin"}


def test_it_names_only_fragments_the_memory_holds_in_the_questions_order():
    for key in ("move", "boxes", "fairy"):
        Fragment.objects.create(key=key)
    assert keys_named("Boxes for the move, and more boxes") == ["boxes", "move"]


def test_sections_past_the_cap_are_cut_saying_how_much_was_left_out():
    sections = [("A", "12345\n12345"), ("B", "1\n2\n3")]
    assert sections_capped(sections, 15) == [
        ("A", "12345\n12345"),
        ("B", "1\n(2 more lines left out for length)"),
    ]
    assert sections_capped(sections, 100) == sections


def test_a_summary_written_before_a_correction_of_what_it_covers_is_not_read():
    said = Event.objects.create(actor="luna", content="<luna>the race is off</luna>")
    Summary.objects.create(
        level="L0", first_event_id=said.pk, last_event_id=said.pk, content="The race is off."
    )
    Correction.objects.create(event=said, sequence=0, kind="retraction", made_by="owner")

    reading = compass_read(question="the week", now=NOW, time_zone=ZONE)

    assert dict(reading.sections)["Recent summaries"] == "No summaries yet."
