"""The optional semantic half of event search: vectors kept beside the log, fused rankings."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connections
from django.test import override_settings
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import semantic_extra_required

semantic_extra_required()

import numpy as np  # noqa: E402  (the extra's own packages, only once it is known to be there)

from heart.ingest import event_record  # noqa: E402
from lens import semantic  # noqa: E402
from lens.encoder import Encoder, encoder  # noqa: E402
from lens.search import search  # noqa: E402
from lens.tasks import vectors_fill_task  # noqa: E402
from silentstar.router import store_for  # noqa: E402

pytestmark = pytest.mark.django_db(databases="__all__")

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
STORY = [
    ("Priya", "Morning! What's that case you were carrying yesterday?"),
    ("Theo", "Ha, my cello! First lesson with Dolores on Thursday."),
    ("Priya", "Play me something once you can."),
    ("Theo", "We ordered sushi again, nobody had the energy to cook."),
    ("Priya", "Traffic was terrible, it took an hour to get across town."),
    ("Theo", "I watched half a documentary about deep sea mining and fell asleep."),
]


def tell(story=STORY):
    return [
        event_record(text=text, actor=actor, ts=START + timedelta(minutes=n), identities=[])[0]
        for n, (actor, text) in enumerate(story)
    ]


def vector_ids() -> list[int]:
    with connections[store_for("heart", "event")].cursor() as cursor:
        cursor.execute("SELECT event_id FROM lens_event_vector ORDER BY event_id")
        return [event_id for (event_id,) in cursor.fetchall()]


def test_an_event_is_embedded_with_its_speaker_without_tags():
    assert semantic.event_sentence("luna", "<luna>hi <b>there</b></luna>") == "luna: hi there"
    assert (
        semantic.event_sentence("claude", "<claude><say>Hello.</say>\n<do>waves</do></claude>")
        == "claude: Hello. waves"
    )


def stored_vectors() -> dict[int, np.ndarray]:
    with connections[store_for("heart", "event")].cursor() as cursor:
        cursor.execute("SELECT event_id, vector FROM lens_event_vector")
        return {i: np.frombuffer(bytes(v), dtype=np.float16) for i, v in cursor.fetchall()}


def expected_vector(own: str, before: str | None, after: str | None) -> np.ndarray:
    earlier = f"{before} {own}" if before else own
    later = f"{own} {after}" if after else own
    mean = encoder().encode([own, earlier, later]).sum(axis=0) / 3
    return mean.astype(np.float16)


def test_an_events_row_holds_each_models_vector_in_the_fusions_order():
    assert [type(model) for model in semantic.sentence_models()] == [Encoder]
    assert len(semantic.RRF_WEIGHTS) == 1 + len(semantic.sentence_models())
    tell(STORY[:1])
    semantic.vectors_fill()
    (vector,) = stored_vectors().values()
    assert vector.shape == (encoder().dimensions,)


def test_an_events_vector_is_the_mean_of_the_turn_and_the_two_exchanges_it_is_in():
    events = tell(STORY[:3])
    semantic.vectors_fill()
    vectors = stored_vectors()
    first, answer, reaction = (semantic.event_sentence(*turn) for turn in STORY[:3])
    assert vectors[events[0].pk] == pytest.approx(expected_vector(first, None, answer), abs=2e-3)
    assert vectors[events[1].pk] == pytest.approx(
        expected_vector(answer, first, reaction), abs=2e-3
    )
    assert vectors[events[2].pk] == pytest.approx(expected_vector(reaction, answer, None), abs=2e-3)


def test_the_newest_events_vector_is_made_again_once_the_next_turn_is_there():
    events = tell(STORY[:2])
    semantic.vectors_fill()
    first, answer, reaction = (semantic.event_sentence(*turn) for turn in STORY[:3])
    assert stored_vectors()[events[1].pk] == pytest.approx(
        expected_vector(answer, first, None), abs=2e-3
    )
    tell(STORY[2:3])
    assert semantic.vectors_fill() == 1  # the new one was missing; the one before is redone
    assert stored_vectors()[events[1].pk] == pytest.approx(
        expected_vector(answer, first, reaction), abs=2e-3
    )


def test_the_turns_next_to_an_event_are_found_across_gaps_in_ids():
    first = tell(STORY[:1])[0]
    later = first.pk + 3  # ids a rolled-back insert used are never given again
    actor, text = STORY[1]
    with connections[store_for("heart", "event")].cursor() as cursor:
        cursor.execute(
            "INSERT INTO heart_event (id, ts, content, actor, image) VALUES (%s, %s, %s, %s, '')",
            [later, START + timedelta(minutes=1), text, actor],
        )
    semantic.vectors_fill()
    before, own = (semantic.event_sentence(*STORY[n]) for n in (0, 1))
    vectors = stored_vectors()
    assert vectors[later] == pytest.approx(expected_vector(own, before, None), abs=2e-3)
    assert vectors[first.pk] == pytest.approx(expected_vector(before, None, own), abs=2e-3)


def test_fill_writes_one_vector_per_event_once_and_shows_progress():
    events = tell()
    seen = []
    assert semantic.vectors_fill(progress=lambda done, total: seen.append((done, total))) == 6
    assert vector_ids() == [event.pk for event in events]
    assert seen[-1] == (6, 6)
    assert semantic.vectors_fill() == 0


def test_fill_can_be_kept_to_an_id_range_or_the_newest():
    events = tell()
    assert semantic.vectors_fill(event_ids=(events[1].pk, events[2].pk)) == 2
    assert semantic.vectors_fill(newest=1) == 1
    assert vector_ids() == [events[1].pk, events[2].pk, events[-1].pk]


def test_newest_reads_only_the_newest_events_not_down_the_log():
    events = tell()
    semantic.vectors_fill()
    with connections[store_for("heart", "event")].cursor() as cursor:
        cursor.execute("DELETE FROM lens_event_vector WHERE event_id = %s", [events[0].pk])
    assert semantic.vectors_fill(newest=2) == 0  # the oldest is left to a whole fill
    assert semantic.vectors_fill() == 1


def test_the_task_after_turns_writes_the_newest_missing_vectors():
    events = tell()
    assert vectors_fill_task() == len(events)
    assert vector_ids() == [event.pk for event in events]


def test_a_turn_that_shares_no_word_with_the_question_is_found_only_semantically():
    events = tell()
    semantic.vectors_fill()
    question = "Who has taken up a string instrument?"
    lexical = search(question, kinds=["event"], limit=2, neighbours=0)
    assert events[1].pk not in [hit.id for hit in lexical]
    with override_settings(SEARCH_SEMANTIC=True):
        hits = search(question, kinds=["event"], limit=2, neighbours=0)
    assert events[1].pk in [hit.id for hit in hits]
    assert [ranking[0] for ranking in semantic.semantic_rankings(question, "", [])] == [
        events[1].pk
    ]


def test_the_ranking_keeps_to_the_filters_and_the_window():
    events = tell()
    semantic.vectors_fill()
    question = "Which string instrument has Theo taken up?"
    for ranked in semantic.semantic_rankings(question, " AND e.actor = %s", ["Priya"]):
        assert set(ranked) == {events[0].pk, events[2].pk, events[4].pk}
    with override_settings(SEARCH_SEMANTIC_WINDOW=2):
        for ranked in semantic.semantic_rankings(question, "", []):
            assert set(ranked) == {events[4].pk, events[5].pk}


def test_with_no_vectors_each_model_ranks_nothing():
    tell()
    assert semantic.semantic_rankings("Who plays the cello?", "", []) == [[]]


def test_a_semantic_search_only_reads():
    tell()
    semantic.vectors_fill()
    statements = []
    connection = connections[store_for("heart", "event")]

    def record(execute, sql, params, many, context):
        statements.append(sql.lstrip().split()[0].upper())
        return execute(sql, params, many, context)

    with override_settings(SEARCH_SEMANTIC=True), connection.execute_wrapper(record):
        search("who is learning an instrument?", kinds=["event"])
    assert statements and set(statements) <= {"SELECT", "WITH"}


def ranked_from_the_store(question: str) -> list[list[int]]:
    """Each model's ranking of every stored vector, computed afresh from the rows as they are
    (newer ids first on a tie, as the window's order gives)."""
    vectors, rankings, start = stored_vectors(), [], 0
    for model in semantic.sentence_models():
        asked = model.encode_question(question)
        end = start + model.dimensions
        likeness = {i: float(v[start:end].astype(np.float32) @ asked) for i, v in vectors.items()}
        rankings.append(sorted(likeness, key=lambda i: (-likeness[i], -i)))
        start = end
    return rankings


class VectorReads:
    """The event ids whose vectors a block reads from the store."""

    def __init__(self):
        self.ids: list[int] = []

    def __call__(self, execute, sql, params, many, context):
        if "written, vector FROM" in sql:
            self.ids += params
        return execute(sql, params, many, context)


def rankings_reading(question: str) -> tuple[list[list[int]], list[int]]:
    reads = VectorReads()
    with connections[store_for("heart", "event")].execute_wrapper(reads):
        rankings = semantic.semantic_rankings(question, "", [])
    return rankings, sorted(reads.ids)


def test_vectors_are_read_once_and_again_only_when_written_again():
    events = tell(STORY[:2])
    semantic.vectors_fill()
    question = "Who has taken up a string instrument?"
    rankings, _ = rankings_reading(question)
    assert rankings == ranked_from_the_store(question)
    assert rankings_reading(question) == (rankings, [])  # held: nothing read
    newest = tell(STORY[2:3])[0]
    semantic.vectors_fill()  # the new turn's vector, and its neighbour's made again
    rankings, read = rankings_reading(question)
    assert read == [events[1].pk, newest.pk]
    assert rankings == ranked_from_the_store(question)


def test_a_vector_written_again_under_a_held_id_is_never_taken_for_the_old_one():
    # As a rolled-back conversation and the next one on the same ids would: same id, new row.
    events = tell()
    semantic.vectors_fill()
    question = "Who has taken up a string instrument?"
    assert rankings_reading(question)[0] == ranked_from_the_store(question)
    cello = stored_vectors()[events[1].pk]
    semantic.vectors_write(connections[store_for("heart", "event")], [events[5].pk], [cello])
    rankings, read = rankings_reading(question)
    assert read == [events[5].pk]
    # The two rows now hold one vector, so both lead; which of them comes first rests on the last
    # bit of a matrix product, which BLAS may compute differently for two rows of one matrix.
    expected = ranked_from_the_store(question)
    assert [sorted(ranking[:2]) for ranking in rankings] == [[events[1].pk, events[5].pk]]
    assert [sorted(ranking[:2]) for ranking in expected] == [[events[1].pk, events[5].pk]]
    assert [ranking[2:] for ranking in rankings] == [ranking[2:] for ranking in expected]


def test_the_held_copy_keeps_to_twice_the_window():
    events = tell()
    semantic.vectors_fill()
    held = semantic.held_vectors(connections[store_for("heart", "event")])
    question = "Which string instrument has Theo taken up?"
    with override_settings(SEARCH_SEMANTIC_WINDOW=2):
        for where, params in [
            (" AND e.actor = %s", ["Priya"]),  # events 2 and 4 (from 0)
            (" AND e.actor = %s", ["Theo"]),  # 3 and 5
            (" AND e.id <= %s", [events[1].pk]),  # 0 and 1: past four, only these stay
        ]:
            semantic.semantic_rankings(question, where, params)
            assert len(held.ids) <= 4
    assert held.ids.tolist() == [events[0].pk, events[1].pk]


@given(
    st.lists(st.lists(st.integers(0, 30), unique=True, max_size=12), min_size=1, max_size=3),
    st.lists(st.floats(0.1, 2), min_size=3, max_size=3),
)
def test_reciprocal_rank_fusion_adds_each_rankings_weighted_share(rankings, weights):
    weights = weights[: len(rankings)]
    fused = semantic.reciprocal_rank_fusion(rankings, k=10, weights=weights)
    expected = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, item in enumerate(ranking):
            expected[item] = expected.get(item, 0.0) + weight / (10 + rank)
    assert {item: score for score, item in fused} == pytest.approx(expected)
    assert [score for score, _ in fused] == sorted((score for score, _ in fused), reverse=True)
    leaders = {ranking[0] for ranking in rankings if ranking}
    if len(leaders) == 1 and all(rankings):
        assert fused[0][1] in leaders


def test_reciprocal_rank_fusion_lets_the_heavier_ranking_lead_a_tie():
    assert semantic.reciprocal_rank_fusion([[1, 2], [2, 1]], weights=[1, 1])[0][1] == 1
    assert semantic.reciprocal_rank_fusion([[1, 2], [2, 1]], weights=[0.7, 1])[0][1] == 2
    with pytest.raises(ValueError, match="2 rankings but 1 weights"):
        semantic.reciprocal_rank_fusion([[1], [2]], weights=[1])
