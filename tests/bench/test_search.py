"""The search benchmark's text: conversation-shaped, so a query matches a part of the log."""

import random
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connections

from bench.search import (
    SEMANTIC_WIDTHS,
    STORE,
    VOCABULARY_SIZE,
    ZipfText,
    _time_query,
    raw_rows,
    semantic_measure,
    vocabulary,
)
from heart.ingest import event_record
from lens.search import fusion_pool, query_terms
from lens.snippet import snippet
from tests.conftest import semantic_extra_required


@pytest.mark.store_free
def test_the_vocabulary_is_the_same_for_a_seed():
    words = vocabulary(5)
    assert words == vocabulary(5) != vocabulary(6)
    assert len(words) == len(set(words)) == VOCABULARY_SIZE


@pytest.mark.store_free
def test_word_frequencies_fall_with_rank_and_sentences_vary_in_length():
    text = ZipfText(vocabulary(5), random.Random(1))
    sentences = [text.sentence() for _ in range(3_000)]
    counts = Counter(word for sentence in sentences for word in sentence.split())
    ranked = text.words
    assert counts[ranked[0]] > 10 * counts[ranked[100]] > 0
    assert sum(counts[word] > 0 for word in ranked) > VOCABULARY_SIZE // 2
    lengths = {len(sentence.split()) for sentence in sentences}
    assert min(lengths) <= 4 and max(lengths) >= 30


@pytest.mark.store_free
def test_queries_search_for_words_of_the_log_but_not_its_commonest():
    text = ZipfText(vocabulary(5), random.Random(2))
    common = set(text.words[:100])
    for _ in range(200):
        terms = query_terms(text.query())
        assert terms and not set(terms) & common
        assert set(terms) <= set(text.words) | {"luna", "hasuki", "renki", "chloe", "strah"}


@pytest.mark.store_free
def test_the_raw_query_ranks_as_many_rows_as_the_search_it_is_compared_with():
    assert raw_rows("event", 10) == fusion_pool(10) > 10  # the pool the neighbour fusion picks from
    assert raw_rows("wm", 10) == raw_rows("fragment", 10) == 10


@pytest.mark.django_db(databases="__all__")
def test_each_query_is_timed_raw_searched_and_searched_with_every_passage_read(monkeypatch):
    if connections[STORE["event"]].vendor != "sqlite":
        pytest.skip("bench search measures the SQLite FTS5 index")
    start = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    texts = ["the lighthouse at dusk", "a walk", "lighthouse keepers"]
    for n, text in enumerate(texts):
        event_record(text=text, actor="ana", ts=start + timedelta(minutes=n), identities=[])
    made = []

    def counted(*args, **kwargs):
        made.append(args)
        return snippet(*args, **kwargs)

    monkeypatch.setattr("lens.search.fts5_snippet", counted)
    timings, cpu_timings = defaultdict(list), defaultdict(list)
    _time_query("lighthouse", events=3, timings=timings, cpu_timings=cpu_timings)
    assert (
        set(timings)
        == set(cpu_timings)
        == {
            "event_raw",
            "event_search",
            "event_read",
            "all_raw",
            "all_search",
            "all_read",
            "turn_search",
        }
    )
    assert all(len(seconds) == 1 and seconds[0] >= 0 for seconds in timings.values())
    # Each event hit's passage (the walk comes between the two by its neighbours' scores) is
    # made once for events alone and once for every kind: never by the searches alone.
    assert sorted(text for text, _ in made) == sorted(texts * 2)


@pytest.mark.django_db(databases="__all__")
def test_the_semantic_ranking_is_timed_over_the_newest_window_read_and_held(settings):
    semantic_extra_required()
    settings.SEARCH_SEMANTIC_WINDOW = 4
    at = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    with connections[STORE["event"]].cursor() as cursor:  # ids from 1, as the benchmark's log
        cursor.executemany(
            "INSERT INTO heart_event (id, ts, content, actor, image) VALUES (%s, %s, %s, %s, '')",
            [(n, at + timedelta(minutes=n), f"turn {n}", "ana") for n in range(1, 7)],
        )
    result = semantic_measure(events=6, queries=3, seed=1)
    assert result["semantic_vectors"] == 4
    for name in ("semantic_cold", "semantic_held"):
        assert set(result[name]) == {"p50_ms", "p95_ms", "cpu_p50_ms", "cpu_p95_ms"}
    with connections[STORE["event"]].cursor() as cursor:
        cursor.execute("SELECT event_id, length(vector) FROM lens_event_vector ORDER BY event_id")
        widths = 2 * sum(SEMANTIC_WIDTHS)
        assert cursor.fetchall() == [(n, widths) for n in (3, 4, 5, 6)]
