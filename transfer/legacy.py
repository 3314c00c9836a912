"""Import of a legacy Silentstar database, schema v1 to v5 (``manage.py import_silentstar``).

The seed system kept everything in SQLite: one file up to v4, the Gem and the event log in two
files from v5 on. ``legacy_import`` reads them with the sqlite3 module, read-only, and writes
their rows into the four stores with ids, times and text as they were. docs/legacy-import.md
maps every table and column and says what is refused, what is skipped and why.

It works in two phases. The check reads everything (the events in batches, the rest whole),
checks it and compares it with what the installation already holds; every refusal
(``LegacyError``) comes from there, before a single row is written. The write then puts in the
events with their tags, one transaction per batch, then the Gem in one transaction, then the
maintenance runs. A run stopped part-way leaves whole batches behind; a second run finds them
identical, counts them as already there and goes on, so the import is idempotent by id.
"""

import json
import re
import sqlite3
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import NamedTuple
from urllib.parse import quote
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import DatabaseError, connections, router, transaction

from events.models import Event, EventTag
from gem.models import (
    KEY_VALIDATOR,
    Fragment,
    FragmentEdge,
    FragmentSource,
    Identity,
    State,
    WorkingMemory,
    WorkingMemoryRef,
    WorkingMemoryStatus,
    WorkingMemoryType,
)
from gem.services import (
    FragmentEdgeRecorded,
    FragmentRecorded,
    FragmentSourceRecorded,
    WorkingMemoryError,
    WorkingMemoryRecorded,
    edges_import,
    fragments_import,
    sources_import,
    working_memory_create,
)
from gem.state import PENDING_RECALL, TURN_COUNTER, state_get_many, state_set
from mirror.models import MirrorRun, MirrorRunStatus
from silentstar.router import ID_MAX, sequences_reset
from silentstar.words import counted
from transfer.limits import TEXT_MAX_CHARS, text_max, text_problem

VERSIONS = range(1, 6)
BATCH = 5_000  # events (with their tags) per transaction
IMPORT_CACHE_KIB = -65_536  # SQLite's page cache while events are written: 64 MiB
EXAMPLES = 3  # rows named per reason in the report
# The legacy state's keys that mean the turn counter and the pending recall (seed 004 names
# ``current_turn``); every other key is kept as ``legacy.<key>``.
TURN_KEYS = ("current_turn", "turn_counter")
RECALL_KEYS = ("pending_recall", "recall_results")
LEGACY_STATE_PREFIX = "legacy."
# v1's plan statuses, as working-memory statuses.
PLAN_STATUSES = {
    "active": WorkingMemoryStatus.ACTIVE,
    "done": WorkingMemoryStatus.RESOLVED,
    "cancelled": WorkingMemoryStatus.DROPPED,
    "expired": WorkingMemoryStatus.DECAYED,
}
# A v5 Gem's item written more than this before the event it came from was said comes from
# another installation's log (a day absorbs any confusion of time zones in naive times).
CLOCK_SLACK = timedelta(days=1)
WORD = re.compile(r"\w+")
# The report's tables, in the order they are written.
TABLES = (
    "events",
    "event tags",
    "fragments",
    "fragment edges",
    "fragment sources",
    "working memory",
    "working-memory refs",
    "state",
    "maintenance runs",
)
# Columns read from each legacy table: required ones, then ones that may be missing.
COLUMNS = {
    "events": (("id", "ts", "content"), ("actor", "image_path")),
    "event_tags": (("event_id", "tag"), ()),
    "plans": (("id", "summary", "status", "created_at"), ("event_id", "actor", "due")),
    "working_memory": (
        ("id", "type", "content", "status", "created_at", "refreshed_at"),
        ("event_id", "subject", "actor", "due", "turn", "resolved_at"),
    ),
    "working_memory_refs": (("wm_id", "fragment_key"), ()),
    "fragments": (("key", "created_at", "updated_at"), ("ambient", "recognition", "inventory")),
    "fragment_sources": (("fragment_key", "event_id"), ()),
    "fragment_edges": (("source_key", "target_key"), ("relation",)),
    "state": (("key", "value"), ("updated_at",)),
    "maintenance_runs": (("id", "started_at", "run_type"), ("completed_at",)),
}
# What each version must hold (the Gem file's tables; v5's events are in the other file).
REQUIRED = {
    1: ("events", "plans", "fragments"),
    2: ("events", "event_tags", "working_memory", "fragments"),
    3: ("events", "event_tags", "working_memory", "fragments"),
    4: ("events", "event_tags", "working_memory", "fragments"),
    5: ("working_memory", "fragments"),
}
EVENTS_FILE_TABLES = ("events", "event_tags")

StageProgress = Callable[[str, int, int], None]  # (stage, done, total): a bar per stage


class LegacyError(Exception):
    """A legacy database that is refused, and why; nothing was changed (``written`` says
    otherwise for a failure part-way through the write)."""

    def __init__(self, message: str, *, written: bool = False):
        super().__init__(message)
        self.written = written


@dataclass
class Counted:
    """One table's rows: imported, already there, skipped (by reason, with examples)."""

    imported: int = 0
    already: int = 0
    skipped: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def skip(self, reason: str, example: str) -> None:
        self.skipped[reason] += 1
        if len(self.examples[reason]) < EXAMPLES:
            self.examples[reason].append(example)


@dataclass
class LegacyReport:
    """What an import did (or, with ``dry_run``, would do)."""

    path: Path
    events_path: Path | None
    version: int
    time_zone: str
    dry_run: bool
    tables: dict[str, Counted] = field(default_factory=lambda: {t: Counted() for t in TABLES})
    naive_times: int = 0
    turn_counter: tuple[int, int] = (0, 0)  # before, after
    images_named: int = 0
    images_missing: int = 0
    images_missing_examples: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def nothing_new(self) -> bool:
        return not any(counted.imported for counted in self.tables.values())


# --- Reading the legacy file ----------------------------------------------------------------


@dataclass
class Legacy:
    """The open legacy database(s) and how its values are read."""

    gem: sqlite3.Connection
    events: sqlite3.Connection  # the Gem's own connection up to v4
    version: int
    zone: ZoneInfo
    path: Path
    events_path: Path | None
    columns: dict[str, set[str]]  # the Gem file's tables and their columns
    event_columns: dict[str, set[str]]
    naive_times: int = 0

    def moment(self, value, where: str, *, null: bool = False) -> datetime | None:
        """A legacy time as an aware datetime in UTC: ISO 8601 text (naive means ``zone``; an
        hour a clock change skips or repeats is read with the offset before the change), or a
        number of seconds since 1970. In UTC because Python never finds an hour in a gap equal
        to anything in another zone (PEP 495), and a second run compares."""
        if value is None and null:
            return None
        if isinstance(value, int | float) and not isinstance(value, bool):
            try:
                return datetime.fromtimestamp(value, UTC)
            except (OverflowError, OSError, ValueError):
                raise LegacyError(f"{where}: {value!r} is not a time") from None
        if isinstance(value, str):
            try:
                moment = datetime.fromisoformat(value.strip())
            except ValueError:
                raise LegacyError(f"{where}: “{value}” is not an ISO 8601 time") from None
            if moment.tzinfo is None:
                self.naive_times += 1
                moment = moment.replace(tzinfo=self.zone)
            return moment.astimezone(UTC)
        raise LegacyError(f"{where}: {value!r} is not a time")

    def rows(self, connection: sqlite3.Connection, sql: str, params=()) -> Iterator[tuple]:
        """The rows of a query on the legacy file; a damaged file is refused, not a crash."""
        try:
            cursor = connection.execute(sql, params)
            while batch := cursor.fetchmany(BATCH):
                yield from batch
        except sqlite3.Error as error:
            raise _unreadable(str(self._file_of(connection)), error) from None

    def select(self, table: str, *, order: str = "", distinct: bool = False) -> Iterator[tuple]:
        """The table's ``COLUMNS`` (NULL for an optional one it lacks), from its own file."""
        connection = self.events if table in EVENTS_FILE_TABLES else self.gem
        present = (self.event_columns if connection is self.events else self.columns)[table]
        required, optional = COLUMNS[table]
        names = [*required, *(c if c in present else "NULL" for c in optional)]
        listed = ", ".join(f'"{n}"' if n != "NULL" else n for n in names)
        keyword = "SELECT DISTINCT" if distinct else "SELECT"
        return self.rows(connection, f'{keyword} {listed} FROM "{table}" {order}')

    def _file_of(self, connection: sqlite3.Connection) -> Path:
        return self.events_path if connection is not self.gem else self.path


def _connect(path: Path, *, what: str) -> tuple[sqlite3.Connection, dict[str, set[str]]]:
    """The file opened read-only, checked whole (a truncated copy fails here), with its tables
    and their columns."""
    if not path.exists():
        raise LegacyError(f"{what} {path}: no such file")
    if not path.is_file():
        raise LegacyError(f"{what} {path} is not a file")
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True, timeout=30)
        connection.execute("PRAGMA query_only = ON")
        tables = connection.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name"
        ).fetchall()
        check = [row[0] for row in connection.execute("PRAGMA quick_check")]
        columns = {  # a search index (a virtual table) is never read: its columns do not matter
            name: set()
            if (sql or "").upper().startswith("CREATE VIRTUAL")
            else {row[1] for row in connection.execute(f'PRAGMA table_info("{name}")')}
            for name, sql in tables
        }
    except sqlite3.Error as error:
        raise _unreadable(f"{what} {path}", error) from None
    if check != ["ok"]:
        connection.close()
        raise _damaged(f"{what} {path}", f"SQLite's check says: {check[0]}")
    return connection, columns


def _unreadable(what: str, error: sqlite3.Error) -> LegacyError:
    if getattr(error, "sqlite_errorname", "").startswith("SQLITE_CORRUPT"):
        return _damaged(what, str(error))
    return LegacyError(f"{what} is not a readable SQLite database ({error})")


def _damaged(what: str, detail: str) -> LegacyError:
    return LegacyError(
        f"{what} is damaged ({detail}): a truncated or broken copy? Copy it again from the old "
        "installation, with it stopped"
    )


def _version(connection: sqlite3.Connection, columns: dict[str, set[str]], path: Path) -> int:
    if "schema_version" not in columns:
        # v1 may predate the version table: its plans table tells it apart.
        if {"events", "plans", "fragments"} <= columns.keys() and "working_memory" not in columns:
            return 1
        raise LegacyError(
            f"{path} is not a Silentstar database: it has no schema_version table"
            + (f" (its tables: {', '.join(sorted(columns))})" if columns else " and no tables")
        )
    try:
        versions = [row[0] for row in connection.execute("SELECT version FROM schema_version")]
    except sqlite3.Error as error:
        raise LegacyError(f"{path}: its schema_version cannot be read ({error})") from None
    if not versions or not all(isinstance(v, int) for v in versions):
        raise LegacyError(f"{path}: its schema_version holds no version number ({versions!r})")
    version = max(versions)
    if version not in VERSIONS:
        raise LegacyError(f"{path} is schema version {version}: this import reads versions 1 to 5")
    return version


def _shape_check(version: int, columns: dict[str, set[str]], path: Path) -> None:
    missing = [name for name in REQUIRED[version] if name not in columns]
    if missing and set(EVENTS_FILE_TABLES) <= columns.keys() and "working_memory" not in columns:
        raise LegacyError(
            f"{path} is the events file of a version 5 Gem: give the Gem (silentstar.sqlite) "
            "as the database and this file with --events"
        )
    if missing:
        raise LegacyError(
            f"{path} says schema version {version} but has no {', '.join(missing)} table: "
            "not a Silentstar database of that version"
        )
    _columns_check(columns, path)


def _columns_check(columns: dict[str, set[str]], path: Path) -> None:
    for table, present in columns.items():
        if table in COLUMNS and not set(COLUMNS[table][0]) <= present:
            lacking = sorted(set(COLUMNS[table][0]) - present)
            raise LegacyError(f"{path}: its {table} table has no {', '.join(lacking)} column")


def _legacy_open(path: Path, events_path: Path | None, zone: ZoneInfo) -> Legacy:
    gem, columns = _connect(path, what="The database")
    version = _version(gem, columns, path)
    _shape_check(version, columns, path)
    if version < 5:
        if events_path is not None:
            raise LegacyError(
                f"{path} is schema version {version}, which keeps its events in the same file: "
                "--events is only for schema version 5"
            )
        return Legacy(gem, gem, version, zone, path, None, columns, columns)
    if events_path is None:
        beside = path.parent / "events.sqlite"
        if not beside.exists():
            raise LegacyError(
                f"{path} is schema version 5, which keeps its events in a second file: give "
                f"it with --events (there is no events.sqlite beside {path.name})"
            )
        events_path = beside
    if events_path.resolve() == path.resolve():
        raise LegacyError("--events names the Gem's own file: give the events file (events.sqlite)")
    events, event_columns = _connect(events_path, what="The events file")
    if "working_memory" in event_columns or "fragments" in event_columns:
        raise LegacyError(
            f"The halves disagree: {events_path} is not an events file (it holds working "
            "memory or fragments: a Gem, or a whole database of an older version)"
        )
    missing = [name for name in EVENTS_FILE_TABLES if name not in event_columns]
    if missing:
        raise LegacyError(f"{events_path} is not an events file: it has no {', '.join(missing)}")
    _columns_check(event_columns, events_path)
    if "schema_version" in event_columns:
        try:
            found = {row[0] for row in events.execute("SELECT version FROM schema_version")}
        except sqlite3.Error as error:
            raise LegacyError(
                f"{events_path}: its schema_version cannot be read ({error})"
            ) from None
        if found != {1}:
            raise LegacyError(
                f"The halves disagree: {events_path} says schema version "
                f"{', '.join(map(str, sorted(found, key=str))) or 'none'}, and the events file of "
                "a version 5 Gem is version 1"
            )
    return Legacy(gem, events, 5, zone, path, events_path, columns, event_columns)


# --- Values -----------------------------------------------------------------------------------


def _text(value, where: str, *, max_length: int = TEXT_MAX_CHARS, null: bool = True) -> str:
    if value is None and null:
        return ""
    if not isinstance(value, str):
        raise LegacyError(f"{where}: {value!r} is not text")
    if problem := text_problem(value, limit=max_length):
        raise LegacyError(f"{where} {problem}")
    return value


def _whole(value, where: str, *, null: bool = True) -> int | None:
    if value is None and null:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise LegacyError(f"{where}: {value!r} is not a whole number")


def _id(value, where: str) -> int:
    """A legacy row's id, refused unless a whole number from 1 to ``ID_MAX``."""
    number = _whole(value, where, null=False)
    if not 1 <= number <= ID_MAX:
        raise LegacyError(f"{where}: {number} is out of range (ids run from 1 to {ID_MAX:,})")
    return number


def _max_length(model, name: str) -> int:
    return text_max(model._meta.get_field(name))


def _image_name(path_text: str, where: str) -> str:
    """The event's image as a name under MEDIA_ROOT: a relative path as it is; an absolute
    one relative to MEDIA_ROOT when it is inside it, otherwise without its leading ``/``."""
    if not path_text:
        return ""
    path = PurePosixPath(path_text)
    if path.is_absolute():
        media = PurePosixPath(Path(settings.MEDIA_ROOT).resolve())
        name = str(path.relative_to(media) if path.is_relative_to(media) else path.relative_to("/"))
    else:
        name = path_text
    if ".." in PurePosixPath(name).parts:
        raise LegacyError(f"{where}: the image path “{path_text}” climbs out of its folder")
    return _text(name, where, max_length=_max_length(Event, "image"))


# --- Events ----------------------------------------------------------------------------------


class LegacyEvent(NamedTuple):  # a named tuple: a million are made, twice
    id: int
    ts: datetime
    content: str
    actor: str
    image: str
    tags: tuple[str, ...]


def _event_batches(legacy: Legacy, tags: Counted, size: int) -> Iterator[list[LegacyEvent]]:
    """The events in id order, ``size`` at a time, each with its tags (a merge of the two
    tables read in order, so no index is needed). Tags of no event are counted skipped."""
    tag_rows = iter(())  # v1 may have no tags table
    if "event_tags" in legacy.event_columns:
        tag_rows = legacy.select("event_tags", order="ORDER BY 1, 2", distinct=True)
    pending = next(tag_rows, None)
    rows = legacy.select("events", order="ORDER BY id")
    actor_max, tag_max = _max_length(Event, "actor"), _max_length(EventTag, "tag")
    while True:
        chunk = [
            (_id(row[0], "an event's id"), *row[1:])
            for _, row in zip(range(size), rows, strict=False)
        ]
        if not chunk:
            break
        last = chunk[-1][0]
        ids = {row[0] for row in chunk}
        found: dict[int, list[str]] = defaultdict(list)
        while pending is not None and _before_or_at(pending[0], last):
            event_id, tag = pending
            if event_id in ids:
                found[event_id].append(_text(tag, f"event {event_id}'s tag", max_length=tag_max))
            else:
                tags.skip("its event is not in the file", f"{tag!r} on event {event_id}")
            pending = next(tag_rows, None)
        yield [
            LegacyEvent(
                id=event_id,
                ts=legacy.moment(ts, f"event {event_id}'s ts"),
                content=_text(content, f"event {event_id}'s content", null=False),
                actor=_text(actor, f"event {event_id}'s actor", max_length=actor_max),
                image=_image_name(
                    _text(image, f"event {event_id}'s image_path"), f"event {event_id}"
                ),
                tags=tuple(sorted(found[event_id])),
            )
            for event_id, ts, content, actor, image in chunk
        ]
    while pending is not None:
        tags.skip("its event is not in the file", f"{pending[1]!r} on event {pending[0]}")
        pending = next(tag_rows, None)


def _before_or_at(event_id, last: int) -> bool:
    """Whether a tag's event id sorts at or before ``last`` (SQLite puts NULL and numbers
    before text)."""
    return event_id is None or (isinstance(event_id, int | float) and event_id <= last)


def _events_there(first: int, last: int) -> dict[int, LegacyEvent]:
    """The installation's events with ids from ``first`` to ``last``, with their tags. Plain
    SQL: a second run reads every event, and the ORM's conversions would take longer than the
    rest (SQLite's driver gives a naive time in UTC, PostgreSQL's an aware one)."""
    connection = connections[router.db_for_read(Event)]
    quote_name = connection.ops.quote_name
    tags = defaultdict(list)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT event_id, tag FROM {quote_name(EventTag._meta.db_table)} "
            "WHERE event_id BETWEEN %s AND %s",
            [first, last],
        )
        for event_id, tag in cursor.fetchall():
            tags[event_id].append(tag)
        cursor.execute(
            f"SELECT id, ts, content, actor, image FROM {quote_name(Event._meta.db_table)} "
            "WHERE id BETWEEN %s AND %s",
            [first, last],
        )
        return {
            pk: LegacyEvent(
                pk,
                ts if ts.tzinfo else ts.replace(tzinfo=UTC),
                content,
                actor,
                image,
                tuple(sorted(tags[pk])),
            )
            for pk, ts, content, actor, image in cursor.fetchall()
        }


def _image_check(event: LegacyEvent, report: LegacyReport) -> None:
    report.images_named += 1
    if not default_storage.exists(event.image):
        report.images_missing += 1
        if len(report.images_missing_examples) < EXAMPLES:
            report.images_missing_examples.append(f"{event.image} (event {event.id})")


def _event_different(ours: LegacyEvent, theirs: LegacyEvent) -> str | None:
    """The first field in which the installation's event differs from the legacy one."""
    for name in ("ts", "content", "actor", "image", "tags"):
        if getattr(ours, name) != getattr(theirs, name):
            return name
    return None


def _conflict(what: str, name: str, field_name: str, here, there, path: Path) -> LegacyError:
    return LegacyError(
        f"This installation already holds {what} {name} with other content than {path} has "
        f"({field_name}: {_short(here)} here, {_short(there)} there): is one of them another "
        "installation's memory? Nothing was changed"
    )


def _short(value) -> str:
    text = value.isoformat() if isinstance(value, datetime) else repr(value)
    return text if len(text) <= 60 else f"{text[:57]}…"


@dataclass
class EventScan:
    """What the check found in the event log."""

    total: int = 0
    first: int | None = None
    last: int | None = None
    ts_of: dict[int, datetime] = field(default_factory=dict)  # the referenced events only
    text_of: dict[int, str] = field(default_factory=dict)  # the referenced events only
    actors: Counter = field(default_factory=Counter)
    installation_had: int = 0


def _events_check(
    legacy: Legacy,
    report: LegacyReport,
    referenced: set[int],
    *,
    size: int,
    progress: StageProgress,
) -> EventScan:
    scan = EventScan()
    (scan.total, scan.first, scan.last) = next(
        legacy.rows(legacy.events, "SELECT count(*), min(id), max(id) FROM events")
    )
    if scan.total:  # SQLite's min and max put numbers before text: both ends checked here
        scan.first, scan.last = _id(scan.first, "an event's id"), _id(scan.last, "an event's id")
    scan.installation_had = Event.objects.count()
    overlap = scan.total and Event.objects.filter(pk__gte=scan.first, pk__lte=scan.last).exists()
    counted, tags = report.tables["events"], report.tables["event tags"]
    done = 0
    for batch in _event_batches(legacy, tags, size):
        there = _events_there(batch[0].id, batch[-1].id) if overlap else {}
        for event in batch:
            if event.id in referenced:
                scan.ts_of[event.id] = event.ts
                scan.text_of[event.id] = event.content
            scan.actors[event.actor] += 1
            if event.image:
                _image_check(event, report)
            theirs = there.get(event.id)
            if theirs is None:
                counted.imported += 1
                tags.imported += len(event.tags)
            elif (name := _event_different(event, theirs)) is not None:
                raise _conflict(
                    "event",
                    str(event.id),
                    name,
                    getattr(theirs, name),
                    getattr(event, name),
                    legacy.events_path or legacy.path,
                )
            else:
                counted.already += 1
                tags.already += len(event.tags)
        done += len(batch)
        progress("checking events", done, scan.total)
    return scan


def _events_write(
    legacy: Legacy, *, legacy_range: tuple[int, int], size: int, total: int, progress: StageProgress
) -> None:
    """The new events and their tags, one transaction per batch; ids kept."""
    alias = router.db_for_write(Event)
    connection = connections[alias]
    quote_name = connection.ops.quote_name
    columns = ", ".join(
        quote_name(Event._meta.get_field(name).column)
        for name in ("id", "ts", "content", "actor", "image")
    )
    event_sql = (
        f"INSERT INTO {quote_name(Event._meta.db_table)} ({columns}) VALUES (%s, %s, %s, %s, %s)"
    )
    tag_sql = (
        f"INSERT INTO {quote_name(EventTag._meta.db_table)} "
        f"({quote_name('event_id')}, {quote_name('tag')}) VALUES (%s, %s)"
    )
    first, last = legacy_range
    overlap = Event.objects.filter(pk__gte=first, pk__lte=last).exists()
    ignored = Counted()  # the check counted the skipped tags already
    done = 0
    with _page_cache_enlarged(connection):
        for batch in _event_batches(legacy, ignored, size):
            _events_batch_write(batch, overlap=overlap, done=done, sql=(event_sql, tag_sql))
            done += len(batch)
            progress("importing events", done, total)


def _events_batch_write(
    batch: list[LegacyEvent], *, overlap: bool, done: int, sql: tuple[str, str]
) -> None:
    """One batch's new events and their tags, in one transaction."""
    alias = router.db_for_write(Event)
    connection = connections[alias]
    there = _events_there(batch[0].id, batch[-1].id) if overlap else {}
    new = [event for event in batch if event.id not in there]
    if not new:
        return
    adapt = connection.ops.adapt_datetimefield_value
    rows = [(e.id, adapt(e.ts), e.content, e.actor, e.image) for e in new]
    tag_rows = [(e.id, tag) for e in new for tag in e.tags]
    event_sql, tag_sql = sql
    try:
        with transaction.atomic(using=alias), connection.cursor() as cursor:
            cursor.executemany(event_sql, rows)
            if tag_rows:
                cursor.executemany(tag_sql, tag_rows)
    except DatabaseError as error:
        raise LegacyError(
            f"Writing events {new[0].id}…{new[-1].id} failed ({error}). The {done:,} events "
            "before them are written; is the app running and writing events of its own? Stop "
            "it and run the import again: it goes on from there",
            written=done > 0,
        ) from error


@contextmanager
def _page_cache_enlarged(connection) -> Iterator[None]:
    """On SQLite, a larger page cache while the events are written (the search index's insert
    trigger writes less often), given back afterwards: the connection goes on serving."""
    if connection.vendor != "sqlite":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA cache_size")
        (pages,) = cursor.fetchone()
        cursor.execute(f"PRAGMA cache_size = {IMPORT_CACHE_KIB}")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA cache_size = {int(pages)}")


# --- The Gem ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class LegacyItem:
    """A working-memory item (or a v1 plan) as the import writes it."""

    id: int
    type: str
    content: str
    subject: str
    actor: str
    status: str
    due: datetime | None
    turn: int | None
    created_at: datetime
    refreshed_at: datetime
    resolved_at: datetime | None
    event_id: int | None


@dataclass
class Gem:
    """The legacy Gem, checked, and what of it the write puts in."""

    fragments: list[tuple[str, str, str, str, datetime, datetime]] = field(default_factory=list)
    edges: list[tuple[str, str, str]] = field(default_factory=list)
    sources: list[tuple[str, int]] = field(default_factory=list)
    items: list[LegacyItem] = field(default_factory=list)
    refs: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))
    state: list[tuple[str, str, datetime]] = field(default_factory=list)  # key, JSON, updated
    turn_counter: int | None = None
    pending_recall: list | None = None
    runs: list[MirrorRun] = field(default_factory=list)
    referenced: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))
    said_after: list[LegacyItem] = field(default_factory=list)  # items naming their event
    keys_after: set[str] = field(default_factory=set)  # fragments there once it is written


def _gem_read(legacy: Legacy, report: LegacyReport) -> Gem:
    """Every legacy Gem table, checked row by row and against the installation."""
    gem = Gem()
    _fragments_read(legacy, report, gem)
    _edges_read(legacy, report, gem)
    _items_read(legacy, report, gem)
    _refs_read(legacy, report, gem)
    _sources_read(legacy, report, gem)
    _state_read(legacy, report, gem)
    _runs_read(legacy, report, gem)
    for table in ("plans", "_plans_retired"):
        if legacy.version > 1 and table in legacy.columns:
            (count,) = next(legacy.rows(legacy.gem, f'SELECT count(*) FROM "{table}"'))
            if count:
                report.notes.append(
                    f"{counted(count, 'row')} of {table} not imported: schema "
                    f"v{legacy.version} keeps plans in working memory (the v2 migration moved "
                    "them there)"
                )
    return gem


def _fragments_read(legacy: Legacy, report: LegacyReport, gem: Gem) -> None:
    counted = report.tables["fragments"]
    key_max = _max_length(Fragment, "key")
    rows = []
    for key, created, updated, ambient, recognition, inventory in legacy.select(
        "fragments", order="ORDER BY key"
    ):
        key = _text(key, "a fragment's key", max_length=key_max, null=False)
        if not key:
            raise LegacyError(f"{legacy.path}: a fragment has an empty key")
        where = f"fragment {key}"
        rows.append(
            (
                key,
                _text(ambient, f"{where}'s ambient"),
                _text(recognition, f"{where}'s recognition"),
                _text(inventory, f"{where}'s inventory"),
                legacy.moment(created, f"{where}'s created_at"),
                legacy.moment(updated, f"{where}'s updated_at"),
            )
        )
    there = {
        key: (created, tiers)
        for key, created, *tiers in Fragment.objects.filter(
            key__in=[row[0] for row in rows]
        ).values_list("key", "created_at", "ambient", "recognition", "inventory")
    }
    edited = 0
    for row in rows:
        if row[0] not in there:
            counted.imported += 1
            gem.fragments.append(row)
            continue
        created, tiers = there[row[0]]
        if created != row[4]:
            raise _conflict("fragment", row[0], "created_at", created, row[4], legacy.path)
        counted.already += 1
        edited += list(row[1:4]) != tiers
    if edited:
        report.notes.append(
            f"{edited} fragments already here were changed since (in the Anvil, or in the old "
            "installation): kept as this installation has them"
        )
    gem.keys_after = {row[0] for row in rows} | set(Fragment.objects.values_list("key", flat=True))
    unusual = [row[0] for row in rows if not KEY_VALIDATOR.regex.search(row[0])]
    if unusual:
        report.notes.append(
            f"{len(unusual)} fragment keys are not one word as the Anvil wants them (first: "
            f"{unusual[0]!r}): imported as they are; rename them in the Anvil"
        )


def _edges_read(legacy: Legacy, report: LegacyReport, gem: Gem) -> None:
    if "fragment_edges" not in legacy.columns:
        return
    counted = report.tables["fragment edges"]
    relation_max = _max_length(FragmentEdge, "relation")
    there = set(FragmentEdge.objects.values_list("source_id", "target_id"))
    seen = set()
    for source, target, relation in legacy.select("fragment_edges", order="ORDER BY 1, 2"):
        source = _text(source, "an edge's source_key")
        target = _text(target, "an edge's target_key")
        relation = _text(relation, f"edge {source} → {target}'s relation", max_length=relation_max)
        label = f"{source} → {target}"
        if source == target:
            counted.skip("a loop (a fragment to itself), which edges cannot be", label)
        elif missing := [key for key in (source, target) if key not in gem.keys_after]:
            counted.skip("names a fragment that does not exist", f"{label} ({missing[0]})")
        elif (source, target) in seen:
            counted.skip("a second edge between the same two fragments", label)
        elif (source, target) in there:
            counted.already += 1
        else:
            counted.imported += 1
            gem.edges.append((source, target, relation))
        seen.add((source, target))


def _items_read(legacy: Legacy, report: LegacyReport, gem: Gem) -> None:
    counted = report.tables["working memory"]
    items = list(_plans(legacy) if legacy.version == 1 else _working_memory(legacy))
    there = {
        row[0]: row
        for row in WorkingMemory.objects.filter(pk__in=[i.id for i in items]).values_list(
            "pk", "type", "content", "subject", "actor", "event_id", "created_at"
        )
    }
    trimmed = 0
    for item in items:
        label = f"item {item.id}"
        if item.type not in WorkingMemoryType.values:
            counted.skip(f"an unknown type “{item.type}”", label)
            continue
        if item.status not in WorkingMemoryStatus.values:
            counted.skip(f"an unknown status “{item.status}”", label)
            continue
        if not item.content.strip():
            counted.skip("no content", label)
            continue
        if item.event_id is not None:
            gem.referenced[item.event_id].append(f"working-memory item {item.id}")
            gem.said_after.append(item)
        ours = (item.type, item.content.strip(), item.subject.strip(), item.actor, item.event_id)
        if item.id in there:
            theirs = there[item.id]
            names = ("type", "content", "subject", "actor", "event_id", "created_at")
            for name, mine, other in zip(names, (*ours, item.created_at), theirs[1:], strict=True):
                if mine != other:
                    raise _conflict(
                        "working-memory item", str(item.id), name, other, mine, legacy.path
                    )
            counted.already += 1
            continue
        trimmed += item.content != item.content.strip() or item.subject != item.subject.strip()
        counted.imported += 1
        gem.items.append(item)
    if trimmed:
        report.notes.append(
            f"{trimmed} working-memory items had spaces around their content or subject, "
            "which working memory's one write trims (the events keep the text exactly)"
        )


def _working_memory(legacy: Legacy) -> Iterator[LegacyItem]:
    subject_max = _max_length(WorkingMemory, "subject")
    actor_max = _max_length(WorkingMemory, "actor")
    for row in legacy.select("working_memory", order="ORDER BY id"):
        (
            pk,
            type_,
            content,
            status,
            created,
            refreshed,
            event_id,
            subject,
            actor,
            due,
            turn,
            resolved,
        ) = row
        where = f"working-memory item {pk}"
        yield LegacyItem(
            id=_id(pk, f"{where}'s id"),
            type=_text(type_, f"{where}'s type"),
            content=_text(content, f"{where}'s content"),
            subject=_text(subject, f"{where}'s subject", max_length=subject_max),
            actor=_text(actor, f"{where}'s actor", max_length=actor_max),
            status=_text(status, f"{where}'s status"),
            due=legacy.moment(due, f"{where}'s due", null=True),
            turn=_whole(turn, f"{where}'s turn"),
            created_at=legacy.moment(created, f"{where}'s created_at"),
            refreshed_at=legacy.moment(refreshed, f"{where}'s refreshed_at"),
            resolved_at=legacy.moment(resolved, f"{where}'s resolved_at", null=True),
            event_id=_whole(event_id, f"{where}'s event_id"),
        )


def _plans(legacy: Legacy) -> Iterator[LegacyItem]:
    """v1's plans as plan items: same id; done → resolved, cancelled → dropped, expired →
    decayed; refreshed when created; the time a plan left ``active`` was not kept."""
    actor_max = _max_length(WorkingMemory, "actor")
    for pk, summary, status, created, event_id, actor, due in legacy.select(
        "plans", order="ORDER BY id"
    ):
        where = f"plan {pk}"
        created_at = legacy.moment(created, f"{where}'s created_at")
        status = _text(status, f"{where}'s status")
        yield LegacyItem(
            id=_id(pk, f"{where}'s id"),
            type=WorkingMemoryType.PLAN,
            content=_text(summary, f"{where}'s summary"),
            subject="",
            actor=_text(actor, f"{where}'s actor", max_length=actor_max),
            status=PLAN_STATUSES.get(status, status),
            due=legacy.moment(due, f"{where}'s due", null=True),
            turn=None,
            created_at=created_at,
            refreshed_at=created_at,
            resolved_at=None,
            event_id=_whole(event_id, f"{where}'s event_id"),
        )


def _refs_read(legacy: Legacy, report: LegacyReport, gem: Gem) -> None:
    if "working_memory_refs" not in legacy.columns:
        return
    counted = report.tables["working-memory refs"]
    new = {item.id for item in gem.items}
    had = set(WorkingMemory.objects.values_list("pk", flat=True))
    there = set(WorkingMemoryRef.objects.values_list("wm_id", "fragment_id"))
    for wm_id, key in legacy.select("working_memory_refs", order="ORDER BY 1, 2", distinct=True):
        key = _text(key, f"a working-memory ref of item {wm_id}")
        label = f"item {wm_id} → {key}"
        if wm_id not in new and wm_id not in had:
            counted.skip("its working-memory item is not imported", label)
        elif key not in gem.keys_after:
            counted.skip("names a fragment that does not exist", label)
        elif wm_id in new:
            counted.imported += 1
            gem.refs[wm_id].append(key)
        elif (wm_id, key) in there:
            counted.already += 1
        else:
            counted.skip("its item was already here without it", label)


def _sources_read(legacy: Legacy, report: LegacyReport, gem: Gem) -> None:
    if "fragment_sources" not in legacy.columns:
        return
    counted = report.tables["fragment sources"]
    there = set(FragmentSource.objects.values_list("fragment_id", "event_id"))
    for key, event_id in legacy.select("fragment_sources", order="ORDER BY 1, 2", distinct=True):
        key = _text(key, "a fragment source's fragment_key")
        event_id = _whole(event_id, f"fragment {key}'s source event_id", null=False)
        label = f"{key} ← event {event_id}"
        if key not in gem.keys_after:
            counted.skip("names a fragment that does not exist", label)
            continue
        gem.referenced[event_id].append(f"fragment {key}'s source")
        if (key, event_id) in there:
            counted.already += 1
        else:
            counted.imported += 1
            gem.sources.append((key, event_id))


def _state_read(legacy: Legacy, report: LegacyReport, gem: Gem) -> None:
    if "state" not in legacy.columns:
        return
    counted = report.tables["state"]
    rows = list(legacy.select("state", order="ORDER BY key"))
    key_max = _max_length(State, "key") - len(LEGACY_STATE_PREFIX)
    there = dict(State.objects.values_list("key", "value"))
    for key, value, updated in rows:
        key = _text(key, "a state key", max_length=key_max, null=False)
        value = value if isinstance(value, str) else json.dumps(value)
        value = _text(value, f"state {key}'s value")
        if key in TURN_KEYS:
            try:
                gem.turn_counter = max(gem.turn_counter or 0, int(value))
                continue
            except ValueError:
                pass  # kept as it is below
        if key in RECALL_KEYS and (requests := _recall_requests(value)) is not None:
            gem.pending_recall = requests
            continue
        name = LEGACY_STATE_PREFIX + key
        encoded = json.dumps(value)
        if name not in there:
            counted.imported += 1
            moment = legacy.moment(updated, f"state {key}'s updated_at", null=True)
            gem.state.append((name, encoded, moment or datetime.now(UTC)))
        elif there[name] == encoded:
            counted.already += 1
        else:
            counted.skip("this installation holds another value under its name", name)


def _recall_requests(value: str) -> list[dict] | None:
    """A legacy pending recall as the Heart's requests (``{"key", "deep"}`` or ``{"search"}``),
    or None when it is not a list of them (kept as a legacy value then)."""
    try:
        found = json.loads(value)
    except ValueError:
        return None
    if not isinstance(found, list):
        return None
    requests = []
    for entry in found:
        if isinstance(entry, str) and entry:
            requests.append({"key": entry, "deep": True})
        elif isinstance(entry, dict) and isinstance(entry.get("key"), str):
            requests.append({"key": entry["key"], "deep": bool(entry.get("deep", True))})
        elif isinstance(entry, dict) and isinstance(entry.get("search"), str):
            requests.append({"search": entry["search"]})
        else:
            return None
    return requests


def _runs_read(legacy: Legacy, report: LegacyReport, gem: Gem) -> None:
    if "maintenance_runs" not in legacy.columns:
        return
    counted = report.tables["maintenance runs"]
    kind_max = _max_length(MirrorRun, "kind")
    runs = []
    for pk, started, run_type, completed in legacy.select("maintenance_runs", order="ORDER BY id"):
        where = f"maintenance run {pk}"
        started_at = legacy.moment(started, f"{where}'s started_at")
        completed_at = legacy.moment(completed, f"{where}'s completed_at", null=True)
        runs.append(
            MirrorRun(
                id=_id(pk, f"{where}'s id"),
                started_at=started_at,
                completed_at=completed_at,
                kind=_text(run_type, f"{where}'s run_type", max_length=kind_max, null=False),
                status=MirrorRunStatus.DONE if completed_at else MirrorRunStatus.FAILED,
                error=""
                if completed_at
                else "A maintenance run of the old installation that never completed "
                "(it crashed, or was running when the database was copied).",
                heartbeat_at=completed_at or started_at,
            )
        )
    there = {
        pk: (started, kind)
        for pk, started, kind in MirrorRun.objects.filter(
            pk__in=[run.id for run in runs]
        ).values_list("pk", "started_at", "kind")
    }
    for run in runs:
        if run.id not in there:
            counted.imported += 1
            gem.runs.append(run)
            continue
        started, kind = there[run.id]
        if (started, kind) != (run.started_at, run.kind):
            name = "started_at" if started != run.started_at else "kind"
            theirs = started if name == "started_at" else kind
            raise _conflict(
                "Mirror run", str(run.id), name, theirs, getattr(run, name), legacy.path
            )
        counted.already += 1


def _halves_check(legacy: Legacy, report: LegacyReport, gem: Gem, scan: EventScan) -> None:
    """Whether the v5 Gem and the events file are one installation's: every event the Gem names
    is in the file, said before what came of it and saying it, and the turn counter fits the
    log."""
    missing = sorted(set(gem.referenced) - set(scan.ts_of))
    if missing:
        raise LegacyError(
            f"The halves disagree: {legacy.path} refers to {len(missing)} events that "
            f"{legacy.events_path} does not hold (first: event {missing[0]}, named by "
            f"{gem.referenced[missing[0]][0]}). Are they from two different installations, or "
            "is the events file older than the Gem? Nothing was changed"
        )
    for item in gem.said_after:
        said = scan.ts_of.get(item.event_id)
        if said is not None and item.created_at < said - CLOCK_SLACK:
            raise LegacyError(
                f"The halves disagree: working-memory item {item.id} was written at "
                f"{item.created_at.isoformat()}, before event {item.event_id} it came from was "
                f"said ({said.isoformat()}) in {legacy.events_path}: they are from two "
                "different installations. Nothing was changed"
            )
    _texts_check(legacy, report, gem, scan)
    if gem.turn_counter is not None and gem.turn_counter > scan.total:
        raise LegacyError(
            f"The halves disagree: {legacy.path} counts {gem.turn_counter} turns, but "
            f"{legacy.events_path} holds only {scan.total} events: they are from two different "
            "installations. Nothing was changed"
        )


def _texts_check(legacy: Legacy, report: LegacyReport, gem: Gem, scan: EventScan) -> None:
    """Whether the events file says what the Gem's working memory came from. The tag language
    writes an item from a tag in its event's text, in the turn the event is said: so its words
    are in that text, and it was written within ``CLOCK_SLACK`` of it. Another installation's
    file fails both for most items, whatever its times; a few items that fail in a true pair
    (written by hand with an event, or long after) are noted and imported."""
    fits, misfits = 0, []
    for item in gem.said_after:
        text, said = scan.text_of.get(item.event_id), scan.ts_of.get(item.event_id)
        if text is None:
            continue
        if _words(item.content) not in _words(text):
            misfits.append(
                f"item {item.id}'s {_short(item.content)} is not in the text of event "
                f"{item.event_id}, {_short(text)}"
            )
        elif item.created_at > said + CLOCK_SLACK:
            days = round((item.created_at - said) / timedelta(days=1))
            misfits.append(
                f"item {item.id} was written {days} days after event {item.event_id}, whose "
                "text it came from, was said"
            )
        else:
            fits += 1
    if not misfits:
        return
    first = "; ".join(misfits[:EXAMPLES])
    if len(misfits) > fits:
        raise LegacyError(
            f"The halves disagree: {len(misfits)} of the {len(misfits) + fits} working-memory "
            f"items in {legacy.path} that name an event do not fit its text in "
            f"{legacy.events_path} (first: {first}). The events file is another installation's "
            "or another copy's: give the events file copied with this Gem from the same "
            "installation (its data/events.sqlite). Nothing was changed"
        )
    report.notes.append(
        f"{len(misfits)} of the {len(misfits) + fits} working-memory items that name an event "
        f"do not fit its text (first: {first}): written by hand or much later? Imported as "
        "they are"
    )


def _words(text: str) -> str:
    """The text's words (tag names among them), lower case, each between spaces."""
    return f" {' '.join(WORD.findall(text.casefold()))} "


def _leftover_events_check(legacy: Legacy, report: LegacyReport) -> None:
    """A v5 Gem may keep its old event log when the split found the events file empty; each of
    its events must then be in the events file as it is."""
    if "events" not in legacy.columns:
        return
    (count,) = next(legacy.rows(legacy.gem, "SELECT count(*) FROM events"))
    if not count:
        return
    for pk, ts, content in legacy.rows(legacy.gem, "SELECT id, ts, content FROM events"):
        found = legacy.events.execute("SELECT ts, content FROM events WHERE id = ?", (pk,))
        if found.fetchone() != (ts, content):
            raise LegacyError(
                f"The halves disagree: event {pk} of the old log left in {legacy.path} is not "
                f"in {legacy.events_path} as it is. Nothing was changed"
            )
    report.notes.append(
        f"{count} events left in the Gem file from before the v5 split are all in the events "
        "file, and were imported from there"
    )


def _gem_write(gem: Gem, report: LegacyReport) -> None:
    """The Gem in one transaction, through its writes of what was recorded elsewhere: fragments
    (their times exact), edges, sources, working memory, state."""
    with transaction.atomic(using=router.db_for_write(Fragment)):
        fragments_import(
            rows=(
                FragmentRecorded(
                    key=k, ambient=a, recognition=r, inventory=i, created_at=c, updated_at=u
                )
                for k, a, r, i, c, u in gem.fragments
            )
        )
        edges_import(
            rows=(
                FragmentEdgeRecorded(source_id=s, target_id=t, relation=r) for s, t, r in gem.edges
            )
        )
        sources_import(
            rows=(FragmentSourceRecorded(fragment_id=key, event_id=pk) for key, pk in gem.sources)
        )
        for item in gem.items:
            try:
                working_memory_create(
                    type=item.type,
                    content=item.content,
                    subject=item.subject,
                    actor=item.actor,
                    at=item.created_at,
                    turn=item.turn,
                    event_id=item.event_id,
                    due=item.due,
                    recorded=WorkingMemoryRecorded(
                        id=item.id,
                        status=item.status,
                        created_at=item.created_at,
                        refreshed_at=item.refreshed_at,
                        resolved_at=item.resolved_at,
                        fragment_keys=tuple(gem.refs.get(item.id, ())),
                    ),
                )
            except WorkingMemoryError as error:  # the check let through what it refuses
                raise LegacyError(f"working-memory item {item.id}: {error}") from error
        _state_write(gem, report)


def _state_write(gem: Gem, report: LegacyReport) -> None:
    counted = report.tables["state"]
    current = state_get_many({TURN_COUNTER: 0, PENDING_RECALL: []})
    turns = [item.turn for item in gem.items if item.turn is not None]
    legacy_counter = max([gem.turn_counter or 0, *turns])
    before = current[TURN_COUNTER]
    report.turn_counter = (before, max(before, legacy_counter))
    if legacy_counter > before:
        counted.imported += 1
        if not report.dry_run:
            state_set(TURN_COUNTER, legacy_counter)
    elif gem.turn_counter is not None:
        counted.already += 1
    if gem.pending_recall is not None:
        if current[PENDING_RECALL] == gem.pending_recall:
            counted.already += 1
        elif current[PENDING_RECALL]:
            counted.skip("this installation has a pending recall of its own", PENDING_RECALL)
        elif gem.pending_recall:
            counted.imported += 1
            if not report.dry_run:
                state_set(PENDING_RECALL, gem.pending_recall)
    if report.dry_run:
        return
    State.objects.bulk_create([State(key=key, value=value) for key, value, _ in gem.state])
    for key, _, updated in gem.state:  # updated_at is auto_now: set afterwards
        State.objects.filter(key=key).update(updated_at=updated)


# --- The import ------------------------------------------------------------------------------


def legacy_import(
    *,
    path: Path,
    events_path: Path | None = None,
    time_zone: str | None = None,
    dry_run: bool = False,
    batch_size: int = BATCH,
    progress: StageProgress | None = None,
) -> LegacyReport:
    """Import the legacy database at ``path`` (and a v5 Gem's events file ``events_path``,
    default ``events.sqlite`` beside it) into this installation; or, with ``dry_run``, only
    check it and report what an import would do.

    Naive legacy times are read in ``time_zone`` (default: the owner's TIME_ZONE). Raises
    ``LegacyError`` for a refused file, before anything is written.
    """
    began = time.perf_counter()
    progress = progress or (lambda stage, done, total: None)
    zone_name = time_zone or settings.TIME_ZONE
    try:
        zone = ZoneInfo(zone_name)
    except (ZoneInfoNotFoundError, ValueError):
        raise LegacyError(
            f"“{zone_name}” is not an IANA time zone (such as Europe/London)"
        ) from None
    legacy = _legacy_open(Path(path), Path(events_path) if events_path else None, zone)
    try:
        report = LegacyReport(
            path=legacy.path,
            events_path=legacy.events_path,
            version=legacy.version,
            time_zone=zone_name,
            dry_run=dry_run,
        )
        gem = _gem_read(legacy, report)
        scan = _events_check(
            legacy, report, set(gem.referenced), size=batch_size, progress=progress
        )
        if legacy.version == 5:
            _halves_check(legacy, report, gem, scan)
            _leftover_events_check(legacy, report)
        else:
            dangling = len(set(gem.referenced) - set(scan.ts_of))
            if dangling:
                report.notes.append(
                    f"{dangling} events named by working memory or fragment sources are not in "
                    "the file: the references are kept as they are"
                )
        report.naive_times = legacy.naive_times  # the write reads the events again
        _notes_on_events(scan, report)
        if not dry_run:
            if scan.total:
                _events_write(
                    legacy,
                    legacy_range=(scan.first, scan.last),
                    size=batch_size,
                    total=scan.total,
                    progress=progress,
                )
            try:
                _gem_write(gem, report)
                with transaction.atomic(using=router.db_for_write(MirrorRun)):
                    MirrorRun.objects.bulk_create(gem.runs)
                sequences_reset([Event, WorkingMemory, MirrorRun])
            except DatabaseError as error:
                raise LegacyError(
                    f"Writing the Gem or the maintenance runs failed ({error}); the events are "
                    "written, and the Gem's transaction left it whole or untouched. Run the "
                    "import again to finish it",
                    written=True,
                ) from error
        else:
            _state_write(gem, report)
    finally:
        legacy.gem.close()
        legacy.events.close()
    report.seconds = time.perf_counter() - began
    return report


def _notes_on_events(scan: EventScan, report: LegacyReport) -> None:
    counted = report.tables["events"]
    own = scan.installation_had - counted.already
    if own > 0:
        report.notes.append(
            f"This installation already had {own:,} events of its own: the imported ones keep "
            "their ids among them"
        )
    known = set(Identity.objects.values_list("name", flat=True))
    strangers = {actor: n for actor, n in scan.actors.items() if actor and actor not in known}
    if strangers:
        named = ", ".join(f"{actor} ({n:,})" for actor, n in sorted(strangers.items())[:5])
        report.notes.append(
            f"Speakers that are not identities here: {named}; add them in the Anvil to give "
            "them a side and a colour"
        )
