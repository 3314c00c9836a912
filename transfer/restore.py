"""Restore of a backup made by ``transfer.backup`` into an empty installation.

``backup_restore`` checks a backup from end to end before it touches anything, then puts it
into the installation. docs/backup.md describes the rules.
"""

import sqlite3
import subprocess
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import psycopg
from django.conf import settings
from django.core.files import File
from django.core.files.storage import storages
from django.db import connections
from django.db.migrations.loader import MigrationLoader

from transfer.backup import (
    BackupError,
    Database,
    Progress,
    backup_verify,
    conninfo,
    databases,
    file_storages,
    installation_rows,
    pg_connect,
    pg_env,
    postgres_tool,
)


def _schema_check(manifest: dict) -> list[str]:
    """Refuse a backup of a schema this code does not know; return the apps it is behind on."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    unknown = [
        f"{app} {name}"
        for app, name in manifest["schema"].items()
        if (app, name) not in loader.disk_migrations
    ]
    if unknown:
        raise BackupError(
            "the backup's schema is newer than this code (migrations it does not have: "
            f"{', '.join(unknown)}): restore it with the code it was made with, or newer"
        )
    latest = {app: name for app, name in loader.graph.leaf_nodes()}
    return sorted(app for app, name in manifest["schema"].items() if latest.get(app, name) > name)


def _restore_plan(manifest: dict) -> list[tuple[dict, Database]]:
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
    with closing(source), closing(sqlite3.connect(database.path, timeout=10)) as target:
        source.backup(target)


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
        raise BackupError(
            f"pg_restore into the {alias} store failed, and left it without tables "
            f"(manage.py migrate makes them again): {restored.stderr.strip()}"
        )


def _storages_check(manifest: dict) -> None:
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
        if storage.exists(name):
            storage.delete(name)  # nothing here names it: the installation is empty
        with (folder / entry["name"]).open("rb") as source:
            saved = storage.save(name, File(source))
        if saved != name:
            raise BackupError(f"{entry['name']} was stored as {saved}")


@dataclass(frozen=True)
class Restored:
    manifest: dict
    behind: list[str]  # apps whose migrations are newer in this code than in the backup


def backup_restore(*, folder: Path, progress: Progress = print) -> Restored:
    """Restore a backup into this installation, which must be empty: no events, working
    memory, fragments or summaries (a new one with its owner account and schedules is). Every
    check comes before anything changes. The web and the worker must be stopped."""
    manifest = backup_verify(folder)
    behind = _schema_check(manifest)
    plan = _restore_plan(manifest)
    _storages_check(manifest)
    present = {key: count for key, count in installation_rows().items() if count}
    if present:
        shown = ", ".join(f"{key.replace('_', ' ')}: {count}" for key, count in present.items())
        raise BackupError(
            f"this installation is not empty ({shown}): a backup is restored only into an empty one"
        )
    connections.close_all()
    for entry, database in plan:
        if database.backend == "sqlite":
            _sqlite_restore(folder / entry["name"], database)
        else:
            _postgres_restore(folder / entry["name"], database)
        progress(f"{entry['name']}: {', '.join(database.aliases)} restored")
    _files_restore(folder, manifest["files"])
    progress(f"files: {len(manifest['files'])} restored")
    connections.close_all()
    if (counted := installation_rows()) != manifest["rows"]:
        raise BackupError(f"restored rows {counted} differ from the manifest's {manifest['rows']}")
    return Restored(manifest=manifest, behind=behind)
