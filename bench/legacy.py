"""``python -m bench legacy``: import a synthetic legacy v5 pair (the Gem and its events file).

``legacy_pair_write`` writes the pair with the sqlite3 module in seed 001's schema (schema v5:
the Gem with its FTS5 indexes and their triggers, the events file with its standalone index):
a conversation of ``events`` events, a person's message and the companion's reply a minute
apart with their tags, and a Gem of fragments, edges, sources, working memory of every type
and status, state and maintenance runs. ``legacy_import_measure`` imports it into the
configured (throwaway) stores with ``transfer.legacy.legacy_import``, then once more (which adds
nothing), and reports the time, the rows per second and the process's peak memory.
"""

import random
import resource
import sqlite3
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path

from transfer.legacy import legacy_import

START = datetime(2023, 1, 2, 8, 0)  # naive, as the seed wrote its times
USERS = ("hasuki", "renki", "luna", "chloe", "strah")
WORDS = (
    "tea garden letter sea lighthouse lace stairs rain window lamp quiet walk friday music "
    "sewing crochet dress blanket morning evening tired glad plan call council tower keeper "
    "shop train bread soup book"
).split()
TYPES = ("feeling", "thought", "pattern", "desc", "plan", "pin", "secret")
STATUSES = ("active", "resolved", "dropped", "decayed", "superseded")

GEM_SCHEMA = """
CREATE TABLE working_memory (id INTEGER PRIMARY KEY, event_id INTEGER, type TEXT NOT NULL,
    content TEXT NOT NULL, subject TEXT, actor TEXT, status TEXT NOT NULL DEFAULT 'active',
    due TEXT, created_at TEXT NOT NULL, refreshed_at TEXT NOT NULL, resolved_at TEXT,
    turn INTEGER);
CREATE TABLE working_memory_refs (wm_id INTEGER REFERENCES working_memory,
    fragment_key TEXT REFERENCES fragments, PRIMARY KEY (wm_id, fragment_key));
CREATE TABLE fragments (key TEXT PRIMARY KEY, ambient TEXT, recognition TEXT, inventory TEXT,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE fragment_sources (fragment_key TEXT REFERENCES fragments, event_id INTEGER,
    PRIMARY KEY (fragment_key, event_id));
CREATE TABLE fragment_edges (source_key TEXT REFERENCES fragments,
    target_key TEXT REFERENCES fragments, relation TEXT, PRIMARY KEY (source_key, target_key));
CREATE TABLE state (key TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE maintenance_runs (id INTEGER PRIMARY KEY, started_at TEXT NOT NULL,
    completed_at TEXT, run_type TEXT NOT NULL);
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version VALUES (5);
CREATE VIRTUAL TABLE fragments_fts USING fts5(key, ambient, recognition, inventory,
    content='fragments');
CREATE VIRTUAL TABLE working_memory_fts USING fts5(content, subject, type,
    content='working_memory', content_rowid='id');
"""
GEM_TRIGGERS = """
CREATE TRIGGER fragments_ai AFTER INSERT ON fragments BEGIN
    INSERT INTO fragments_fts(rowid, key, ambient, recognition, inventory)
    VALUES (new.rowid, new.key, new.ambient, new.recognition, new.inventory); END;
CREATE TRIGGER fragments_ad AFTER DELETE ON fragments BEGIN
    INSERT INTO fragments_fts(fragments_fts, rowid, key, ambient, recognition, inventory)
    VALUES ('delete', old.rowid, old.key, old.ambient, old.recognition, old.inventory); END;
CREATE TRIGGER fragments_au AFTER UPDATE ON fragments BEGIN
    INSERT INTO fragments_fts(fragments_fts, rowid, key, ambient, recognition, inventory)
    VALUES ('delete', old.rowid, old.key, old.ambient, old.recognition, old.inventory);
    INSERT INTO fragments_fts(rowid, key, ambient, recognition, inventory)
    VALUES (new.rowid, new.key, new.ambient, new.recognition, new.inventory); END;
CREATE TRIGGER working_memory_ai AFTER INSERT ON working_memory BEGIN
    INSERT INTO working_memory_fts(rowid, content, subject, type)
    VALUES (new.id, new.content, new.subject, new.type); END;
CREATE TRIGGER working_memory_ad AFTER DELETE ON working_memory BEGIN
    INSERT INTO working_memory_fts(working_memory_fts, rowid, content, subject, type)
    VALUES ('delete', old.id, old.content, old.subject, old.type); END;
CREATE TRIGGER working_memory_au AFTER UPDATE ON working_memory BEGIN
    INSERT INTO working_memory_fts(working_memory_fts, rowid, content, subject, type)
    VALUES ('delete', old.id, old.content, old.subject, old.type);
    INSERT INTO working_memory_fts(rowid, content, subject, type)
    VALUES (new.id, new.content, new.subject, new.type); END;
"""
EVENTS_SCHEMA = """
CREATE TABLE events (id INTEGER PRIMARY KEY, ts TEXT NOT NULL, content TEXT NOT NULL,
    actor TEXT, image_path TEXT);
CREATE TABLE event_tags (event_id INTEGER REFERENCES events, tag TEXT NOT NULL,
    PRIMARY KEY (event_id, tag));
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version VALUES (1);
CREATE VIRTUAL TABLE events_fts USING fts5(content, actor);
"""
# Standalone (no content=): its sync triggers DELETE, as seed 001 says.
EVENTS_TRIGGERS = """
CREATE TRIGGER events_ai AFTER INSERT ON events BEGIN
    INSERT INTO events_fts(rowid, content, actor) VALUES (new.id, new.content, new.actor); END;
CREATE TRIGGER events_ad AFTER DELETE ON events BEGIN
    DELETE FROM events_fts WHERE rowid = old.id; END;
CREATE TRIGGER events_au AFTER UPDATE ON events BEGIN
    DELETE FROM events_fts WHERE rowid = old.id;
    INSERT INTO events_fts(rowid, content, actor) VALUES (new.id, new.content, new.actor); END;
"""
GEM_ROWS = {"fragments": 500, "edges": 2_000, "working_memory": 1_000, "runs": 50}


def legacy_pair_write(
    folder: Path,
    *,
    events: int,
    fragments: int = GEM_ROWS["fragments"],
    edges: int = GEM_ROWS["edges"],
    working_memory: int = GEM_ROWS["working_memory"],
    runs: int = GEM_ROWS["runs"],
    seed: int = 5,
) -> tuple[Path, Path]:
    """Write ``silentstar.sqlite`` and ``events.sqlite`` into ``folder``; return their paths.

    Each search index is filled in one statement after its table, then its triggers are made:
    the file is the same as one the triggers kept, made in a fraction of the time."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    gem_path, events_path = folder / "silentstar.sqlite", folder / "events.sqlite"
    items = [_item(pk, events, rng) for pk in range(1, working_memory + 1)]
    with _database(events_path) as log:
        log.executescript(EVENTS_SCHEMA)
        log.executemany(
            "INSERT INTO events VALUES (?, ?, ?, ?, ?)", _events(events, rng, _tags_said(items))
        )
        log.executemany("INSERT INTO event_tags VALUES (?, ?)", _event_tags(events, rng))
        log.execute(
            "INSERT INTO events_fts(rowid, content, actor) SELECT id, content, actor FROM events"
        )
        log.executescript(EVENTS_TRIGGERS)
    keys = [f"topic-{n}" for n in range(fragments)]
    with _database(gem_path) as gem:
        gem.executescript(GEM_SCHEMA)
        gem.executemany(
            "INSERT INTO fragments VALUES (?, ?, ?, ?, ?, ?)",
            [
                (key, _words(rng, 12), _words(rng, 40), _words(rng, 100), _at(-n), _at(n))
                for n, key in enumerate(keys)
            ],
        )
        pairs = set()
        while len(pairs) < min(edges, fragments * (fragments - 1)):
            pairs.add(tuple(rng.sample(keys, 2)))
        gem.executemany(
            "INSERT INTO fragment_edges VALUES (?, ?, ?)",
            [
                (source, target, rng.choice(("related", "builds-toward", None)))
                for source, target in sorted(pairs)
            ],
        )
        gem.executemany(
            "INSERT INTO fragment_sources VALUES (?, ?)",
            {(rng.choice(keys), rng.randint(1, events)) for _ in range(fragments * 2)},
        )
        gem.executemany(
            "INSERT INTO working_memory (id, event_id, type, content, subject, actor, status, "
            "due, created_at, refreshed_at, resolved_at, turn) "
            f"VALUES ({', '.join('?' * 12)})",
            items,
        )
        gem.executemany(
            "INSERT INTO working_memory_refs VALUES (?, ?)",
            {
                (rng.randint(1, working_memory), rng.choice(keys))
                for _ in range(working_memory // 2)
            },
        )
        gem.execute(
            "INSERT INTO fragments_fts(rowid, key, ambient, recognition, inventory) "
            "SELECT rowid, key, ambient, recognition, inventory FROM fragments"
        )
        gem.execute(
            "INSERT INTO working_memory_fts(rowid, content, subject, type) "
            "SELECT id, content, subject, type FROM working_memory"
        )
        gem.executescript(GEM_TRIGGERS)
        gem.executemany(
            "INSERT INTO state VALUES (?, ?, ?)",
            [
                ("current_turn", str(events // 2), _at(events)),
                ("pending_recall", '["topic-1"]', _at(events)),
            ],
        )
        gem.executemany(
            "INSERT INTO maintenance_runs VALUES (?, ?, ?, ?)",
            [
                (
                    n,
                    _at(n * 600),
                    None if n == runs else _at(n * 600 + 20),
                    "weekly" if n > 1 else "bootstrap",
                )
                for n in range(1, runs + 1)
            ],
        )
    return gem_path, events_path


class _database:
    """A new SQLite file, written as fast as a throwaway file may be (Python's sqlite3 opens a
    transaction before the inserts; each script commits what came before it)."""

    def __init__(self, path: Path):
        path.unlink(missing_ok=True)
        self.connection = sqlite3.connect(path)

    def __enter__(self) -> sqlite3.Connection:
        self.connection.execute("PRAGMA journal_mode = OFF")
        self.connection.execute("PRAGMA synchronous = OFF")
        return self.connection

    def __exit__(self, *exc_info) -> None:
        self.connection.commit()
        self.connection.close()


def _at(minutes: int) -> str:
    return (START + timedelta(minutes=minutes)).isoformat()


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(WORDS, k=n))


def _tags_said(items: list[tuple]) -> dict[int, str]:
    """The knowledge tags each event says: the working memory that came of it."""
    said: dict[int, str] = {}
    for _, event_id, type_, content, subject, *_ in items:
        body = f"{subject}: {content}" if subject else content
        said[event_id] = said.get(event_id, "") + f"<{type_}>{body}</{type_}>"
    return said


def _events(events: int, rng: random.Random, tags_said: dict[int, str]) -> Iterator[tuple]:
    for pk in range(1, events + 1):
        tags = tags_said.get(pk, "")
        if pk % 2:
            user = USERS[pk % len(USERS)]
            yield (pk, _at(pk), f"<{user}>{_words(rng, 18)}{tags}</{user}>", user, None)
        else:
            content = (
                f"<claude><say>{_words(rng, 22)}</say><do>{_words(rng, 10)}</do>{tags}</claude>"
            )
            yield (pk, _at(pk), content, "claude", None)


def _event_tags(events: int, rng: random.Random) -> Iterator[tuple]:
    for pk in range(1, events + 1):
        if pk % 2:
            yield (pk, USERS[pk % len(USERS)])
        else:
            yield from ((pk, "claude"), (pk, "do"), (pk, "say"))


def _item(pk: int, events: int, rng: random.Random) -> tuple:
    event_id = rng.randint(1, events)
    type_ = TYPES[pk % len(TYPES)]
    status = "active" if pk % 10 == 0 else STATUSES[pk % len(STATUSES)]
    created = _at(event_id)
    return (
        pk,
        event_id,
        type_,
        _words(rng, 8),
        "photo" if type_ == "desc" else None,
        "claude",
        status,
        _at(event_id + 2_880) if type_ == "plan" else None,
        created,
        created,
        None if status == "active" else _at(event_id + 60),
        event_id // 2,
    )


def legacy_import_measure(*, gem: Path, events_path: Path, progress: Callable[[str], None]) -> dict:
    """Import the pair into the configured (empty, throwaway) stores, then again; the figures.

    Peak memory is the process's maximum resident set (``getrusage``'s ``ru_maxrss``), read
    before the import (Django and the migrated stores) and after it."""
    before_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    reported = {}

    def stage(name: str, done: int, total: int) -> None:
        step = max(total // 10, 1)
        if done == total or done // step != reported.get(name, 0):
            reported[name] = done // step
            progress(f"  {name} {done:,}/{total:,}")

    began = time.perf_counter()
    report = legacy_import(path=gem, events_path=events_path, progress=stage)
    seconds = time.perf_counter() - began
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    progress("again, which must add nothing...")
    began = time.perf_counter()
    again = legacy_import(path=gem, events_path=events_path, progress=stage)
    again_seconds = time.perf_counter() - began
    rows = {table: counted.imported for table, counted in report.tables.items()}
    total = sum(rows.values())
    return {
        "rows": rows,
        "total_rows": total,
        "seconds": seconds,
        "rows_per_s": total / seconds,
        "events_per_s": rows["events"] / seconds,
        "peak_rss_mb": peak_kb / 1024,
        "before_rss_mb": before_kb / 1024,
        "again_seconds": again_seconds,
        "again_imported": sum(counted.imported for counted in again.tables.values()),
        "gem_mb": gem.stat().st_size / 2**20,
        "events_mb": events_path.stat().st_size / 2**20,
    }
