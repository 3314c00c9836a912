"""The offline Mirror (``mirror.offline``): pure, extractive, labelled, and worth reading."""

import json
import re
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from events.models import Event
from events.parse import parse
from gem.due import due_from_text
from heart import offline as heart_offline
from mirror.models import Summary, TagSuggestion
from mirror.offline import (
    MERGE_NOTE_LIMIT,
    OFFLINE_LABEL,
    answer,
    everyday_words,
    notes_chosen,
    sentence_score,
    suggestions_from,
)
from mirror.output import output_parse
from mirror.passes import transcript
from mirror.route import turns_of
from mirror.run import mirror_run
from mirror.turns import turn_events
from tests.mirror.conftest import START

WEEK = json.loads((Path(__file__).parent / "data" / "offline_week.json").read_text("utf-8"))
FACTS_KEPT = 10  # of the week's 10 facts, kept by its three L0 summaries together (measured)
FACTS_KEPT_MERGED = 9  # …and by the L1 summary that merges them (measured)
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


THREE_EVENINGS = [
    [
        "(offline summary) 20 lines from luna (20 offline replies left out).",
        "- luna: we started a film and dozed off on the sofa halfway through, classic Sunday",
        "- luna: I've found a new dentist, a man called Okonkwo, he is very gentle.",
        "- luna: see you on Sunday then",
        "- luna: so tired today",
        "- luna: lol my tea went cold again",
    ],
    [
        "(offline summary) 20 lines from luna (20 offline replies left out). Feelings named: sad.",
        "- luna: we started a film and dozed off on the sofa halfway through, classic Sunday",
        "- luna: the landlord wants 1250 euros a month for the flat now",
        "- luna: we started a film, dozed off on the sofa halfway through, classic Monday",
        "- luna: back to work on Monday, ugh",
        "- luna: talk tomorrow, sleep well",
    ],
    [
        "(offline summary) 20 lines from luna (20 offline replies left out).",
        "- luna: we started a film and dozed off on the sofa again, classic Sunday",
        "- luna: We started a film and dozed off on the sofa halfway through, classic Sunday!",
        "- luna: happy Friday everyone",
        "- luna: we started a film and dozed off on the sofa halfway through, classic Sunday",
        "- luna: Went up to Groningen for the day to see the old university.",
    ],
]


def merged(*parts: list[str]):
    body = "\n\n".join(
        f"### L0, events {n}-{n}\n" + "\n".join(part) for n, part in enumerate(parts)
    )
    return output_parse(answer("merge", [("Previous summary", ""), ("Summaries to merge", body)]))


def words_of(note: str) -> frozenset[str]:
    return frozenset(re.findall(r"[^\W_]+", note.casefold()))


def test_it_merges_the_shapes_of_its_parts():
    output = merged(["I met Ana at the station."], ["We went to Delft on Saturday."])
    assert output.shape == f"{OFFLINE_LABEL} 2 summaries merged."
    assert output.notes == ("- I met Ana at the station.", "- We went to Delft on Saturday.")


def test_it_merges_a_repeated_line_once_and_keeps_the_names_numbers_and_places():
    output = merged(*THREE_EVENINGS)

    assert sum("dozed off on the sofa" in note for note in output.notes) == 1
    assert output.notes[0].endswith("halfway through, classic Sunday")  # the first one said
    assert any("Okonkwo" in note for note in output.notes)
    assert any("1250 euros" in note for note in output.notes)
    assert any("Groningen" in note for note in output.notes)
    assert not any("Friday" in note or "tomorrow" in note for note in output.notes)


def test_it_says_in_the_shape_what_a_merge_left_out():
    output = merged(*THREE_EVENINGS)

    assert output.shape == (
        f"{OFFLINE_LABEL} 3 summaries merged (5 repeated notes and 5 notes with nothing to keep"
        " left out). Feelings named: tired, sad, happy."
    )
    many = [f"- luna: I had coffee with {name} at the market." for name in NAMES]
    output = merged(many[:7], many[7:], ["- luna: hm ok"])
    assert len(output.notes) == MERGE_NOTE_LIMIT
    assert output.shape.endswith(
        "merged (1 note with nothing to keep and 2 notes over the limit left out)."
    )


NAMES = ["Ana", "Bram", "Chidi", "Dora", "Emeka", "Femke", "Goran", "Hana", "Ines", "Joost"]
NAMES += ["Kofi", "Lieve", "Mirela", "Noor"]


def test_it_keeps_a_note_whose_name_or_number_changed():
    output = merged(
        ["- luna: the new flat costs 1250 euros a month with the heating"],
        ["- luna: the new flat costs 1300 euros a month with the heating"],
        ["- luna: my cousin Femke moved in with her boyfriend last week"],
        ["- luna: my cousin Noor moved in with her boyfriend last week"],
    )
    assert len(output.notes) == 4


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
    "said",
    [
        "see you on Saturday then",
        "back to work on Monday, ugh",
        "have a lovely weekend",
        "talk tomorrow, sleep well",
        "Sundays are always like this",
        "Good Morning to you all",
        "you may want a coat",
    ],
)
def test_it_scores_a_sentence_with_only_a_weekday_or_today_as_nothing(said):
    assert sentence_score(said) == 0


def test_it_counts_a_weekday_only_beside_something_else_and_dates_on_their_own():
    assert sentence_score("I see Marloes on Friday") > sentence_score("I see Marloes") > 0
    assert sentence_score("we moved the party to Friday, then") > 0  # first-person news
    assert sentence_score("the wedding is in October") > 0
    assert sentence_score("the wedding is in May this year") > 0
    assert sentence_score("the boiler man comes on the 14th") > 0
    assert sentence_score("dinner at 7pm tonight, ok?") > sentence_score("dinner at 7pm, ok?")


@pytest.mark.parametrize(
    ("capitalised", "lower"),
    [
        ("I see Marloes on Friday", "I see Marloes on friday"),
        ("we fly to Lisbon in September", "we fly to Lisbon in september"),
        ("see you Tomorrow, Ana", "see you tomorrow, Ana"),
    ],
)
def test_it_never_counts_a_capitalised_weekday_or_month_as_a_name(capitalised, lower):
    assert sentence_score(capitalised) == sentence_score(lower)


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
    assert suggestions_from([("luna", said)]) == [
        (kind, "luna", words) for kind, words in suggested
    ]


def suggested(*lines: str) -> list[tuple[str, str, str]]:
    output = output_parse(answer("summarise", [("Chunk, cleaned", "\n".join(lines))]))
    return [(s.type, s.subject, s.content) for s in output.suggestions]


def test_its_suggestions_say_who_asked_for_them():
    assert suggested(
        "#1 luna: can you remember that I hate cilantro?",
        "#2 claude (say): I will.",
        "#3 renki: remind me to call the physio on friday at 5pm",
    ) == [("pin", "luna", "I hate cilantro"), ("plan", "renki", "call the physio on friday at 5pm")]
    assert suggested("#5 unknown: remember that the door sticks") == [
        ("pin", "", "the door sticks")
    ]


@given(st.lists(st.text(max_size=120), max_size=12))
def test_it_answers_any_chunk_labelled_and_in_the_parsers_format(said):
    chunk = "\n".join(f"#{n} luna: {' '.join(text.split())}" for n, text in enumerate(said))

    for kind in ("summarise", "merge"):
        output = output_parse(answer(kind, [("Chunk, cleaned", chunk)]))
        assert output.shape.startswith(OFFLINE_LABEL)
        assert len(output.suggestions) <= 2


NOTE_WORDS_DRAWN = ["we", "the", "a", "film", "sofa", "Sunday", "Monday", "rent", "900", "950"]
NOTE_WORDS_DRAWN += ["Ana", "Noor", "Leiden", "I", "got", "moved", "my", "cat", "today", "May"]
NOTE_TEXT = st.one_of(
    st.lists(st.sampled_from(NOTE_WORDS_DRAWN), min_size=1, max_size=14).map(" ".join),
    st.text(max_size=80).map(lambda text: " ".join(text.replace(":", " ").split())),
)


@given(st.lists(st.lists(NOTE_TEXT, max_size=10), min_size=1, max_size=4))
def test_it_merges_any_notes_within_the_limit_and_without_repeats(parts):
    output = merged(*[[f"- luna: {text}" for text in part] for part in parts])

    assert len(output.notes) <= MERGE_NOTE_LIMIT
    said = [words_of(note) for note in output.notes]
    assert len(set(said)) == len(said)
    counted = re.findall(r"(\d+) (?:repeated )?notes?\b", output.shape)
    assert len(output.notes) + sum(map(int, counted)) == sum(map(len, parts))


TAG_WORDS = st.lists(st.sampled_from(["tea", "honey", "walks", "Ana", "5pm", "dusk"]), min_size=1)


@given(st.lists(st.tuples(st.sampled_from(["pin", "plan"]), TAG_WORDS), min_size=1, max_size=5))
def test_the_mirror_never_reads_two_tags_words_as_one(tags):
    content = "".join(f"<{kind}>{' '.join(words)}</{kind}>" for kind, words in tags)
    events = turn_events([(1, START, "luna", f"<luna>{content}</luna>")], sides={"luna": "user"})

    (line,) = transcript(turns_of(events)).splitlines()

    said = line.removeprefix("#1 luna: ")
    assert said.replace(";", " ").split() == [word for _, words in tags for word in words]


@pytest.mark.django_db(databases="__all__")
def test_a_summary_keeps_a_persons_adjacent_tags_apart(log, settings):
    settings.COMPANION_OFFLINE = True
    reply = "<say>(offline — no API key is set) I got your message.</say>"
    log.turn("<pin>tea with honey</pin><pin>walks at dusk with Ana</pin>", reply, actor="luna")
    log.turn("<plan>water the plants tonight</plan><plan>call Noor at 5pm</plan>", reply)

    assert mirror_run(force=True).status == "done"

    summary = Summary.objects.get().content
    assert "- luna: tea with honey; walks at dusk with Ana" in summary
    assert "- luna: water the plants tonight; call Noor at 5pm" in summary


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


def test_numbers_written_out_and_names_introduced_carry_a_sentence():
    assert sentence_score("the test says I've been allergic since I was six") > 0
    assert sentence_score("Grandad turns ninety next spring") > 0
    assert sentence_score("the new kitten is called Biscuit") > sentence_score(
        "the new kitten likes Biscuit"
    )


def test_need_is_no_news_but_a_past_tense_is():
    assert sentence_score("I think I need a quiet evening") == 0
    assert sentence_score("I painted the kitchen wall green") > 0


def test_a_capitalised_word_that_comes_back_in_many_notes_is_no_name():
    notes = [
        ("luna", "We put on a slow Danish film and I dozed off"),
        ("luna", "Another Danish film tonight, lovely"),
        ("luna", "The Danish one was better than I thought"),
        ("luna", "My cousin Ilse moved to Aarhus for the new job"),
    ]
    assert everyday_words([text for _, text in notes]) == {"danish"}
    # Only the note with news is chosen: the others were chosen for "Danish" before.
    assert notes_chosen(notes, limit=1) == [notes[3]]
    assert sentence_score("We put on a slow Danish film", everyday=frozenset({"danish"})) == 0


def test_it_leaves_out_the_offline_companions_replies_as_it_writes_them_now():
    """Its replies open with what they say, not with a label: the Mirror knows them by that."""
    said = [
        "I finally booked the dentist, Okonkwo, for the 14th.",
        "",
        "Mina is coming over on Friday with her new dog.",
    ]
    lines = []
    for number, message in enumerate(said, start=1):
        assembled = f"## Message\nluna:\n{message}"
        answered = parse(heart_offline.reply(system=[], messages=[user_message(assembled)]))
        lines.append(f"#{2 * number - 1} luna: {message}")
        lines += [f"#{2 * number} claude (say): {s.text}" for s in answered.segments]

    output = output_parse(answer("summarise", [("Chunk, cleaned", "\n".join(lines))]))

    assert output.shape.startswith(
        f"{OFFLINE_LABEL} 3 lines from luna (3 offline replies left out)"
    )
    assert "I got your message" not in output.content
    assert "came through empty" not in output.content


def user_message(text: str) -> dict:
    return {"role": "user", "content": text}
