"""Benchmark of search: ``lens.search.search`` next to the raw FTS query on the same index.

Run through ``python -m bench search``, which calls ``search_measure`` in throwaway stores. The
log, fragments and working memory are written here, in text shaped like conversation: a
vocabulary of a few thousand words drawn by Zipf's law (a few words in nearly every turn, most
in a handful) and sentences of varied length. Queries are one to four words of the
middle of the vocabulary, some phrased as questions. (The Heart's turn benchmark,
``bench.turns``, writes its log and its messages in the same words.)

The raw figure is the bare indexed query of each kind searched, with the search's own words and
as many rows as the search ranks (events: ``limit × FUSION_POOL``, for the neighbour fusion;
the other kinds: ``limit``), by rank and nothing else. Two figures of the search:

``search``
    ``search(…)`` alone, as a reply's ``search(…)``, Mira's query and the evaluation call it: the
    ranking of the query's words, the filters' join, the neighbour fusion, the turns around each
    hit and the merging of kinds, and the passages the database makes (fragments, working
    memory, the events whose text ``lens.snippet`` cannot cut). The other events' passages are
    made only when read (``Hit.snippet``), so they are not in this figure.
``search, every passage read``
    The same search, then ``hit.snippet`` read of every hit, as the search page shows them: all
    the work a search can cost.

Each query is timed raw and through the API in turn, so load from other processes falls on
both alike, and without ``DEBUG``'s query log (which costs a statement per statement, as no
deployment pays).

With ``--semantic``, the semantic ranking's own work is timed too, without the models (their
question encoding costs the same either way): random vectors of the model's width for the
newest window of events, and random questions, ranked with the vectors read from the store at
each search (as before the process held them: ``semantic cold``) and held (``semantic held``).

Each is timed twice over: by the wall clock, and by the processor time of this process (SQLite
runs in it). On a machine shared with other work, a query of a few milliseconds loses the
processor now and then for as long again, and the longer of two queries timed in turn loses it
more often: the wall clock then inflates the search more than the raw query. Processor time
counts the work alone.
"""

import importlib
import itertools
import random
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import connections, transaction
from django.test.utils import override_settings
from django.utils import timezone

from gem.models import Fragment, WorkingMemory
from lens.search import (
    DEFAULT_KINDS,
    SEARCH_RECALL_HITS,
    SEARCH_RECALL_POOL,
    SQLITE_EVENT_WEIGHTS,
    SQLITE_FRAGMENT_WEIGHTS,
    SQLITE_WM_WEIGHTS,
    STOP_WORDS,
    Hit,
    fetch_all,
    fts5_expression,
    fusion_pool,
    query_terms,
    search,
)
from silentstar.router import store_for

LIMIT = 10
RAW_SQL = {
    "event": ("lens_event_fts", SQLITE_EVENT_WEIGHTS, "rowid"),
    "wm": ("lens_wm_fts", SQLITE_WM_WEIGHTS, "rowid"),
    "fragment": ("lens_fragment_fts", SQLITE_FRAGMENT_WEIGHTS, "key"),
}
STORE = {"event": store_for("heart", "event"), "wm": "default", "fragment": "default"}


def raw_query(kind: str, expression: str, limit: int) -> list:
    """The bare FTS5 query of one kind: the best rows by BM25, as many as the search of
    ``limit`` hits ranks. Run as the search runs its statements (``fetch_all``: on the
    driver's connection when nothing watches Django's), so the two differ by the search's
    work alone, not by Django's wrapping of one and not the other."""
    limit = raw_rows(kind, limit)
    table, weights, column = RAW_SQL[kind]
    rank = f"bm25({table}, {', '.join(str(w) for w in weights)})"
    sql = f"SELECT {column} FROM {table} WHERE {table} MATCH %s ORDER BY {rank} LIMIT %s"
    return fetch_all(connections[STORE[kind]], sql, [expression, limit])


def raw_rows(kind: str, limit: int) -> int:
    """Rows the search of ``limit`` hits ranks: events a pool for the neighbour fusion."""
    return fusion_pool(limit) if kind == "event" else limit


USERS = ["luna", "hasuki", "renki", "chloe", "strah"]
WM_TYPES = ["feeling", "thought", "pattern", "desc", "plan", "pin"]
VOCABULARY_SIZE = 4_000
ZIPF_EXPONENT = 1.0
INSERT_BATCH = 20_000
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]


def vocabulary(seed: int) -> list[str]:
    """Words by rank: common English words first (in every other turn, dropped from queries),
    then made-up words."""
    rng = random.Random(seed)
    common = sorted(STOP_WORDS)[:60]
    made_up: dict[str, None] = {}
    while len(made_up) < VOCABULARY_SIZE - len(common):
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice([2, 2, 3, 3, 4])))
        if word not in STOP_WORDS:
            made_up[word] = None
    return common + list(made_up)


class ZipfText:
    """Sentences of Zipf-distributed words, of varied length (median about twelve words)."""

    def __init__(self, words: list[str], rng: random.Random):
        self.rng = rng
        self.words = words
        weights = [1 / rank**ZIPF_EXPONENT for rank in range(1, len(self.words) + 1)]
        self.cumulative = list(itertools.accumulate(weights))

    def sentence(self, median: int = 12) -> str:
        length = max(2, min(80, round(self.rng.lognormvariate(0, 0.6) * median)))
        return " ".join(self.rng.choices(self.words, cum_weights=self.cumulative, k=length))

    def word(self) -> str:
        """One word, drawn as a sentence's are."""
        return self.rng.choices(self.words, cum_weights=self.cumulative)[0]

    def query(self) -> str:
        """One to four words of the middle of the vocabulary, a third of them as a question."""
        middle = self.words[100:3_000]
        words = " ".join(self.rng.sample(middle, self.rng.choice([1, 2, 2, 3, 4])))
        if self.rng.random() < 1 / 3:
            return f"what did {self.rng.choice(USERS)} say about {words}?"
        return words


def realistic_gem_build(
    *, events: int, fragments: int, working_memory: int, progress: Callable[[str], None], seed: int
) -> None:
    """Fill the empty throwaway stores: a conversation log, fragments and working memory."""
    text = ZipfText(vocabulary(seed), random.Random(seed))
    rng = text.rng
    start = timezone.now() - timedelta(minutes=events)
    sql = "INSERT INTO heart_event (id, ts, content, actor, image) VALUES (%s, %s, %s, %s, '')"
    for first in range(1, events + 1, INSERT_BATCH):
        rows = []
        for event_id in range(first, min(first + INSERT_BATCH, events + 1)):
            ts = start + timedelta(minutes=event_id - 1)
            if event_id % 2:
                user = rng.choice(USERS)
                rows.append((event_id, ts, f"<{user}>{text.sentence()}</{user}>", user))
            else:
                said = f"<claude><say>{text.sentence(16)}</say></claude>"
                rows.append((event_id, ts, said, "claude"))
        with transaction.atomic(using=STORE["event"]), connections[STORE["event"]].cursor() as c:
            c.executemany(sql, rows)
        progress(f"events {min(first + INSERT_BATCH - 1, events):,}/{events:,}")
    Fragment.objects.bulk_create(
        [
            Fragment(
                key=f"topic-{n}",
                ambient=text.sentence(8),
                recognition=text.sentence(30),
                inventory=text.sentence(90),
            )
            for n in range(fragments)
        ],
        batch_size=2_000,
    )
    now = timezone.now()
    items = []
    for _ in range(working_memory):
        age = timedelta(hours=rng.uniform(0, 5_000))
        items.append(
            WorkingMemory(
                event_id=rng.randint(1, events),
                type=rng.choice(WM_TYPES),
                content=text.sentence(8),
                status=rng.choice(["active", "resolved", "decayed", "dropped"]),
                turn=rng.randint(1, max(1, events // 2)),
                created_at=now - age,
                refreshed_at=now - age,
            )
        )
    WorkingMemory.objects.bulk_create(items, batch_size=5_000)
    progress(f"fragments {fragments:,}, working memory {working_memory:,}")


def search_measure(
    *,
    events: int,
    queries: int,
    progress: Callable[[str], None],
    seed: int = 5,
    semantic: bool = False,
) -> dict:
    """Build a log of ``events`` turns with 5,000 fragments and 100,000 working-memory items in
    the empty throwaway stores, then p50/p95 of the raw queries and of search: events alone,
    every kind (each searched alone, and with every hit's passage read: ``*_read``), and the
    search a turn runs (``search(…)`` in a reply: three hits, the log before the turn). With
    ``semantic``, the semantic ranking too (``semantic_measure``)."""
    if connections[STORE["event"]].vendor != "sqlite":
        raise RuntimeError("bench search measures the SQLite FTS5 index")
    began = time.perf_counter()
    with event_index_built_afterwards():
        realistic_gem_build(
            events=events,
            fragments=5_000,
            working_memory=100_000,
            progress=progress,
            seed=seed,
        )
    progress("event index built")
    build_seconds = time.perf_counter() - began
    text = ZipfText(vocabulary(seed), random.Random(seed + 1))  # the log's words, other draws
    texts = [text.query() for _ in range(queries)]
    timings: dict[str, list[float]] = defaultdict(list)  # by what is timed (``_time_query``)
    cpu_timings: dict[str, list[float]] = defaultdict(list)
    with override_settings(DEBUG=False):
        for n, query in enumerate(texts):
            _time_query(query, events=events, timings=timings, cpu_timings=cpu_timings)
            if (n + 1) % 10 == 0:
                progress(f"queries {n + 1}/{queries}")
    result: dict = {
        "events": events,
        "build_s": build_seconds,
        "queries": queries,
        "fusion_pool": fusion_pool(LIMIT),
    }
    for name, seconds in timings.items():
        result[name] = {**_percentiles(seconds), **_percentiles(cpu_timings[name], "cpu_")}
    if semantic:
        result.update(semantic_measure(events=events, queries=queries, seed=seed))
        progress("semantic ranking timed")
    return result


SEMANTIC_WIDTHS = (384,)  # all-MiniLM-L6-v2's, as a row holds it


def semantic_measure(*, events: int, queries: int, seed: int) -> dict:
    """p50/p95 of the semantic ranking over the newest window of ``events``, models left out:
    random unit vectors written for those events, then for each of ``queries`` random questions
    the window read and ranked with the vectors read from the store (``semantic_cold``, a fresh
    copy each time) and held by the process (``semantic_held``)."""
    import numpy as np  # the semantic search's requirements, only with --semantic

    from lens import semantic as ranking

    connection = connections[STORE["event"]]
    rng = np.random.default_rng(seed)
    newest = min(events, settings.SEARCH_SEMANTIC_WINDOW)
    for first in range(events - newest + 1, events + 1, INSERT_BATCH):
        ids = range(first, min(first + INSERT_BATCH, events + 1))
        vectors = np.hstack([_unit_rows(rng, len(ids), width) for width in SEMANTIC_WIDTHS])
        ranking.vectors_write(connection, ids, vectors)

    def ranked(held) -> list[list[int]]:
        ids, matrix, at = held.window(ranking.window_rows(connection, "", []))
        questions = [_unit_rows(rng, 1, width)[0] for width in SEMANTIC_WIDTHS]
        return ranking.likeness_rankings(ids, matrix, at, questions, depth=ranking.RRF_DEPTH)

    held = ranking.held_vectors(connection)
    ranked(held)  # the first search reads the window
    runs = {
        "semantic_cold": lambda: ranked(ranking.HeldVectors(connection)),
        "semantic_held": lambda: ranked(held),
    }
    timings: dict[str, list[float]] = defaultdict(list)
    cpu_timings: dict[str, list[float]] = defaultdict(list)
    with override_settings(DEBUG=False):
        for _ in range(queries):
            for name, run in runs.items():
                wall, cpu = _timed(run)
                timings[name].append(wall)
                cpu_timings[name].append(cpu)
    result: dict = {"semantic_vectors": newest}
    for name, seconds in timings.items():
        result[name] = {**_percentiles(seconds), **_percentiles(cpu_timings[name], "cpu_")}
    return result


def _unit_rows(rng, count: int, width: int):
    rows = rng.standard_normal((count, width), dtype="float32")
    return rows / (rows * rows).sum(axis=1, keepdims=True) ** 0.5


def _percentiles(seconds: list[float], prefix: str = "") -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    return {
        f"{prefix}p50_ms": statistics.median(ms),
        f"{prefix}p95_ms": ms[int(0.95 * (len(ms) - 1))],
    }


def _time_query(
    query: str,
    *,
    events: int,
    timings: dict[str, list[float]],
    cpu_timings: dict[str, list[float]],
) -> None:
    expression = fts5_expression(query_terms(query))
    runs = {
        "event_raw": lambda: raw_query("event", expression, LIMIT),
        "event_search": lambda: search(query, kinds=["event"], limit=LIMIT),
        "event_read": lambda: _passages(search(query, kinds=["event"], limit=LIMIT)),
        "all_raw": lambda: [raw_query(kind, expression, LIMIT) for kind in DEFAULT_KINDS],
        "all_search": lambda: search(query, limit=LIMIT),
        "all_read": lambda: _passages(search(query, limit=LIMIT)),
        "turn_search": lambda: search(
            query, limit=SEARCH_RECALL_HITS * SEARCH_RECALL_POOL, event_ids=(0, events)
        ),
    }
    for name, run in runs.items():
        wall, cpu = _timed(run)
        timings[name].append(wall)
        cpu_timings[name].append(cpu)


def _passages(hits: list[Hit]) -> list[str]:
    """Every hit's passage, read as the search page reads it."""
    return [hit.snippet for hit in hits]


class event_index_built_afterwards:
    """Fill the event log with the insert trigger off, then index it in one statement (the
    migration's own) and put the trigger back: the same index, built in minutes rather than
    the hour that a million separate trigger runs take. Only for throwaway stores."""

    def __enter__(self):
        self.migration = importlib.import_module("lens.migrations.0001_search_indexes")
        self.connection = connections[STORE["event"]]
        with self.connection.cursor() as cursor:
            cursor.execute("PRAGMA cache_size = -262144")  # 256 MB while the index is built
            cursor.execute("DROP TRIGGER lens_event_fts_insert")

    def __exit__(self, *exc_info):
        _, create_trigger, backfill = self.migration.SQLITE_EVENTS  # the table stayed
        with transaction.atomic(using=STORE["event"]), self.connection.cursor() as cursor:
            cursor.execute(backfill)
            cursor.execute(create_trigger)


def _timed(call: Callable[[], object]) -> tuple[float, float]:
    """Seconds the call took by the wall clock, and in processor time of this process."""
    began, began_cpu = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - began, time.process_time() - began_cpu
