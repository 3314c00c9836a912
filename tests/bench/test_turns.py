"""The turns benchmark's Gem and its timing: the index built after the log is the trigger's."""

import statistics
from datetime import UTC

import pytest
from django.db import connections
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from bench.turns import TurnRunner, overhead_figures, synthetic_gem_build
from events.models import Event
from silentstar.router import store_for

pytestmark = pytest.mark.django_db(databases="__all__")


def events_store():
    return connections[store_for("heart", "event")]


def index_rows(cursor):
    cursor.execute("SELECT rowid, content, speaker, dated, context FROM lens_event_fts ORDER BY 1")
    return cursor.fetchall()


def date_words(ts) -> str:
    """The trigger's date in words (UTC): ``Monday 8 May 2023 afternoon``."""
    ts = ts.astimezone(UTC)
    parts = [(5, "night"), (12, "morning"), (18, "afternoon"), (22, "evening"), (24, "night")]
    part = next(name for end, name in parts if ts.hour < end)
    return f"{ts:%A} {ts.day} {ts:%B} {ts.year} {part}"


def test_it_indexes_the_log_as_its_insert_trigger_does():
    if events_store().vendor != "sqlite":
        pytest.skip("the turns benchmark builds SQLite stores only")
    with events_store().cursor() as cursor:
        cursor.execute("PRAGMA cache_size")
        cache_before = cursor.fetchone()
    synthetic_gem_build(
        events=200, fragments=20, edges=30, working_memory=40, active=10, progress=lambda _: None
    )
    with events_store().cursor() as cursor:
        built = index_rows(cursor)
        cursor.execute("SELECT id, content, actor FROM heart_event ORDER BY id")
        log = cursor.fetchall()
        cursor.execute("PRAGMA cache_size")
        assert cursor.fetchone() == cache_before  # the build's larger cache is given back
    assert [row[0] for row in built] == [row[0] for row in log] and len(log) == 200
    said_at = dict(Event.objects.values_list("id", "ts"))
    for (event_id, content, speaker, dated, context), (_, said, actor) in zip(
        built, log, strict=True
    ):
        assert (event_id, content, speaker) == (event_id, said, actor)
        assert dated == date_words(said_at[event_id])
        # The trigger's context: the two events before, newest first.
        earlier = [row[1] for row in log if row[0] < event_id][-2:]
        assert context == " ".join(reversed(earlier))
    # The trigger is back: a new event is indexed on its own.
    later = Event.objects.create(ts=timezone.now(), content="a later word", actor="luna")
    with events_store().cursor() as cursor:
        cursor.execute("SELECT content, context FROM lens_event_fts WHERE rowid = %s", [later.pk])
        assert cursor.fetchone() == ("a later word", f"{log[-1][1]} {log[-2][1]}")


def test_it_times_every_turn_and_asks_the_same_messages_however_they_are_batched(settings):
    settings.COMPANION_OFFLINE = True
    one_at_a_time = TurnRunner(seed=3)
    overheads = one_at_a_time.run(1) + one_at_a_time.run(1)
    assert len(overheads) == 2 and all(ms > 0 for ms in overheads)
    assert TurnRunner(seed=3).run(2) and one_at_a_time.done == 2
    asked = list(
        Event.objects.filter(actor="luna").order_by("pk").values_list("content", flat=True)
    )
    assert len(asked) == 4 and asked[:2] == asked[2:]


@given(st.lists(st.floats(0, 1_000), min_size=1, max_size=300))
def test_it_reports_the_median_the_95th_percentile_and_the_worst(overheads):
    figures = overhead_figures(overheads)
    ordered = sorted(overheads)
    assert figures["turns"] == len(overheads)
    assert figures["p50_ms"] == statistics.median(overheads)
    assert figures["p95_ms"] == ordered[int(0.95 * (len(ordered) - 1))]
    assert figures["max_ms"] == max(overheads)
