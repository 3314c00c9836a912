"""``python -m bench continuity``: a small conversation of three evenings, lived and probed."""

import json
from datetime import datetime, timedelta

import pytest

from bench.cli import main
from bench.continuity import content_words, conversation_measure, figures_lines, untagged
from events.models import Event
from mirror.models import Summary

EVENINGS = (datetime(2024, 3, 4, 20, 0), datetime(2024, 3, 9, 19, 30), datetime(2024, 3, 15, 21))
TURNS = 14  # an evening's turns, the person's and the companion's in turn
PLACES = ("the harbour", "the old bakery", "the tram stop", "the allotment", "the bookshop")
THINGS = ("a blue umbrella", "the neighbour's dog", "a crossword", "cold soup", "a loud radio")
FACT = "My sister Ingrid moved to Tromsø to work at the aquarium feeding the seals every morning."
PLAN = "I booked the ferry to Gotland for the second week of June, cabin and bicycle included."


def conversation() -> dict:
    """Three evenings of Ana (the person) and Ben (the companion), a minute between turns."""
    turns = []
    for evening, start in enumerate(EVENINGS, 1):
        for n in range(TURNS):
            place, thing = PLACES[(n + evening) % 5], THINGS[(n * 3 + evening) % 5]
            if n % 2:
                text = f"Ben here: that sounds like {thing} at {place}, tell me more <3."
            else:
                text = (
                    f"Evening {evening}, message {n}: I walked past {place} and saw {thing}, "
                    f"then sat a while thinking about nothing much, <b>tired</b> but fine."
                )
            if (evening, n) == (1, 2):
                text = FACT
            if (evening, n) == (2, 4):
                text = PLAN
            turns.append(
                {
                    "id": f"c1:D{evening}:{n + 1}",
                    "ts": (start + timedelta(minutes=n)).isoformat(),
                    "speaker": "Ben" if n % 2 else "Ana",
                    "text": text,
                }
            )
    return {"id": "c1", "turns": turns}


QUESTIONS = [
    {
        "conversation": "c1",
        "question": "Where does Ana's sister work?",
        "evidence": ["c1:D1:3"],
        "category": "single-hop",
    },
    {
        "conversation": "c1",
        "question": "When is Ana going to Gotland?",
        "evidence": ["c1:D2:5"],
        "category": "temporal",
    },
]


@pytest.fixture
def small_recent(settings):
    """Pools small enough that the first evenings leave Recent and summaries stand for them."""
    settings.BUDGET_POOL_USER, settings.BUDGET_POOL_SAY = 120, 80
    settings.BUDGET_POOL_DO, settings.BUDGET_POOL_FLEX = 40, 60
    settings.COMPANION_OFFLINE = True


@pytest.mark.django_db(databases="__all__")
def test_it_probes_each_return_and_finds_no_hole(small_recent):
    figures = conversation_measure(
        conversation=conversation(), questions=QUESTIONS, mirror_every=10
    )

    assert (figures["turns"], figures["events"], figures["probes"]) == (42, 42, 2)
    assert Summary.objects.exists(), "the Mirror wrote no summary"
    assert figures["person_checked"] > 0
    assert figures["holes"] == 0, figures["hole_examples"]
    # The two evidence turns lie behind Recent by the last evening.
    assert figures["evidence_checked"] >= 2
    assert 0 <= figures["evidence_kept"] <= figures["evidence_checked"]
    assert figures["reach_probes"] >= 1 and 0 < figures["reach_sum"] <= figures["reach_probes"]
    # The person as luna in plain text, the companion as claude in <say>; no tag from the text.
    first, second = Event.objects.order_by("pk")[:2]
    assert (first.actor, second.actor) == ("luna", "claude")
    assert first.content.endswith("< b>tired< /b> but fine.")
    assert (
        second.content
        == "<say>Ben here: that sounds like a loud radio at the tram stop, tell me more <3.</say>"
    )

    lines = figures_lines([json.loads(json.dumps(figures))])
    assert lines[0].split() == [
        "conversation", "turns", "probes", "person", "holes", "evidence", "kept", "share",
        "recent", "reach", "summaries", "s",
    ]  # fmt: skip
    for line, name in zip(lines[1:], ("c1", "total"), strict=True):
        cells = line.split()
        assert cells[0] == name and len(cells) == 12
        assert cells[1:5] == ["42", "2", str(figures["person_checked"]), "0"]
        assert all(0 <= float(cell) <= 1 for cell in cells[7:10])


@pytest.mark.store_free
def test_it_keeps_text_from_forming_tags_and_counts_content_words():
    assert untagged("a <b>bold</b> <3 and < say>") == "a < b>bold< /b> <3 and < say>"
    assert content_words("The Aquarium, in TROMSØ; seals & 2024! That was about it") == {
        "aquarium", "tromsø", "seals", "2024",
    }  # fmt: skip


@pytest.mark.store_free
def test_it_says_so_when_the_dataset_is_missing(capsys, tmp_path):
    assert main(["continuity", str(tmp_path / "none.json")]) == 1
    assert "none.json: no such file" in capsys.readouterr().err
