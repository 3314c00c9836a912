"""Benchmark of search: ``lens.search.search`` next to the raw FTS query on the same index.

Run through ``manage.py bench search``, which builds the Heart's synthetic Gem (``heart.bench``)
in throwaway stores and calls ``search_measure`` there. The raw figure is the bare indexed
query, best ``limit`` rows by rank and nothing else; the search adds the query words, the
filters' join, the neighbour fusion, the snippets, the turns around each hit and the merging of
kinds. Each query is timed raw and through the API in turn, so load from other processes falls
on both alike.
"""

import importlib
import random
import statistics
import time
from collections.abc import Callable

from django.db import connections, transaction

from heart.bench import WORDS, synthetic_gem_build
from lens.search import (
    FUSION_POOL,
    KINDS,
    SQLITE_EVENT_WEIGHTS,
    SQLITE_FRAGMENT_WEIGHTS,
    SQLITE_WM_WEIGHTS,
    fts5_expression,
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
    """The bare FTS5 query of one kind: the best ``limit`` rows by BM25."""
    table, weights, column = RAW_SQL[kind]
    rank = f"bm25({table}, {', '.join(str(w) for w in weights)})"
    sql = f"SELECT {column} FROM {table} WHERE {table} MATCH %s ORDER BY {rank} LIMIT %s"
    with connections[STORE[kind]].cursor() as cursor:
        cursor.execute(sql, [expression, limit])
        return cursor.fetchall()


def search_measure(
    *, events: int, queries: int, progress: Callable[[str], None], seed: int = 5
) -> dict:
    """Build the synthetic Gem of ``bench turns`` (its sizes but ``events``) in the empty
    throwaway stores, then p50/p95 of search and of the raw queries, for events alone and for
    every kind."""
    if connections[STORE["event"]].vendor != "sqlite":
        raise RuntimeError("bench search measures the SQLite FTS5 index")
    began = time.perf_counter()
    with _event_index_built_afterwards():
        synthetic_gem_build(
            events=events,
            fragments=5_000,
            edges=20_000,
            working_memory=100_000,
            active=1_000,
            progress=progress,
        )
    progress("event index built")
    build_seconds = time.perf_counter() - began
    rng = random.Random(seed)
    texts = [" ".join(rng.sample(WORDS, rng.choice([1, 2, 3]))) for _ in range(queries)]
    timings: dict[str, list[float]] = {
        "event_raw": [],
        "event_search": [],
        "all_raw": [],
        "all_search": [],
    }
    for n, text in enumerate(texts):
        expression = fts5_expression(query_terms(text))
        runs = {
            "event_raw": lambda e=expression: raw_query("event", e, LIMIT),
            "event_search": lambda t=text: search(t, kinds=["event"], limit=LIMIT),
            "all_raw": lambda e=expression: [raw_query(kind, e, LIMIT) for kind in KINDS],
            "all_search": lambda t=text: search(t, limit=LIMIT),
        }
        for name, run in runs.items():
            timings[name].append(_timed(run))
        if (n + 1) % 10 == 0:
            progress(f"queries {n + 1}/{queries}")
    result: dict = {
        "events": events,
        "build_s": build_seconds,
        "queries": queries,
        "fusion_pool": FUSION_POOL * LIMIT,
    }
    for name, seconds in timings.items():
        ms = sorted(s * 1000 for s in seconds)
        result[name] = {"p50_ms": statistics.median(ms), "p95_ms": ms[int(0.95 * (len(ms) - 1))]}
    return result


class _event_index_built_afterwards:
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


def _timed(call: Callable[[], object]) -> float:
    began = time.perf_counter()
    call()
    return time.perf_counter() - began
