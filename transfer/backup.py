"""Backup and restore of a whole installation: the four stores and the uploaded images.

``backup_create`` copies every distinct database (SQLite's backup API per store file,
``pg_dump`` per PostgreSQL database) and every file under MEDIA_ROOT into one folder, with a
manifest of sizes and SHA-256 checksums, while the web and the worker keep running.
``backup_restore`` checks a backup from end to end before it touches anything, then puts it
into an empty installation. docs/backup.md describes the folder, the manifest and the rules.
"""

import hashlib
import json
import os
import posixpath
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from contextlib import ExitStack, closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

import psycopg
from django.conf import settings
from django.core.files.storage import Storage, storages
from django.db import connections
from psycopg.conninfo import make_conninfo

from events.models import Event
from gem.models import Fragment, WorkingMemory
from mirror.models import Summary
from silentstar.router import store_of

FORMAT = 1
MANIFEST = "manifest.json"
FOLDER_PREFIX = "silentstar-"
FOLDER_TIME = "%Y-%m-%dT%H-%M-%SZ"
# What makes an installation non-empty, and what the manifest counts.
MAIN_TABLES = {
    "events": Event,
    "working_memory": WorkingMemory,
    "fragments": Fragment,
    "summaries": Summary,
}
# Every store is pinned (its snapshot taken) before the stores its rows point at: snapshots
# name their turn, summaries and working memory their events, and the app always writes the
# row pointed at first, so a row in an earlier snapshot finds its target in a later one.
PIN_ORDER = ("snapshots", "summaries", "default", "events")
# Django's own connection options, which libpq does not know.
DJANGO_ONLY_OPTIONS = {"isolation_level", "assume_role", "server_side_binding", "pool"}
CHUNK = 2**20

Progress = Callable[[str], None]  # a line of news of a long command, for its person


class BackupError(Exception):
    """A backup that cannot be made, or that cannot be restored here: the message says why."""


@dataclass(frozen=True)
class Database:
    """One physical database and the aliases that reach it."""

    aliases: tuple[str, ...]
    backend: str  # "sqlite" or "postgresql"

    @property
    def file_name(self) -> str:
        if self.backend == "sqlite":
            return f"databases/{self.path.name}"
        return f"databases/{self.aliases[0]}.pgdump"

    @property
    def path(self) -> Path:
        return Path(settings.DATABASES[self.aliases[0]]["NAME"])


def databases() -> list[Database]:
    """The distinct databases of this installation, in the order they are pinned."""
    grouped: dict[str, list[str]] = {}
    for alias in settings.STORE_ALIASES:
        grouped.setdefault(settings.STORE_LOCATIONS[alias], []).append(alias)
    found = [
        Database(aliases=tuple(aliases), backend=_backend(aliases[0]))
        for aliases in grouped.values()
    ]
    return sorted(found, key=lambda database: max(map(PIN_ORDER.index, database.aliases)))


def _backend(alias: str) -> str:
    return "sqlite" if settings.DATABASES[alias]["ENGINE"].endswith("sqlite3") else "postgresql"


# --- PostgreSQL's client programs ------------------------------------------------------------


def conninfo(alias: str) -> str:
    """A libpq connection string for an alias, without its password (see ``pg_env``)."""
    database = settings.DATABASES[alias]
    options = {
        key: value for key, value in database["OPTIONS"].items() if key not in DJANGO_ONLY_OPTIONS
    }
    return make_conninfo(
        dbname=database["NAME"],
        user=database["USER"] or None,
        host=database["HOST"] or None,
        port=database["PORT"] or None,
        **options,
    )


def pg_env(alias: str) -> dict[str, str]:
    """The environment of pg_dump and pg_restore: the password stays out of the process list."""
    password = settings.DATABASES[alias]["PASSWORD"]
    return {**os.environ, "PGPASSWORD": password} if password else dict(os.environ)


def pg_connect(alias: str) -> psycopg.Connection:
    return psycopg.connect(conninfo(alias), password=settings.DATABASES[alias]["PASSWORD"] or None)


def _tool_major(path: str) -> int | None:
    shown = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    found = re.search(r"\(PostgreSQL\) (\d+)", shown)
    return int(found.group(1)) if found else None


def postgres_tool(name: str, *, server_major: int) -> str:
    """The path of ``pg_dump`` or ``pg_restore`` at least as new as the server: on the PATH, or
    beside ``pg_config --bindir``."""
    candidates = []
    if on_path := shutil.which(name):
        candidates.append(on_path)
    if pg_config := shutil.which("pg_config"):
        bindir = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        beside = Path(bindir.stdout.strip()) / name
        if bindir.returncode == 0 and beside.is_file():
            candidates.append(str(beside))
    if not candidates:
        raise BackupError(
            f"{name} is missing: install PostgreSQL's client programs, version {server_major} "
            "or newer (Debian: apt-get install postgresql-client), on the PATH or beside "
            "pg_config --bindir"
        )
    seen = []
    for candidate in candidates:
        major = _tool_major(candidate)
        if major is not None and major >= server_major:
            return candidate
        seen.append(f"{candidate} ({major or 'unknown version'})")
    raise BackupError(
        f"{name} is older than the server (PostgreSQL {server_major}): found {', '.join(seen)}; "
        f"install the client programs of version {server_major} or newer"
    )


# --- Backing up -------------------------------------------------------------------------------


class _SqlitePin:
    """A read transaction on one SQLite file: the backup API then copies that snapshot, while
    the app's writers carry on in the write-ahead log."""

    def __init__(self, database: Database):
        if not database.path.exists():
            raise BackupError(
                f"the {database.aliases[0]} store has no file at {database.path}: "
                f"run manage.py migrate --database {database.aliases[0]}"
            )
        self.connection = sqlite3.connect(
            database.path, isolation_level=None, timeout=settings.SQLITE_BUSY_TIMEOUT_MS / 1000
        )
        self.connection.execute("BEGIN")
        self.connection.execute("SELECT count(*) FROM sqlite_master").fetchone()  # takes it

    def table_exists(self, table: str) -> bool:
        found = self.connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [table]
        )
        return found.fetchone() is not None

    def rows(self, sql: str) -> list[tuple]:
        return self.connection.execute(sql).fetchall()

    def copy_to(self, path: Path) -> None:
        with closing(sqlite3.connect(path)) as copy:
            self.connection.backup(copy)
            # One self-contained file: no write-ahead log beside it to lose or to mismatch.
            copy.execute("PRAGMA journal_mode=DELETE")

    def close(self) -> None:
        self.connection.close()


class _PostgresPin:
    """A repeatable-read transaction whose snapshot pg_dump is given (``--snapshot``): the
    counts in the manifest and the dump then see the same rows."""

    def __init__(self, database: Database):
        self.alias = database.aliases[0]
        self.connection = pg_connect(self.alias)
        self.pg_dump = postgres_tool(
            "pg_dump", server_major=self.connection.info.server_version // 10000
        )
        self.connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        self.snapshot = self.connection.execute("SELECT pg_export_snapshot()").fetchone()[0]

    def table_exists(self, table: str) -> bool:
        return self.connection.execute("SELECT to_regclass(%s)", [table]).fetchone()[0] is not None

    def rows(self, sql: str) -> list[tuple]:
        return self.connection.execute(sql).fetchall()

    def copy_to(self, path: Path) -> None:
        dumped = subprocess.run(
            [
                self.pg_dump,
                "--format=custom",
                f"--snapshot={self.snapshot}",
                f"--file={path}",
                f"--dbname={conninfo(self.alias)}",
            ],
            env=pg_env(self.alias),
            capture_output=True,
            text=True,
        )
        if dumped.returncode != 0:
            raise BackupError(f"pg_dump of the {self.alias} store failed: {dumped.stderr.strip()}")

    def close(self) -> None:
        self.connection.close()


def _pin(database: Database) -> _SqlitePin | _PostgresPin:
    return _SqlitePin(database) if database.backend == "sqlite" else _PostgresPin(database)


def _schema_applied(pin) -> dict[str, str]:
    """Each app's latest applied migration in one database."""
    if not pin.table_exists("django_migrations"):
        return {}
    latest: dict[str, str] = {}
    for app, name in pin.rows("SELECT app, name FROM django_migrations"):
        latest[app] = max(latest.get(app, name), name)
    return latest


def _digest(path: Path) -> str:
    with path.open("rb") as opened:
        return hashlib.file_digest(opened, "sha256").hexdigest()


def _file_entry(folder: Path, name: str) -> dict:
    path = folder / name
    return {"name": name, "size": path.stat().st_size, "sha256": _digest(path)}


def _size(size: int) -> str:
    return f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{size / 2**10:.0f} KiB"


def file_storages() -> dict[str, str]:
    """The storages whose files are data, each with its folder in a backup: the uploaded
    images (``default``, in ``media/``) and any other but the static files."""
    return {
        alias: "media" if alias == "default" else alias
        for alias in settings.STORAGES
        if alias != "staticfiles"
    }


def storage_names(storage: Storage, folder: str = "") -> Iterator[str]:
    """Every file of a storage, as its names (``images/2026/11/….png``)."""
    directories, files = storage.listdir(folder)
    for name in sorted(files):
        yield posixpath.join(folder, name)
    for directory in sorted(directories):
        yield from storage_names(storage, posixpath.join(folder, directory))


def _files_copy(folder: Path, progress: Progress) -> list[dict]:
    entries = []
    for alias, prefix in file_storages().items():
        storage = storages[alias]
        if not storage.exists(""):
            continue
        copied = []
        for name in storage_names(storage):
            target = folder / prefix / name
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                with storage.open(name, "rb") as source, target.open("wb") as copy:
                    shutil.copyfileobj(source, copy, CHUNK)
            except FileNotFoundError:
                # Deleted since it was listed: the chat deletes only an image no event names.
                target.unlink(missing_ok=True)
                continue
            copied.append({"storage": alias, **_file_entry(folder, f"{prefix}/{name}")})
        size = _size(sum(entry["size"] for entry in copied))
        progress(f"{prefix}: {len(copied)} files, {size}")
        entries.extend(copied)
    return entries


def _folder_new(into: Path, now: datetime) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    stem = f"{FOLDER_PREFIX}{now:{FOLDER_TIME}}"
    for n in range(100):
        folder = into / (stem if n == 0 else f"{stem}-{n}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder
    raise BackupError(f"too many backups named {stem} in {into}")


def backup_create(*, into: Path, here: bool = False, progress: Progress = print) -> Path:
    """Back up the installation into a new folder ``silentstar-<UTC time>`` inside ``into``
    (with ``here``, into ``into`` itself, which must be empty or missing). Returns the folder;
    a backup that fails part-way is removed."""
    now = datetime.now(UTC)
    if here:
        if into.exists() and any(into.iterdir()):
            raise BackupError(f"{into} is not empty: a backup goes into an empty folder")
        into.mkdir(parents=True, exist_ok=True)
        folder = into
    else:
        folder = _folder_new(into, now)
    try:
        _backup_write(folder, now=now, progress=progress)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        if here:
            folder.mkdir()
        raise
    return folder


def _backup_write(folder: Path, *, now: datetime, progress: Progress) -> None:
    (folder / "databases").mkdir()
    dumped, schema, rows = [], {}, dict.fromkeys(MAIN_TABLES, 0)
    with ExitStack() as stack:
        # Every database is pinned before any is copied, so their snapshots are moments apart
        # however long the copies take.
        pinned = []
        for database in databases():
            pin = _pin(database)
            stack.callback(pin.close)
            pinned.append((database, pin))
        for database, pin in pinned:
            for app, name in _schema_applied(pin).items():
                schema[app] = max(schema.get(app, name), name)
            for key, model in MAIN_TABLES.items():
                table = model._meta.db_table
                if store_of(model) in database.aliases and pin.table_exists(table):
                    rows[key] = pin.rows(f"SELECT count(*) FROM {table}")[0][0]
            pin.copy_to(folder / database.file_name)
            pin.close()  # lets the app's log be checkpointed while the others are copied
            entry = {
                "name": database.file_name,
                "backend": database.backend,
                "aliases": list(database.aliases),
                **_file_entry(folder, database.file_name),
            }
            dumped.append(entry)
            progress(f"{database.file_name}: {', '.join(database.aliases)}, {_size(entry['size'])}")
    # The files come after the databases. The chat saves an image before the event that names
    # it, and deletes only an image that no event names, so every event in the copies above
    # has its image on disk by now. The other way round, an event logged between the two
    # copies would name an image missing from the backup; this way the backup can at most hold
    # an image whose event came later, which nothing reads. Likewise an item the archive takes
    # from working memory meanwhile is in both copies, rather than in neither.
    stored = _files_copy(folder, progress)
    backends = sorted({entry["backend"] for entry in dumped})
    manifest = {
        "format": FORMAT,
        "created": now.isoformat(),
        "schema": dict(sorted(schema.items())),
        "backend": "+".join(backends),
        "rows": rows,
        "databases": dumped,
        "files": stored,
    }
    written = folder / f"{MANIFEST}.partial"
    written.write_text(json.dumps(manifest, indent=2) + "\n")
    written.replace(folder / MANIFEST)  # a folder with a manifest is a finished backup


def backups_prune(*, into: Path, keep: int) -> list[Path]:
    """Delete the backups in ``into`` beyond the ``keep`` newest; only folders with a readable
    manifest count as backups, and nothing else is touched. Returns the deleted folders."""
    found = []
    for folder in into.glob(f"{FOLDER_PREFIX}*"):
        if not folder.is_dir():
            continue
        try:
            manifest = manifest_read(folder)
        except BackupError:
            continue
        found.append((manifest["created"], folder.name, folder))
    found.sort(reverse=True)
    deleted = [folder for _, _, folder in found[keep:]]
    for folder in deleted:
        shutil.rmtree(folder)
    return deleted


# --- Reading a backup ---------------------------------------------------------------------------


def manifest_read(folder: Path) -> dict:
    """A backup's manifest, refused unless it is one this code can read."""
    path = folder / MANIFEST
    if not path.is_file():
        raise BackupError(
            f"{path} is missing: {folder} is not a backup, or one that did not finish "
            "(give the backup's own folder, silentstar-…)"
        )
    try:
        manifest = json.loads(path.read_text())
        fields = (manifest["format"], manifest["created"], manifest["schema"], manifest["rows"])
        files = manifest["databases"] + manifest["files"]
    except (ValueError, KeyError, TypeError) as error:
        raise BackupError(f"{path} is damaged: {error!r}") from None
    if not isinstance(fields[0], int) or fields[0] > FORMAT:
        raise BackupError(f"{path} has format {fields[0]!r}; this code reads up to {FORMAT}")
    for entry in files:
        name = PurePosixPath(str(entry.get("name", "")))
        if name.is_absolute() or ".." in name.parts or len(name.parts) < 2:
            raise BackupError(f"{path} names a file outside the backup: {entry.get('name')!r}")
    return manifest


def backup_verify(folder: Path) -> dict:
    """The manifest of a backup whose every file is present, of its size and checksum."""
    manifest = manifest_read(folder)
    for entry in manifest["databases"] + manifest["files"]:
        path = folder / entry["name"]
        if not path.is_file():
            raise BackupError(f"the backup is incomplete: {entry['name']} is missing")
        if path.stat().st_size != entry["size"] or _digest(path) != entry["sha256"]:
            raise BackupError(f"the backup is damaged: {entry['name']} fails its checksum")
    return manifest


def installation_rows() -> dict[str, int]:
    """The rows of the main tables here (a store not yet migrated has none)."""
    counts = {}
    for key, model in MAIN_TABLES.items():
        connection = connections[store_of(model)]
        with connection.cursor() as cursor:
            exists = model._meta.db_table in connection.introspection.table_names(cursor)
        counts[key] = model._base_manager.using(store_of(model)).count() if exists else 0
    return counts
