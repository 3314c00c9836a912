"""A backup folder's databases and files put into this installation's stores, replacing what
they hold: what a restore does, and what puts an installation back from the copy taken before a
restore or import changed it (``transfer.undo``). The checks that decide whether to do it are
the callers'."""

import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import psycopg
from django.conf import settings
from django.core.files import File
from django.core.files.storage import storages
from django.db import connections

from transfer.backup import (
    BackupError,
    Database,
    Progress,
    conninfo,
    databases,
    file_storages,
    pg_connect,
    pg_env,
    postgres_tool,
    storage_names,
)


def restore_plan(manifest: dict) -> list[tuple[dict, Database]]:
    """Which database here takes each database file: the stores must be laid out alike."""
    here = {alias: database for database in databases() for alias in database.aliases}
    plan, covered = [], []
    for entry in manifest["databases"]:
        aliases = entry["aliases"]
        database = here.get(aliases[0]) if aliases else None
        if database is None or set(database.aliases) != set(aliases):
            layout = "; ".join(", ".join(here_one.aliases) for here_one in databases())
            raise BackupError(
                f"{entry['name']} holds the stores {', '.join(aliases)} in one database, and "
                f"here the databases hold {layout}: set the database URLs as they were when "
                "the backup was made"
            )
        if database.backend != entry["backend"]:
            raise BackupError(
                f"{entry['name']} is a {entry['backend']} backup, and here the stores "
                f"{', '.join(aliases)} are on {database.backend}: a backup is restored on the "
                "backend it was made on"
            )
        plan.append((entry, database))
        covered.extend(aliases)
    if sorted(covered) != sorted(settings.STORE_ALIASES):
        raise BackupError(f"the backup does not hold every store once (it holds {covered})")
    return plan


def _sqlite_restore(path: Path, database: Database) -> None:
    # The backup API in reverse, not a file swapped in: it writes through SQLite into the live
    # file, so the file's -wal and -shm stay in step with it (a file swapped in under an old
    # -wal would have that log replayed over it), the file keeps its owner and mode, and a
    # failure part-way leaves it as it was (the copy is one transaction).
    source = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        with closing(source), closing(sqlite3.connect(database.path, timeout=10)) as target:
            source.backup(target)
    except sqlite3.Error as error:
        raise BackupError(
            f"writing the {', '.join(database.aliases)} store ({database.path}) failed: {error}"
        ) from None


SCHEMA_OBJECTS = """
SELECT format('DROP TABLE IF EXISTS %I CASCADE', tablename) FROM pg_tables
 WHERE schemaname = current_schema()
UNION ALL
SELECT format('DROP VIEW IF EXISTS %I CASCADE', viewname) FROM pg_views
 WHERE schemaname = current_schema()
UNION ALL
SELECT format('DROP SEQUENCE IF EXISTS %I CASCADE', sequence_name) FROM information_schema.sequences
 WHERE sequence_schema = current_schema()
UNION ALL
SELECT format('DROP FUNCTION IF EXISTS %s CASCADE', oid::regprocedure) FROM pg_proc
 WHERE pronamespace = current_schema()::regnamespace AND prokind = 'f'
"""


def _postgres_restore(path: Path, database: Database) -> None:
    alias = database.aliases[0]
    with pg_connect(alias) as connection:
        pg_restore = postgres_tool(
            "pg_restore", server_major=connection.info.server_version // 10000
        )
        # The empty installation's tables (its migrations, owner and schedules) make way for
        # the backup's: the dump brings the schema it was made with, whatever this code's is.
        connection.execute("SET lock_timeout = '10s'")
        try:
            for (statement,) in connection.execute(SCHEMA_OBJECTS).fetchall():
                connection.execute(statement)
        except psycopg.errors.LockNotAvailable:
            raise BackupError(
                f"the {alias} store is in use: stop the web and the worker before a restore"
            ) from None
    restored = subprocess.run(
        [
            pg_restore,
            "--no-owner",
            "--no-privileges",
            "--single-transaction",
            "--exit-on-error",
            f"--dbname={conninfo(alias)}",
            str(path),
        ],
        env=pg_env(alias),
        capture_output=True,
        text=True,
    )
    if restored.returncode != 0:
        raise BackupError(f"pg_restore into the {alias} store failed: {restored.stderr.strip()}")


def storages_check(manifest: dict) -> None:
    for entry in manifest["files"]:
        if entry.get("storage") not in file_storages():
            raise BackupError(
                f"{entry['name']} is of a storage unknown here: {entry.get('storage')}"
            )


def _files_restore(folder: Path, entries: list[dict]) -> None:
    prefixes = file_storages()
    for entry in entries:
        storage = storages[entry["storage"]]
        name = entry["name"].removeprefix(f"{prefixes[entry['storage']]}/")
        try:
            if storage.exists(name):
                storage.delete(name)  # nothing here names it: the installation is empty
            with (folder / entry["name"]).open("rb") as source:
                saved = storage.save(name, File(source))
        except OSError as error:
            raise BackupError(f"{entry['name']} could not be written: {error}") from None
        if saved != name:
            raise BackupError(f"{entry['name']} was stored as {saved}")


def backup_put(
    *, folder: Path, manifest: dict, progress: Progress, files_beside_kept: bool = True
) -> None:
    """Put every database and file of the backup in ``folder`` into the stores. Without
    ``files_beside_kept``, the storages' files the backup does not hold are deleted, so they
    hold exactly the backup's."""
    plan = restore_plan(manifest)
    connections.close_all()
    for entry, database in plan:
        if database.backend == "sqlite":
            _sqlite_restore(folder / entry["name"], database)
        else:
            _postgres_restore(folder / entry["name"], database)
        progress(f"{entry['name']}: {', '.join(database.aliases)} restored")
    if not files_beside_kept:
        _files_beside_delete(manifest["files"])
    _files_restore(folder, manifest["files"])
    progress(f"files: {len(manifest['files'])} restored")
    connections.close_all()


def _files_beside_delete(entries: list[dict]) -> None:
    prefixes = file_storages()
    held = {(entry["storage"], entry["name"]) for entry in entries}
    for alias, prefix in prefixes.items():
        storage = storages[alias]
        if not storage.exists(""):
            continue
        for name in list(storage_names(storage)):
            if (alias, f"{prefix}/{name}") not in held:
                storage.delete(name)
