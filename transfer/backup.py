"""Backup and restore of a whole installation: the four stores, the uploaded images and the
keys kept in the data folder.

``backup_create`` copies every distinct database (SQLite's backup API per store file,
``pg_dump`` per PostgreSQL database) and every file under MEDIA_ROOT into one folder, with a
manifest of sizes and SHA-256 checksums, while the web and the worker keep running.
Each copy is checked by its own program (``database_file_check``: SQLite's integrity check,
pg_restore's reading of a dump), so a damaged store is refused rather than called a backup, and a
backup being written holds a lock on a file in its folder, so the next backup tells it from one
whose run stopped. ``backup_verify`` checks a backup from end to end; ``transfer.restore`` puts
one into an empty installation. docs/backup.md describes the folder, the manifest and the rules.
"""

import hashlib
import json
import os
import posixpath
import re
import shutil
import signal
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from contextlib import ExitStack, closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.files.storage import Storage, storages
from django.db import connections
from filelock import FileLock, Timeout

from events.models import Event
from gem.models import Fragment, WorkingMemory
from heart.push import PUSH_KEY_FILE
from mirror.models import Summary
from silentstar.router import store_of
from silentstar.secret_key import KEY_FILE

if TYPE_CHECKING:
    import psycopg

# The keys the installation generated and keeps in its data folder, by their field in the
# manifest, each with what it is: copied last, readable by their owner alone, and put back by a
# restore.
KEPT_KEYS = {
    "secret_key": (KEY_FILE, "the secret key of the data folder"),
    "push_key": (PUSH_KEY_FILE, "the key that signs the notifications to devices"),
}

FORMAT = 1
MANIFEST = "manifest.json"
FOLDER_PREFIX = "silentstar-"
FOLDER_TIME = "%Y-%m-%dT%H-%M-%SZ"
BACKENDS = ("sqlite", "postgresql")
# Held, in a backup's folder, by the run writing it: a folder without a manifest whose lock is
# free is a backup whose run stopped. Removed once the manifest is written.
WRITING = "writing.lock"
# Held, in the folder the backups are made in, while a run makes its folder and takes that
# folder's lock, and while a run removes the unfinished backups: so a folder is never seen
# between its making and its lock.
TIDYING = ".silentstar-backups.lock"
TIDYING_WAIT = 60  # seconds
# The problems of a damaged SQLite file named in a message; integrity_check reports up to 100.
PROBLEMS_SHOWN = 3
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

    @property
    def stores(self) -> str:
        """The stores it holds, for a message: "the events store"."""
        if len(self.aliases) == 1:
            return f"the {self.aliases[0]} store"
        return f"the {', '.join(self.aliases[:-1])} and {self.aliases[-1]} stores"


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
    from psycopg.conninfo import make_conninfo  # see pg_connect

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


def pg_connect(alias: str) -> "psycopg.Connection":
    import psycopg  # a tenth of a second to import: only PostgreSQL installations need it

    return psycopg.connect(conninfo(alias), password=settings.DATABASES[alias]["PASSWORD"] or None)


def _tool_major(path: str) -> int | None:
    shown = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    found = re.search(r"\(PostgreSQL\) (\d+)", shown)
    return int(found.group(1)) if found else None


def postgres_tool(name: str, *, server_major: int) -> str:
    """The path of ``pg_dump`` or ``pg_restore`` at least as new as the server: on the PATH, or
    beside ``pg_config --bindir``. A ``server_major`` of 0 takes the first found."""
    candidates = []
    if on_path := shutil.which(name):
        candidates.append(on_path)
    if pg_config := shutil.which("pg_config"):
        bindir = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        beside = Path(bindir.stdout.strip()) / name
        if bindir.returncode == 0 and beside.is_file():
            candidates.append(str(beside))
    if not candidates:
        version = f", version {server_major} or newer" if server_major else ""
        raise BackupError(
            f"{name} is missing: install PostgreSQL's client programs{version} "
            "(Debian: apt-get install postgresql-client), on the PATH or beside "
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


# --- Checking a database file ----------------------------------------------------------------


def database_file_check(path: Path, *, backend: str, what: str) -> None:
    """Refuse a database file its own program finds unsound: SQLite's integrity check of a
    store's file, pg_restore's reading of a PostgreSQL dump. ``what`` names the file in the
    message ("the events store", "the backup's databases/events.sqlite3")."""
    problems = _sqlite_problems(path) if backend == "sqlite" else _dump_problems(path, what=what)
    if problems:
        raise BackupError(f"{what} is damaged: {problems}")


def _sqlite_problems(path: Path) -> str:
    """What ``PRAGMA integrity_check`` reports of a file opened read-only, or "" when sound."""
    try:
        uri = f"{path.resolve().as_uri()}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True)) as connection:
            found = [row[0] for row in connection.execute("PRAGMA integrity_check")]
    except sqlite3.DatabaseError as error:  # "file is not a database", "… malformed"
        return str(error)
    if found == ["ok"]:
        return ""
    more = len(found) - PROBLEMS_SHOWN
    shown = "; ".join(found[:PROBLEMS_SHOWN])
    return f"{shown} (and {more} more)" if more > 0 else shown


def _dump_problems(path: Path, *, what: str) -> str:
    """What pg_restore reports of a custom-format dump, or "" when it reads it whole: its list
    of contents must read, and every data block (``--list`` alone reads only the table of
    contents at the start, and would pass a dump damaged further on). A dump may list no table:
    a database never migrated has none."""
    pg_restore = _dump_reader()
    listed = subprocess.run([pg_restore, "--list", str(path)], capture_output=True, text=True)
    if listed.returncode == 0:
        read = subprocess.run(
            [pg_restore, f"--file={os.devnull}", str(path)], capture_output=True, text=True
        )
        if read.returncode == 0:
            return ""
        listed = read
    shown = listed.stderr.strip() or _unsaid_failure(listed)
    if "unsupported version" in shown:
        raise BackupError(
            f"{what} was written by a newer pg_dump than {pg_restore} can read ({shown}): "
            "install PostgreSQL's client programs of its version or newer"
        )
    return shown


def _unsaid_failure(done: subprocess.CompletedProcess) -> str:
    """A program's failure that printed nothing: pg_restore crashes on some damaged dumps."""
    run = f"{Path(done.args[0]).name} {done.args[1]}"
    if done.returncode < 0:
        return f"{run} crashed on it ({signal.Signals(-done.returncode).name})"
    return f"{run} failed on it (exit status {done.returncode})"


def _dump_reader() -> str:
    """The pg_restore to read a dump with: as new as this installation's PostgreSQL server when
    there is one to ask, since that server's pg_dump made its dumps. Without one (a SQLite
    installation checking a PostgreSQL backup, a server that does not answer) any pg_restore
    found does: reading a dump needs no server, and one too old for a dump says so, which
    ``_dump_problems`` passes on."""
    import psycopg  # see pg_connect

    for database in databases():
        if database.backend == "postgresql":
            try:
                with pg_connect(database.aliases[0]) as connection:
                    major = connection.info.server_version // 10000
            except psycopg.OperationalError:
                break
            return postgres_tool("pg_restore", server_major=major)
    return postgres_tool("pg_restore", server_major=0)


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
        try:
            self.connection.execute("SELECT count(*) FROM sqlite_master").fetchone()  # takes it
        except sqlite3.DatabaseError as error:
            self.connection.close()
            raise BackupError(f"{database.stores} is damaged: {error}") from None

    def table_exists(self, table: str) -> bool:
        found = self.connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [table]
        )
        return found.fetchone() is not None

    def rows(self, sql: str) -> list[tuple]:
        return self.connection.execute(sql).fetchall()

    def copy_to(self, path: Path) -> None:
        try:
            with closing(sqlite3.connect(path)) as copy:
                self.connection.backup(copy)
                # One self-contained file: no write-ahead log beside it to lose or to mismatch.
                copy.execute("PRAGMA journal_mode=DELETE")
        except sqlite3.DatabaseError as error:  # "database or disk is full"
            raise BackupError(f"cannot write {path}: {error}") from None

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


def _key_copy(folder: Path, field: str, progress: Progress) -> dict | None:
    """A copy of a key the installation generated and keeps in its data folder (``KEPT_KEYS``:
    ``silentstar/secret_key.py``, ``heart/push.py``), readable by its owner alone; None when it
    keeps none (the secret key given by ``SILENTSTAR_SECRET_KEY``, no notification sent yet)."""
    name, what = KEPT_KEYS[field]
    try:
        key = (settings.DATA_DIR / name).read_bytes()
    except FileNotFoundError:
        return None
    with os.fdopen(
        os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb"
    ) as copy:
        copy.write(key)
    progress(f"{name}: {what}")
    return _file_entry(folder, name)


def _folder_new(into: Path, now: datetime) -> Path:
    stem = f"{FOLDER_PREFIX}{now:{FOLDER_TIME}}"
    for n in range(100):
        folder = into / (stem if n == 0 else f"{stem}-{n}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder
    raise BackupError(f"too many backups named {stem} in {into}")


def _unfinished_remove(into: Path, progress: Progress) -> None:
    """Remove the backups in ``into`` whose run stopped before their manifest: those whose
    folder's lock is free. A backup being written holds its lock, and is left alone."""
    for folder in sorted(into.glob(f"{FOLDER_PREFIX}*")):
        if not folder.is_dir() or (folder / MANIFEST).exists():
            continue
        writing = FileLock(folder / WRITING, timeout=0)
        try:
            writing.acquire()
        except Timeout:
            continue  # its run is writing it
        try:
            # Its run may have written the manifest and let go since the look above; then the
            # lock file is one this acquire made again, in a finished backup.
            finished = (folder / MANIFEST).exists()
            if finished:
                (folder / WRITING).unlink(missing_ok=True)
            else:
                shutil.rmtree(folder)
        finally:
            writing.release()
        if not finished:
            progress(f"Removed the unfinished backup {folder} (no manifest; its run stopped)")


def _unfinished_here_empty(into: Path, progress: Progress) -> None:
    """Empty ``into`` of the backup a stopped ``--here`` run left in it: only what a backup
    writes there, and only when no run holds its lock; anything else stays, and is refused."""
    writing = FileLock(into / WRITING, timeout=0)
    try:
        writing.acquire()
    except Timeout:
        raise BackupError(f"another backup is being written into {into}") from None
    try:
        keys = [name for name, _ in KEPT_KEYS.values()]
        for name in ("databases", *file_storages().values(), *keys, f"{MANIFEST}.partial"):
            path = into / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
    finally:
        writing.release()
    (into / WRITING).unlink(missing_ok=True)
    progress(f"Removed the unfinished backup in {into} (no manifest; its run stopped)")


def _folder_claim(
    into: Path, *, here: bool, now: datetime, stack: ExitStack, progress: Progress
) -> Path:
    """The backup's folder, made and held (its WRITING lock taken until ``stack`` closes):
    ``into`` itself with ``here``, else a new ``silentstar-<UTC time>`` in it, after the
    unfinished backups there are removed."""
    into.mkdir(parents=True, exist_ok=True)
    if here:
        if (into / WRITING).exists() and not (into / MANIFEST).exists():
            _unfinished_here_empty(into, progress)
        if any(into.iterdir()):
            raise BackupError(f"{into} is not empty: a backup goes into an empty folder")
        stack.enter_context(FileLock(into / WRITING, timeout=0))
        return into
    try:
        with FileLock(into / TIDYING, timeout=TIDYING_WAIT):
            _unfinished_remove(into, progress)
            folder = _folder_new(into, now)
            stack.enter_context(FileLock(folder / WRITING, timeout=0))
    except Timeout:
        raise BackupError(
            f"another backup into {into} has held {into / TIDYING} for {TIDYING_WAIT} s: "
            "it may be removing large unfinished backups; run this one again when it is done"
        ) from None
    return folder


def backup_create(*, into: Path, here: bool = False, progress: Progress = print) -> Path:
    """Back up the installation into a new folder ``silentstar-<UTC time>`` inside ``into``
    (with ``here``, into ``into`` itself, which must be empty or missing), after removing the
    backups there whose run stopped part-way. Returns the folder; a backup that fails part-way,
    or whose copy of a store is damaged, is removed."""
    now = datetime.now(UTC)
    with ExitStack() as stack:
        try:
            folder = _folder_claim(into, here=here, now=now, stack=stack, progress=progress)
        except OSError as error:
            raise BackupError(f"cannot write into {into}: {error.strerror}") from None
        try:
            _backup_write(folder, now=now, progress=progress)
            (folder / WRITING).unlink()
        except BaseException as error:
            shutil.rmtree(folder, ignore_errors=True)
            if here:
                folder.mkdir()
            if isinstance(error, BackupError):
                raise BackupError(f"{error}; the backup was removed") from None
            if isinstance(error, OSError):
                raise BackupError(f"{_failed_on(error, folder)}; the backup was removed") from None
            raise
    return folder


def _failed_on(error: OSError, folder: Path) -> str:
    """An operating system's refusal as a sentence naming the folder written or the file read."""
    if error.filename is None or Path(error.filename).is_relative_to(folder):
        return f"cannot write into {folder}: {error.strerror}"
    return f"cannot read {error.filename}: {error.strerror}"


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
            try:
                for app, name in _schema_applied(pin).items():
                    schema[app] = max(schema.get(app, name), name)
                for key, model in MAIN_TABLES.items():
                    table = model._meta.db_table
                    if store_of(model) in database.aliases and pin.table_exists(table):
                        rows[key] = pin.rows(f"SELECT count(*) FROM {table}")[0][0]
            except sqlite3.DatabaseError as error:
                raise BackupError(f"{database.stores} is damaged: {error}") from None
            pin.copy_to(folder / database.file_name)
            pin.close()  # lets the app's log be checkpointed while the others are copied
            # The copy holds the store's pages as they are: a damaged store is refused here
            # rather than carried into a backup that looks sound.
            database_file_check(
                folder / database.file_name, backend=database.backend, what=database.stores
            )
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
    keys = {field: _key_copy(folder, field, progress) for field in KEPT_KEYS}
    backends = sorted({entry["backend"] for entry in dumped})
    manifest = {
        "format": FORMAT,
        "created": now.isoformat(),
        "schema": dict(sorted(schema.items())),
        "backend": "+".join(backends),
        "rows": rows,
        "databases": dumped,
        "files": stored,
        **keys,
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
        if not isinstance(fields[3], dict) or not all(
            isinstance(entry, dict) and {"name", "size", "sha256"} <= entry.keys()
            for entry in files
        ):
            raise TypeError("its rows, or an entry of its databases or files, is not as written")
    except (ValueError, KeyError, TypeError) as error:
        raise BackupError(f"{path} is damaged: {error!r}") from None
    if not isinstance(fields[0], int) or fields[0] > FORMAT:
        raise BackupError(f"{path} has format {fields[0]!r}; this code reads up to {FORMAT}")
    for field, (name, _) in KEPT_KEYS.items():
        key = manifest.get(field)  # absent from backups made before it was carried
        if key is not None and (
            not isinstance(key, dict)
            or {"name", "size", "sha256"} - key.keys()
            or key["name"] != name
        ):
            raise BackupError(f"{path} is damaged: its {field} is not as written")
    for entry in files:
        name = PurePosixPath(str(entry.get("name", "")))
        if name.is_absolute() or ".." in name.parts or len(name.parts) < 2:
            raise BackupError(f"{path} names a file outside the backup: {entry.get('name')!r}")
    for entry in manifest["databases"]:
        if entry.get("backend") not in BACKENDS:
            raise BackupError(
                f"{path} gives {entry['name']} the backend {entry.get('backend')!r}, "
                f"not one of {', '.join(BACKENDS)}"
            )
    return manifest


def linked(folder: Path, name: str) -> bool:
    """Whether a part of ``folder / name`` below the folder is a symbolic link, which could
    bring a file from anywhere on the machine into the installation."""
    path = folder
    for part in PurePosixPath(name).parts:
        path = path / part
        if path.is_symlink():
            return True
    return False


def backup_verify(folder: Path) -> dict:
    """The manifest of a sound backup: every file it names present, its own (no symbolic link
    on the way to it), of its size and checksum, and every database file found sound by
    ``database_file_check``."""
    if linked(folder, MANIFEST):
        raise BackupError(f"{folder / MANIFEST} is a symbolic link: a backup holds its own files")
    manifest = manifest_read(folder)
    keys = [manifest[field] for field in KEPT_KEYS if manifest.get(field)]
    for entry in manifest["databases"] + manifest["files"] + keys:
        path = folder / entry["name"]
        if linked(folder, entry["name"]):
            raise BackupError(
                f"{entry['name']} is, or lies under, a symbolic link: a backup holds its own files"
            )
        if not path.is_file():
            raise BackupError(f"the backup is incomplete: {entry['name']} is missing")
        if path.stat().st_size != entry["size"] or _digest(path) != entry["sha256"]:
            raise BackupError(f"the backup is damaged: {entry['name']} fails its checksum")
    # After the checksums, which are quicker: a file damaged since the backup fails them first.
    for entry in manifest["databases"]:
        database_file_check(
            folder / entry["name"], backend=entry["backend"], what=f"the backup's {entry['name']}"
        )
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
