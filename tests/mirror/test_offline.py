"""The offline Mirror (``mirror.offline``): pure, extractive, labelled, and worth reading."""

import json
import re
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gem.due import due_from_text
from heart.models import Event
from mirror.models import Summary, TagSuggestion
from mirror.offline import (
    OFFLINE_LABEL,
    answer,
    notes_chosen,
    sentence_score,
    suggestions_from,
)
from mirror.output import output_parse
from mirror.run import mirror_run

WEEK = json.loads((Path(__file__).parent / "data" / "offline_week.json").read_text("utf-8"))
FACTS_KEPT = 10  # of the week's 10 facts, kept by its three L0 summaries together (measured)
FACTS_KEPT_MERGED = 10  # …and by the L1 summary that merges them (measured)
FACT_MARGIN = 2

CHUNK = "\n".join(
    [
        "#1 luna: I always forget the keys.",
        "#2 claude (say): I know.",
        "#2 claude (do): She laughs. Then she hands them over.",
        "#2 claude (narrate): The door clicks.",
        "#3 luna: thanks",
        "#3 luna: thanks",
    ]
)


def test_it_cleans_by_collapsing_repeats_only():
    assert answer("clean", [("Chunk", CHUNK)]).splitlines()[-1] == "#3 luna: thanks"
    assert answer("clean", [("Chunk", CHUNK)]).count("thanks") == 1


def test_it_compresses_action_and_keeps_every_say():
    compressed = answer("compress", [("Chunk, cleaned", CHUNK)])
    assert "#2 claude (say): I know." in compressed
    assert "#2 claude (do): She laughs." in compressed
    assert "door clicks" not in compressed


def test_it_summarises_extractively_with_a_label_and_pin_suggestions():
    output = output_parse(
        answer("summarise", [("Context (read only)", "#0 luna: old"), ("Chunk, cleaned", CHUNK)])
    )
    assert output.shape.startswith(OFFLINE_LABEL)
    assert "old" not in output.content  # context is not summarised
    assert [(s.type, s.content) for s in output.suggestions] == [
        ("pin", "I always forget the keys")
    ]


def test_it_merges_the_shapes_of_its_parts():
    merged = output_parse(answer("merge", [("Summaries to merge", "### L0\nOne.\n### L0\nTwo.")]))
    assert merged.shape == f"{OFFLINE_LABEL} 2 summaries merged."
    assert merged.notes == ("- One.", "- Two.")


def test_it_scores_sentences_by_names_numbers_dates_and_news():
    assert sentence_score("good night") == 0
    assert sentence_score("anyway how are you") == 0
    assert sentence_score("I'm so tired") == 0
    assert sentence_score("We adopted a cat from the shelter in Utrecht!") > 0
    assert sentence_score("I start on the 1st of April.") > sentence_score("it was lovely and all")
    assert notes_chosen(
        [("luna", "hm ok"), ("luna", "I got the job at the Rijksmuseum!")], limit=8
    ) == [("luna", "I got the job at the Rijksmuseum!")]


@pytest.mark.parametrize(
    ("said", "suggested"),
    [
        ("Can you remember that I hate cilantro? It is everywhere.", [("pin", "I hate cilantro")]),
        ("please remember that my sister is called Ana.", [("pin", "my sister is called Ana")]),
        (
            "Remind me to call the physio on friday at 5pm",
            [("plan", "call the physio on friday at 5pm")],
        ),
        ("could you remind me on friday to call her, please?", [("plan", "call her on friday")]),
        ("ok, remind me about the dentist tomorrow", [("plan", "the dentist tomorrow")]),
        ("do you remember the fairy?", []),
        ("the plumber never showed up", []),
        ("I always water the roses at dawn", [("pin", "I always water the roses at dawn")]),
    ],
)
def test_it_stages_what_the_person_asked_to_remember_in_their_own_words(said, suggested):
    assert suggestions_from([said]) == suggested


@given(st.lists(st.text(max_size=120), max_size=12))
def test_it_answers_any_chunk_labelled_and_in_the_parsers_format(said):
    chunk = "\n".join(f"#{n} luna: {' '.join(text.split())}" for n, text in enumerate(said))

    for kind in ("summarise", "merge"):
        output = output_parse(answer(kind, [("Chunk, cleaned", chunk)]))
        assert output.shape.startswith(OFFLINE_LABEL)
        assert len(output.suggestions) <= 2


def summaries_of_the_week(settings) -> tuple[dict[str, list[str]], list[tuple[str, str]]]:
    """The week of the fixture written into the log and reflected by the offline Mirror."""
    settings.COMPANION_OFFLINE = True
    settings.MIRROR_CHUNK_TURNS = 20
    settings.MIRROR_CONTEXT_TURNS = 5
    settings.MIRROR_SUGGESTION_CAP = 2
    person, companion = WEEK["person"], WEEK["companion"]
    for turn in WEEK["turns"]:
        at = datetime.fromisoformat(turn["at"])
        Event.objects.create(ts=at, actor=person, content=f"<{person}>{turn['person']}</{person}>")
        Event.objects.create(ts=at, actor=companion, content=turn["reply"])
    assert mirror_run(force=True).status == "done"
    summaries: dict[str, list[str]] = {}
    for level, content in Summary.objects.order_by("first_event_id").values_list(
        "level", "content"
    ):
        summaries.setdefault(level, []).append(content)
    suggestions = list(TagSuggestion.objects.order_by("id").values_list("type", "content"))
    return summaries, suggestions


def facts_kept(text: str) -> list[str]:
    return [
        fact["fact"]
        for fact in WEEK["facts"]
        if all(re.search(rf"\b{re.escape(word)}", text, re.IGNORECASE) for word in fact["words"])
    ]


@pytest.mark.django_db(databases="__all__")
def test_it_leaves_the_offline_companions_replies_out_of_a_week(settings):
    summaries, _ = summaries_of_the_week(settings)

    assert [len(summaries[level]) for level in ("L0", "L1")] == [3, 1]
    for content in summaries["L0"] + summaries["L1"]:
        assert content.startswith(OFFLINE_LABEL)
        assert "(offline" not in content.replace(OFFLINE_LABEL, "")
        assert "I got your message" not in content


@pytest.mark.django_db(databases="__all__")
def test_it_keeps_the_facts_of_a_week(settings):
    summaries, _ = summaries_of_the_week(settings)

    assert len(WEEK["facts"]) == 10 and len(WEEK["turns"]) == 50
    assert len(facts_kept("\n".join(summaries["L0"]))) >= FACTS_KEPT - FACT_MARGIN
    assert len(facts_kept(summaries["L1"][0])) >= FACTS_KEPT_MERGED - FACT_MARGIN


@pytest.mark.django_db(databases="__all__")
def test_it_stages_the_pin_and_plan_the_person_asked_for_in_a_week(settings):
    _, suggestions = summaries_of_the_week(settings)

    asked = [(item["type"], item["content"]) for item in WEEK["asked"]]
    assert suggestions == asked
    plan = next(content for kind, content in suggestions if kind == "plan")
    due = due_from_text(
        plan, written_at=datetime.fromisoformat("2026-03-03T10:00:00Z"), time_zone="UTC"
    )
    assert (due.strftime("%A"), due.hour) == ("Friday", 17)
