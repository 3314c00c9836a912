"""manage.py import_silentstar (``transfer.legacy``): legacy databases of every schema version,
built here from the seeds' schemas (v1: the draft of seed 002; v2: seed 000; v3: v2 and its
``turn`` column; v4: v3 and the FTS5 tables with their nine triggers; v5: seed 001, the Gem and
its events file), imported and compared row by row with what they hold."""

import sqlite3
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connections

from events.models import Event, EventTag
from gem.models import (
    Fragment,
    FragmentEdge,
    FragmentSource,
    State,
    WorkingMemory,
    WorkingMemoryRef,
)
from gem.state import PENDING_RECALL, TURN_COUNTER, state_get, state_set
from lens.search import search
from mirror.models import MirrorRun
from transfer.legacy import LegacyError, legacy_import

pytestmark = pytest.mark.django_db(databases="__all__")

OWNER_ZONE = "Europe/Berlin"  # naive legacy times are read in the owner's zone

# --- The seeds' schemas -----------------------------------------------------------------------

EVENTS = """
CREATE TABLE events (id INTEGER PRIMARY KEY, ts TEXT NOT NULL, content TEXT NOT NULL,
                     actor TEXT, image_path TEXT);
CREATE TABLE event_tags (event_id INTEGER REFERENCES events, tag TEXT NOT NULL,
                         PRIMARY KEY (event_id, tag));
"""
# Seed 002, the v1 draft: TIMESTAMP columns, plans instead of working memory; the migration
# history of seed 001 gives v1 its state table. No schema_version: v1 is told by its plans.
V1 = """
CREATE TABLE events (id INTEGER PRIMARY KEY, ts TIMESTAMP NOT NULL, content TEXT NOT NULL,
                     actor TEXT, image_path TEXT);
CREATE TABLE event_tags (event_id INTEGER REFERENCES events, tag TEXT NOT NULL,
                         PRIMARY KEY (event_id, tag));
CREATE TABLE plans (id INTEGER PRIMARY KEY, event_id INTEGER REFERENCES events, actor TEXT,
                    summary TEXT NOT NULL, due TIMESTAMP, status TEXT NOT NULL,
                    created_at TIMESTAMP NOT NULL);
CREATE TABLE fragments (key TEXT PRIMARY KEY, ambient TEXT, recognition TEXT, inventory TEXT,
                        created_at TIMESTAMP NOT NULL, updated_at TIMESTAMP NOT NULL);
CREATE TABLE fragment_sources (fragment_key TEXT REFERENCES fragments,
                               event_id INTEGER REFERENCES events,
                               PRIMARY KEY (fragment_key, event_id));
CREATE TABLE fragment_edges (source_key TEXT REFERENCES fragments,
                             target_key TEXT REFERENCES fragments, relation TEXT,
                             PRIMARY KEY (source_key, target_key));
CREATE TABLE state (key TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at TEXT NOT NULL);
"""
# Seed 000 (v2), less the event log (v5 moves it to its own file).
GEM_V2 = """
CREATE TABLE working_memory (id INTEGER PRIMARY KEY, event_id INTEGER REFERENCES events,
    type TEXT NOT NULL, content TEXT NOT NULL, subject TEXT, actor TEXT,
    status TEXT NOT NULL DEFAULT 'active', due TEXT, created_at TEXT NOT NULL,
    refreshed_at TEXT NOT NULL, resolved_at TEXT);
CREATE TABLE working_memory_refs (wm_id INTEGER REFERENCES working_memory,
    fragment_key TEXT REFERENCES fragments, PRIMARY KEY (wm_id, fragment_key));
CREATE TABLE fragments (key TEXT PRIMARY KEY, ambient TEXT, recognition TEXT, inventory TEXT,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE fragment_sources (fragment_key TEXT REFERENCES fragments,
    event_id INTEGER REFERENCES events, PRIMARY KEY (fragment_key, event_id));
CREATE TABLE fragment_edges (source_key TEXT REFERENCES fragments,
    target_key TEXT REFERENCES fragments, relation TEXT, PRIMARY KEY (source_key, target_key));
CREATE TABLE state (key TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE maintenance_runs (id INTEGER PRIMARY KEY, started_at TEXT NOT NULL,
    completed_at TEXT, run_type TEXT NOT NULL);
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE _plans_retired (id INTEGER PRIMARY KEY, summary TEXT);
"""
V3_TURN = "ALTER TABLE working_memory ADD COLUMN turn INTEGER;"  # v3: the creation turn


def fts(table: str, columns: tuple[str, ...], *, rowid: str, standalone: bool = False) -> str:
    """An FTS5 index of ``table`` and its three sync triggers (v4): content-sync, or standalone
    with DELETE as v5's events file has it."""
    listed = ", ".join(columns)
    new = ", ".join(f"new.{c}" for c in columns)
    old = ", ".join(f"old.{c}" for c in columns)
    if standalone:
        create = f"CREATE VIRTUAL TABLE {table}_fts USING fts5({listed});"
        remove = f"DELETE FROM {table}_fts WHERE rowid = old.{rowid};"
    else:
        create = (
            f"CREATE VIRTUAL TABLE {table}_fts USING fts5({listed}, content='{table}', "
            f"content_rowid='{rowid}');"
        )
        remove = (
            f"INSERT INTO {table}_fts({table}_fts, rowid, {listed}) "
            f"VALUES ('delete', old.{rowid}, {old});"
        )
    add = f"INSERT INTO {table}_fts(rowid, {listed}) VALUES (new.{rowid}, {new});"
    return f"""{create}
CREATE TRIGGER {table}_ai AFTER INSERT ON {table} BEGIN {add} END;
CREATE TRIGGER {table}_ad AFTER DELETE ON {table} BEGIN {remove} END;
CREATE TRIGGER {table}_au AFTER UPDATE ON {table} BEGIN {remove} {add} END;
"""


FTS_GEM = fts("fragments", ("key", "ambient", "recognition", "inventory"), rowid="rowid") + fts(
    "working_memory", ("content", "subject", "type"), rowid="id"
)
FTS_EVENTS = fts("events", ("content", "actor"), rowid="id")
FTS_EVENTS_STANDALONE = fts("events", ("content", "actor"), rowid="id", standalone=True)

# --- What they hold ---------------------------------------------------------------------------

ROWS = {
    "events": [
        (1, "2026-02-10T09:15:00", "<luna><say>Good morning ☀️ — the lighthouse again?</say></luna>",
         "luna", None),
        (2, "2026-02-10T09:15:04.250000",
         "<claude><say>Morning, Luna.</say><do>smiles</do>"
         "<feeling>glad she came back to the lighthouse</feeling>"
         "<thought>She seems calmer near the sea.</thought></claude>", "claude", None),
        (3, "2026-02-10 21:40:00",
         "<hasuki>見て、灯台の写真 <plan>visit the lighthouse friday at 5pm</plan>"
         "<pin>tea without sugar ☕</pin><desc>lighthouse-photo: white tower, red door</desc>"
         "</hasuki>", "hasuki", "images/2026/02/lighthouse.jpg"),
        (4, "2026-02-11T08:00:00Z",
         "<claude><say>Noted.</say><pattern>asks about the sea on Mondays</pattern></claude>",
         "claude", None),
        (5, "2026-02-11T10:30:00+02:00", "  spaces kept  \n and a second line ", None, None),
        (6, "2026-03-29T02:30:00", "<renki>an hour that Berlin skips</renki>", "renki",
         "/srv/silentstar/uploads/renki.png"),
    ],
    "event_tags": [
        (1, "luna"), (1, "say"), (2, "claude"), (2, "say"), (2, "do"), (2, "feeling"),
        (3, "hasuki"), (3, "plan"), (4, "claude"), (4, "say"), (6, "renki"),
        (99, "say"),  # of no event: skipped
    ],
    "fragments": [
        ("fairy", "Soft pastel clothes, lace.", "Luna's fairy kei wardrobe.", None,
         "2026-01-05T12:00:00", "2026-02-01T08:30:00"),
        ("lighthouse", "The white tower on the point 🗼.", "They walk there on Fridays.",
         "Lamp, 112 stairs, red door.", "2026-01-06T12:00:00", "2026-01-06T12:00:00"),
        ("luna", "One of five; quiet, likes the sea.", None, None, "2026-01-05T12:00:00Z",
         "2026-02-12T10:00:00+01:00"),
    ],
    "fragment_edges": [
        ("fairy", "luna", "person-hobby"),
        ("lighthouse", "luna", "place"),
        ("luna", "lighthouse", None),
        ("fairy", "fairy", "itself"),  # a loop: skipped
        ("fairy", "jirai", "aesthetic-overlap"),  # no such fragment: skipped
    ],
    "fragment_sources": [("lighthouse", 3), ("fairy", 1), ("nowhere", 2)],  # the last: skipped
    # id, event_id, type, content, subject, actor, status, due, turn, created, refreshed, resolved
    "working_memory": [
        (1, 2, "feeling", "glad she came back to the lighthouse", None, "claude", "superseded",
         None, 1, "2026-02-10T09:15:04", "2026-02-10T09:15:04", "2026-02-10T21:40:05"),
        (2, 2, "feeling", "a feeling of far more than fifteen words that was recorded whole "
         "long ago and must stay whole when it is imported", None, "claude", "active", None,
         2, "2026-02-10T21:40:05", "2026-02-11T08:00:00", None),
        (3, 3, "plan", "visit the lighthouse friday at 5pm", None, "hasuki", "active",
         "2026-02-13T17:00:00", 2, "2026-02-10T21:40:00", "2026-02-10T21:40:00", None),
        (4, 2, "thought", "she seems calmer near the sea", None, "claude", "resolved", None, 1,
         "2026-02-10T09:15:04", "2026-02-10T09:15:04", "2026-02-11T08:00:00Z"),
        (5, 3, "desc", "white tower, red door", "lighthouse-photo", "claude", "decayed", None,
         2, "2026-02-10T21:40:05", "2026-02-10T21:40:05", "2026-02-14T00:00:00"),
        (6, 3, "pin", "tea without sugar ☕", None, "hasuki", "dropped", None, 2,
         "2026-02-10T21:40:00", "2026-02-10T21:40:00", "2026-02-11T10:30:00+02:00"),
        (7, None, "secret", "the surprise party", None, "claude", "active", None, 2,
         "2026-02-10T21:40:05", "2026-02-10T21:40:05", None),
        (8, 4, "pattern", "asks about the sea on Mondays", "luna", "claude", "active", None, 3,
         "2026-02-11T08:00:01", "2026-02-11T08:00:01", None),
        (9, 4, "rp", "a type nobody knows", None, "claude", "active", None, 3,
         "2026-02-11T08:00:01", "2026-02-11T08:00:01", None),  # skipped
    ],
    "working_memory_refs": [
        (3, "lighthouse"), (5, "lighthouse"), (8, "luna"),
        (7, "nowhere"), (99, "luna"),  # no such fragment, no such item: skipped
    ],
    # v1: id, event_id, actor, summary, due, status, created_at
    "plans": [
        (1, 3, "hasuki", "visit the lighthouse friday at 5pm", "2026-02-13T17:00:00", "active",
         "2026-02-10T21:40:00"),
        (2, 1, "luna", "buy lace for the fairy dress", None, "done", "2026-02-10T09:15:00"),
        (3, 1, "luna", "call the tower keeper", "2026-02-12T10:00:00", "cancelled",
         "2026-02-10T09:15:00"),
        (4, None, None, "swim before winter", "2025-11-01T00:00:00Z", "expired",
         "2025-10-01T12:00:00"),
    ],
    "state": [
        ("current_turn", "3", "2026-02-11T10:30:00"),
        ("pending_recall", '["fairy", {"key": "luna", "deep": false}]', "2026-02-11T08:00:00"),
        ("wake_note", "bootstrap done ✓", "2026-01-05T12:20:00"),
    ],
    "maintenance_runs": [
        (1, "2026-01-05T12:00:00", "2026-01-05T12:20:00", "bootstrap"),
        (2, "2026-02-08T03:00:00", None, "weekly"),
    ],
}  # fmt: skip
SKIPPED_EDGES = {("fairy", "fairy"), ("fairy", "jirai")}
SKIPPED_ITEMS = {9}


def insert(connection: sqlite3.Connection, table: str, rows: list[tuple]) -> None:
    if rows:
        marks = ", ".join("?" * len(rows[0]))
        connection.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)


def legacy_build(folder: Path, version: int, *, rows: dict = ROWS) -> tuple[Path, Path | None]:
    """A legacy database of ``version`` holding ``rows``: its file, and v5's events file."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ("silentstar.sqlite" if version == 5 else "memory.sqlite")
    gem = sqlite3.connect(path)
    events = gem
    events_path = None
    if version == 1:
        gem.executescript(V1)
    else:
        gem.executescript((EVENTS if version < 5 else "") + GEM_V2)
        if version >= 3:
            gem.executescript(V3_TURN)
        if version >= 4:
            gem.executescript(FTS_GEM + (FTS_EVENTS if version == 4 else ""))
        gem.execute("INSERT INTO schema_version VALUES (?)", (version,))
    if version == 5:
        events_path = folder / "events.sqlite"
        events = sqlite3.connect(events_path)
        events.executescript(EVENTS + FTS_EVENTS_STANDALONE)
        events.executescript("CREATE TABLE schema_version (version INTEGER NOT NULL);")
        events.execute("INSERT INTO schema_version VALUES (1)")
    insert(events, "events", rows["events"])
    insert(events, "event_tags", rows["event_tags"])
    insert(gem, "fragments", rows["fragments"])
    insert(gem, "fragment_edges", rows["fragment_edges"])
    insert(gem, "fragment_sources", rows["fragment_sources"])
    insert(gem, "state", rows["state"])
    if version == 1:
        insert(gem, "plans", rows["plans"])
    else:
        items = rows["working_memory"]
        if version == 2:  # no turn column
            items = [row[:8] + row[9:] for row in items]
        columns = "id, event_id, type, content, subject, actor, status, due, "
        columns += "turn, " if version >= 3 else ""
        columns += "created_at, refreshed_at, resolved_at"
        marks = ", ".join("?" * len(items[0]))
        gem.executemany(f"INSERT INTO working_memory ({columns}) VALUES ({marks})", items)
        insert(gem, "working_memory_refs", rows["working_memory_refs"])
        insert(gem, "maintenance_runs", rows["maintenance_runs"])
    for connection in {gem, events}:
        connection.commit()
        connection.close()
    return path, events_path


# --- Comparing --------------------------------------------------------------------------------


def moment(text: str | None) -> datetime | None:
    """A legacy time as the import must read it: naive means the owner's zone. In UTC, as
    Python finds an hour in a clock change's gap equal to nothing in another zone."""
    if text is None:
        return None
    value = datetime.fromisoformat(text)
    return (value if value.tzinfo else value.replace(tzinfo=ZoneInfo(OWNER_ZONE))).astimezone(UTC)


def legacy_rows(path: Path, sql: str) -> list[tuple]:
    connection = sqlite3.connect(path)
    try:
        return connection.execute(sql).fetchall()
    finally:
        connection.close()


def image_name(path: str | None) -> str:
    if path is None:
        return ""
    return path.lstrip("/")  # outside the media folder: the path without its leading /


ITEM_FIELDS = (
    *("event_id", "type", "content", "subject", "actor", "status", "due", "turn"),
    *("created_at", "refreshed_at", "resolved_at"),
)


def item_fields(pk: int) -> dict:
    return WorkingMemory.objects.values(*ITEM_FIELDS).get(pk=pk)


def assert_imported(path: Path, events_path: Path | None, version: int) -> None:
    """Every row of the legacy database is in the installation, exactly."""
    events_file = events_path or path
    for pk, ts, content, actor, image in legacy_rows(events_file, "SELECT * FROM events"):
        event = Event.objects.get(pk=pk)
        assert (event.ts, event.content, event.actor, event.image.name) == (
            moment(ts),
            content,
            actor or "",
            image_name(image),
        )
    tags = legacy_rows(events_file, "SELECT event_id, tag FROM event_tags WHERE event_id < 99")
    assert set(EventTag.objects.values_list("event_id", "tag")) == set(tags)

    fragments = legacy_rows(path, "SELECT * FROM fragments")
    assert Fragment.objects.count() == len(fragments)
    for key, ambient, recognition, inventory, created, updated in fragments:
        fragment = Fragment.objects.get(key=key)
        assert (
            fragment.ambient,
            fragment.recognition,
            fragment.inventory,
            fragment.created_at,
            fragment.updated_at,
        ) == (ambient or "", recognition or "", inventory or "", moment(created), moment(updated))
    edges = legacy_rows(path, "SELECT * FROM fragment_edges")
    assert set(FragmentEdge.objects.values_list("source_id", "target_id", "relation")) == {
        (s, t, r or "") for s, t, r in edges if (s, t) not in SKIPPED_EDGES
    }
    sources = legacy_rows(path, "SELECT * FROM fragment_sources WHERE fragment_key != 'nowhere'")
    assert set(FragmentSource.objects.values_list("fragment_id", "event_id")) == set(sources)

    if version == 1:
        statuses = {
            "active": "active",
            "done": "resolved",
            "cancelled": "dropped",
            "expired": "decayed",
        }
        plans = legacy_rows(path, "SELECT * FROM plans")
        assert WorkingMemory.objects.count() == len(plans)
        for pk, event_id, actor, summary, due, status, created in plans:
            expected = (event_id, "plan", summary, "", actor or "", statuses[status], moment(due))
            expected += (None, moment(created), moment(created), None)
            assert item_fields(pk) == dict(zip(ITEM_FIELDS, expected, strict=True))
        assert not WorkingMemoryRef.objects.exists()
    else:
        turn = "turn" if version >= 3 else "NULL"
        items = legacy_rows(
            path,
            "SELECT id, event_id, type, content, subject, actor, status, due, "
            f"{turn}, created_at, refreshed_at, resolved_at FROM working_memory WHERE id != 9",
        )
        assert WorkingMemory.objects.count() == len(items)
        for pk, event_id, type_, content, subject, actor, status, due, turn, *times in items:
            expected = (event_id, type_, content, subject or "", actor or "", status, moment(due))
            expected += (turn, *map(moment, times))
            assert item_fields(pk) == dict(zip(ITEM_FIELDS, expected, strict=True))
        refs = legacy_rows(
            path,
            "SELECT * FROM working_memory_refs WHERE wm_id != 99 AND fragment_key != 'nowhere'",
        )
        assert set(WorkingMemoryRef.objects.values_list("wm_id", "fragment_id")) == set(refs)
        runs = legacy_rows(path, "SELECT * FROM maintenance_runs")
        assert MirrorRun.objects.count() == len(runs)
        for pk, started, completed, run_type in runs:
            run = MirrorRun.objects.get(pk=pk)
            assert (run.started_at, run.completed_at, run.kind, run.status) == (
                moment(started),
                moment(completed),
                run_type,
                "done" if completed else "failed",
            )

    assert state_get(TURN_COUNTER) == 3
    assert state_get(PENDING_RECALL) == [
        {"key": "fairy", "deep": True},
        {"key": "luna", "deep": False},
    ]
    kept = State.objects.get(key="legacy.wake_note")
    assert (kept.value, kept.updated_at) == (
        '"bootstrap done \\u2713"',
        moment("2026-01-05T12:20:00"),
    )


def everything() -> dict[str, list[str]]:
    """Every row of every table of every store, the search indexes' own tables included."""
    tables, seen = {}, set()
    for alias in settings.STORE_ALIASES:
        connection = connections[alias]
        where = (connection.vendor, connection.settings_dict["NAME"])
        if where in seen:
            continue
        seen.add(where)
        with connection.cursor() as cursor:
            for table in connection.introspection.table_names(cursor):
                cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
                tables[f"{alias} {table}"] = sorted(repr(row) for row in cursor.fetchall())
    return tables


@pytest.fixture(autouse=True)
def owner(settings, tmp_path):
    settings.TIME_ZONE = OWNER_ZONE
    settings.MEDIA_ROOT = tmp_path / "media"
    image = settings.MEDIA_ROOT / "images/2026/02/lighthouse.jpg"
    image.parent.mkdir(parents=True)
    image.write_bytes(b"\xff\xd8 a picture")


# --- Importing each version ------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
def test_it_imports_every_row_of_each_version_exactly_and_a_second_run_adds_nothing(
    tmp_path, version
):
    path, events_path = legacy_build(tmp_path / "legacy", version)

    report = legacy_import(path=path, events_path=events_path)

    assert report.version == version
    assert_imported(path, events_path, version)
    counts = {table: (c.imported, c.already) for table, c in report.tables.items()}
    items = 4 if version == 1 else 8
    assert counts["events"] == (6, 0) and counts["event tags"] == (11, 0)
    assert counts["fragments"] == (3, 0) and counts["fragment edges"] == (3, 0)
    assert counts["working memory"] == (items, 0)
    assert report.turn_counter == (0, 3)
    assert report.images_named == 2 and report.images_missing == 1
    assert report.images_missing_examples == ["srv/silentstar/uploads/renki.png (event 6)"]
    skipped = {table: dict(c.skipped) for table, c in report.tables.items() if c.skipped}
    assert skipped["event tags"] == {"its event is not in the file": 1}
    assert skipped["fragment edges"] == {
        "a loop (a fragment to itself), which edges cannot be": 1,
        "names a fragment that does not exist": 1,
    }
    assert skipped["fragment sources"] == {"names a fragment that does not exist": 1}
    if version > 1:
        assert skipped["working memory"] == {"an unknown type “rp”": 1}
        assert skipped["working-memory refs"] == {
            "names a fragment that does not exist": 1,
            "its working-memory item is not imported": 1,
        }

    before = everything()
    again = legacy_import(path=path, events_path=events_path)
    assert everything() == before
    assert again.nothing_new
    assert again.tables["events"].already == 6 and again.tables["working memory"].already == items


def test_the_search_finds_what_was_imported_at_once(tmp_path):
    path, events_path = legacy_build(tmp_path / "legacy", 5)
    legacy_import(path=path, events_path=events_path)

    events = search("lighthouse", kinds=("event",))
    assert {hit.id for hit in events} >= {1, 2, 3}
    assert [hit.key for hit in search("pastel lace", kinds=("fragment",))] == ["fairy"]
    assert 6 in {hit.id for hit in search("tea sugar", kinds=("wm",))}


def test_the_app_goes_on_after_the_imported_ids(tmp_path):
    path, events_path = legacy_build(tmp_path / "legacy", 4)
    legacy_import(path=path, events_path=events_path)

    event = Event.objects.create(content="the first new message", actor="luna")
    run = MirrorRun.objects.create(kind="manual")
    assert event.pk > 6 and run.pk > 2
    assert WorkingMemory.objects.create(type="thought", content="new").pk > 8  # 9 skipped


def test_a_dry_run_reports_and_writes_nothing(tmp_path):
    path, events_path = legacy_build(tmp_path / "legacy", 3)
    before = everything()

    report = legacy_import(path=path, events_path=events_path, dry_run=True)

    assert everything() == before
    assert report.tables["events"].imported == 6 and report.turn_counter == (0, 3)


def test_naive_times_are_read_in_the_zone_asked_for(tmp_path):
    path, events_path = legacy_build(tmp_path / "legacy", 2)

    report = legacy_import(path=path, events_path=events_path, time_zone="UTC")

    assert Event.objects.get(pk=1).ts == datetime(2026, 2, 10, 9, 15, tzinfo=UTC)
    assert Event.objects.get(pk=4).ts == datetime(2026, 2, 11, 8, 0, tzinfo=UTC)  # had its Z
    assert report.time_zone == "UTC" and report.naive_times > 0


def test_the_turn_counter_never_goes_back(tmp_path):
    path, events_path = legacy_build(tmp_path / "legacy", 3)
    state_set(TURN_COUNTER, 40)

    report = legacy_import(path=path, events_path=events_path)

    assert state_get(TURN_COUNTER) == 40 and report.turn_counter == (40, 40)


def test_an_import_stopped_part_way_is_finished_by_a_second_run(tmp_path, monkeypatch):
    """A run that wrote some batches of events and then stopped: the next run counts them as
    already here and writes the rest."""
    path, events_path = legacy_build(tmp_path / "legacy", 5)
    from transfer import legacy

    def stop_after_first_batch(*args, **kwargs):
        raise LegacyError("the machine went down", written=True)

    real_gem_write = legacy._gem_write
    monkeypatch.setattr(legacy, "_gem_write", stop_after_first_batch)
    with pytest.raises(LegacyError):
        legacy_import(path=path, events_path=events_path, batch_size=2)
    assert Event.objects.count() == 6 and not Fragment.objects.exists()

    monkeypatch.setattr(legacy, "_gem_write", real_gem_write)
    report = legacy_import(path=path, events_path=events_path, batch_size=2)
    assert report.tables["events"].already == 6 and report.tables["fragments"].imported == 3
    assert_imported(path, events_path, 5)


# --- Refusals: nothing changes ---------------------------------------------------------------


def refused(path: Path, events_path: Path | None = None, **options) -> str:
    before = everything()
    with pytest.raises(LegacyError) as raised:
        legacy_import(path=path, events_path=events_path, **options)
    assert everything() == before
    assert not raised.value.written
    return str(raised.value)


def test_a_file_that_is_not_a_database_is_refused(tmp_path):
    garbage = tmp_path / "memory.sqlite"
    garbage.write_bytes(b"Mono's diary, not a database\n" * 200)

    assert "is not a readable SQLite database" in refused(garbage)
    assert "no such file" in refused(tmp_path / "missing.sqlite")


def test_another_sqlite_database_is_refused(tmp_path):
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
    connection.close()

    assert "not a Silentstar database: it has no schema_version table" in refused(other)


def test_a_truncated_file_is_refused(tmp_path):
    rows = {
        **ROWS,
        "events": [
            (
                n,
                f"2026-02-10T09:{n // 60 % 60:02}:{n % 60:02}",
                f"message {n} " + "words " * 60,
                "luna",
                None,
            )
            for n in range(1, 3_001)
        ],
    }
    path, _ = legacy_build(tmp_path / "legacy", 4, rows=rows)
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])

    assert "is damaged" in refused(path)


def test_a_version_this_import_does_not_know_is_refused(tmp_path):
    path, _ = legacy_build(tmp_path / "legacy", 4)
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE schema_version SET version = 6")
    connection.close()

    assert "schema version 6: this import reads versions 1 to 5" in refused(path)


def test_a_v5_pair_from_two_installations_is_refused(tmp_path):
    """The Gem names events the other installation's log does not hold."""
    gem, _ = legacy_build(tmp_path / "one", 5)
    other = {**ROWS, "events": ROWS["events"][:2], "event_tags": ROWS["event_tags"][:6]}
    _, other_events = legacy_build(tmp_path / "two", 5, rows=other)

    message = refused(gem, other_events)
    assert message.startswith("The halves disagree") and "does not hold" in message


def test_a_v5_pair_whose_events_were_said_after_the_gem_remembers_them_is_refused(tmp_path):
    """The other installation has as many events, but said later than the Gem's items."""
    gem, _ = legacy_build(tmp_path / "one", 5)
    later = [(pk, ts.replace("2026-02", "2026-06"), *rest) for pk, ts, *rest in ROWS["events"]]
    _, other_events = legacy_build(tmp_path / "two", 5, rows={**ROWS, "events": later})

    message = refused(gem, other_events)
    assert "The halves disagree: working-memory item" in message
    assert "two different installations" in message


def test_a_v5_pair_whose_events_were_said_a_month_before_the_gem_remembers_them_is_refused(
    tmp_path,
):
    """The same text, said thirty days earlier: the items were written long after the turns
    whose tags they came from."""
    gem, _ = legacy_build(tmp_path / "one", 5)
    earlier = [
        (pk, (moment(ts) - timedelta(days=30)).isoformat(), *rest)
        for pk, ts, *rest in ROWS["events"]
    ]
    _, other_events = legacy_build(tmp_path / "two", 5, rows={**ROWS, "events": earlier})

    message = refused(gem, other_events)
    assert message.startswith(
        "The halves disagree: 7 of the 7 working-memory items in "
        f"{gem} that name an event do not fit its text in {other_events} (first: item 1 was "
        "written 30 days after event 2, whose text it came from, was said; item 2's 'a "
    )
    assert message.endswith(
        "give the events file copied with this Gem from the same installation (its "
        "data/events.sqlite). Nothing was changed"
    )


def test_a_v5_pair_whose_events_say_other_things_at_the_same_times_is_refused(tmp_path):
    """Another installation's log, its messages said at the very same moments."""
    gem, _ = legacy_build(tmp_path / "one", 5)
    other = [(pk, ts, f"<luna>another day, message {pk}</luna>", "luna", None)
             for pk, ts, *_ in ROWS["events"]]  # fmt: skip
    _, other_events = legacy_build(tmp_path / "two", 5, rows={**ROWS, "events": other})

    message = refused(gem, other_events)
    assert "7 of the 7 working-memory items" in message
    assert (
        "(first: item 1's 'glad she came back to the lighthouse' is not in the text of event "
        "2, '<luna>another day, message 2</luna>'; item 2's" in message
    )


def test_a_true_pair_notes_the_few_items_that_do_not_fit_their_events(tmp_path):
    gem, events = legacy_build(tmp_path / "one", 5)

    report = legacy_import(path=gem, events_path=events)

    assert report.tables["working memory"].imported == 8
    assert (
        "1 of the 7 working-memory items that name an event do not fit its text (first: item "
        "2's 'a feeling of far more than fifteen words that was record… is not in the "
        "text of event 2"
    ) in " ".join(report.notes)


def test_a_v5_gem_whose_turn_counter_outruns_the_events_file_is_refused(tmp_path):
    state = [("current_turn", "5000", "2026-02-11T10:30:00")]
    gem, events = legacy_build(tmp_path / "one", 5, rows={**ROWS, "state": state})

    assert "counts 5000 turns" in refused(gem, events)


@pytest.mark.parametrize(
    ("events_file", "expected"),
    [
        ("a v2 database", "not an events file"),
        ("a version 2 events file", "says schema version 2"),
        ("the Gem itself", "names the Gem's own file"),
    ],
)
def test_a_v5_gem_with_the_wrong_events_file_is_refused(tmp_path, events_file, expected):
    gem, events = legacy_build(tmp_path / "one", 5)
    if events_file == "a v2 database":
        events, _ = legacy_build(tmp_path / "two", 2)
    elif events_file == "a version 2 events file":
        with sqlite3.connect(events) as connection:
            connection.execute("UPDATE schema_version SET version = 2")
        connection.close()
    else:
        events = gem

    assert expected in refused(gem, events)


def test_a_v5_gem_without_its_events_file_is_refused(tmp_path):
    gem, events = legacy_build(tmp_path / "one", 5)
    events.unlink()

    assert "give it with --events" in refused(gem)


def test_the_events_file_given_alone_is_refused(tmp_path):
    _, events = legacy_build(tmp_path / "one", 5)

    assert "is the events file of a version 5 Gem" in refused(events)


def test_events_with_a_single_file_version_are_refused(tmp_path):
    path, _ = legacy_build(tmp_path / "one", 3)
    _, events = legacy_build(tmp_path / "two", 5)

    assert "--events is only for schema version 5" in refused(path, events)


def test_an_import_into_another_installations_memory_is_refused(tmp_path):
    path, events_path = legacy_build(tmp_path / "legacy", 4)
    Event.objects.create(id=3, content="something else entirely", actor="luna")

    message = refused(path, events_path)
    assert "already holds event 3 with other content" in message


def test_a_working_memory_item_of_another_installation_is_refused(tmp_path):
    path, events_path = legacy_build(tmp_path / "legacy", 3)
    WorkingMemory.objects.create(id=4, type="thought", content="another thought")

    assert "already holds working-memory item 4" in refused(path, events_path)


def test_an_unreadable_time_is_refused_with_its_row(tmp_path):
    rows = {**ROWS, "events": [*ROWS["events"], (7, "last tuesday", "hm", "luna", None)]}
    path, _ = legacy_build(tmp_path / "legacy", 2, rows=rows)

    assert "event 7's ts: “last tuesday” is not an ISO 8601 time" in refused(path)


OUT_OF_RANGE = "is out of range (ids run from 1 to 2,147,483,647)"


@pytest.mark.parametrize(
    ("event_id", "problem"),
    [
        (2**63 - 1, OUT_OF_RANGE),
        (2**31, OUT_OF_RANGE),
        (0, OUT_OF_RANGE),
        (-5, "is not a whole number"),
    ],
)
def test_an_event_id_out_of_range_is_refused_before_anything_is_written(
    tmp_path, event_id, problem
):
    """2⁶³ − 1 would use up the log's sequence: every turn after it would fail."""
    event = (event_id, "2026-03-02T19:00:00", "hm", "luna", None)
    path, _ = legacy_build(
        tmp_path / "legacy", 2, rows={**ROWS, "events": [*ROWS["events"], event]}
    )

    assert f"an event's id: {event_id} {problem}" in refused(path)


@pytest.mark.parametrize(
    ("table", "row", "expected"),
    [
        (
            "events",
            (7, "2026-03-02T19:00:00", "w" * 200_001, "luna", None),
            "event 7's content is 200,001 characters long; at most 200,000 are imported",
        ),
        (
            "fragments",
            ("sea", "a", "b", "i" * 200_001, "2026-01-05T12:00:00", "2026-01-05T12:00:00"),
            "fragment sea's inventory is 200,001 characters long; at most 200,000 are imported",
        ),
        (
            "state",
            ("note", "n" * 200_001, "2026-01-05T12:00:00"),
            "state note's value is 200,001 characters long; at most 200,000 are imported",
        ),
        (
            "events",
            (7, "2026-03-02T19:00:00", "hm\x00", "luna", None),
            "event 7's content holds a NUL character (\\x00), which PostgreSQL cannot store",
        ),
    ],
    ids=["long event", "long fragment", "long state", "NUL"],
)
def test_a_text_too_long_or_holding_nul_is_refused_before_anything_is_written(
    tmp_path, table, row, expected
):
    path, _ = legacy_build(tmp_path / "legacy", 4, rows={**ROWS, table: [*ROWS[table], row]})

    assert refused(path) == expected


def test_an_unknown_time_zone_is_refused(tmp_path):
    path, _ = legacy_build(tmp_path / "legacy", 2)

    assert "is not an IANA time zone" in refused(path, time_zone="Mars/Olympus")


# --- The command ------------------------------------------------------------------------------


def test_the_command_reports_per_table_and_a_rerun_says_nothing_is_new(tmp_path):
    path, events_path = legacy_build(tmp_path / "legacy", 5)
    out = StringIO()

    call_command("import_silentstar", str(path), "--events", str(events_path), stdout=out)

    text = out.getvalue()
    assert f"Imported {path} (schema v5) with its events file {events_path}" in text
    assert "events                             6             0         0" in text
    assert "fragment edges: 1 a loop" in text
    assert "Turn counter: 3 (was 0)" in text
    assert "1 of the files are not in the media folder" in text
    assert "manage.py search_vectors" in text

    out = StringIO()
    call_command("import_silentstar", str(path), stdout=out)  # events.sqlite found beside it
    assert "Nothing new: everything in the file is already here." in out.getvalue()


def test_the_command_refuses_with_a_clear_message(tmp_path):
    garbage = tmp_path / "memory.sqlite"
    garbage.write_bytes(b"\x00" * 5000)

    with pytest.raises(CommandError, match=r"Import refused, nothing was changed: .* is not"):
        call_command("import_silentstar", str(garbage))


def test_a_v1_database_without_event_tags_is_imported(tmp_path):
    path, _ = legacy_build(tmp_path / "legacy", 1)
    with sqlite3.connect(path) as connection:
        connection.execute("DROP TABLE event_tags")
    connection.close()

    report = legacy_import(path=path)

    assert report.tables["events"].imported == 6 and not EventTag.objects.exists()
