"""``python -m bench legacy``: its synthetic v5 pair, and the command on a few thousand events."""

import sqlite3

import pytest

from bench.legacy import legacy_pair_write
from events.models import Event, EventTag
from transfer.legacy import legacy_import


@pytest.mark.django_db(databases="__all__")
def test_the_pair_is_a_v5_database_that_imports_whole(tmp_path):
    gem, events = legacy_pair_write(
        tmp_path, events=400, fragments=30, edges=60, working_memory=50, runs=3
    )
    with sqlite3.connect(events) as log:
        assert log.execute("SELECT version FROM schema_version").fetchall() == [(1,)]
        tags = log.execute("SELECT count(*) FROM event_tags").fetchone()[0]
        # The seed's standalone index, filled as its triggers would have.
        assert log.execute("SELECT count(*) FROM events_fts").fetchone()[0] == 400
    log.close()

    report = legacy_import(path=gem, events_path=events)

    counts = {table: counted.imported for table, counted in report.tables.items()}
    assert counts["events"] == 400 == Event.objects.count()
    assert counts["event tags"] == tags == EventTag.objects.count()
    assert (counts["fragments"], counts["fragment edges"], counts["working memory"]) == (30, 60, 50)
    assert counts["maintenance runs"] == 3
    assert not any(counted.skipped for counted in report.tables.values())
    assert report.turn_counter == (0, 200)


@pytest.mark.store_free
def test_the_command_imports_a_pair_and_prints_its_figures(bench):
    done = bench("legacy", "--events", "3000")

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("legacy v5 pair, 3,000 events")
    assert "rows/s" in lines[0] and "events/s" in lines[0]
    assert lines[1].startswith("peak memory of the importing process (ru_maxrss):")
    assert lines[2].endswith(", 0 rows added")
    assert "events 3,000, event tags 6,000, fragments 500" in lines[3]


@pytest.mark.store_free
def test_the_command_refuses_no_events(bench):
    done = bench("legacy", "--events", "0")

    assert done.returncode == 1 and "--events must be at least 1" in done.stderr
