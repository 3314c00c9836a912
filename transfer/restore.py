"""Restore of a backup made by ``transfer.backup`` into an empty installation, whole or not at
all.

``backup_restore`` checks a backup from end to end before it touches anything (checksums,
SQLite's own check of every file, schema, layout, row counts), then, holding the installation's
lock, puts it into the stores; a failure or a kill part-way is undone (``transfer.undo``).
docs/backup.md describes the rules.
"""

import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db.migrations.loader import MigrationLoader

from silentstar.router import store_of
from silentstar.secret_key import secret_key_write
from transfer.backup import (
    KEPT_KEYS,
    MAIN_TABLES,
    BackupError,
    Progress,
    backup_verify,
    installation_rows,
)
from transfer.lock import one_at_a_time
from transfer.replace import backup_put, restore_plan, storages_check
from transfer.undo import stopped_run_undo, undone_on_failure


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


def _rows_in_files(folder: Path, plan) -> dict[str, int] | None:
    """The main tables' rows in the backup's SQLite files, read before anything changes; None
    when a store is in a PostgreSQL dump, whose rows are counted once restored."""
    counted = dict.fromkeys(MAIN_TABLES, 0)
    for entry, database in plan:
        if database.backend != "sqlite":
            return None
        uri = f"{(folder / entry['name']).resolve().as_uri()}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True)) as connection:
            tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master")}
            for key, model in MAIN_TABLES.items():
                table = model._meta.db_table
                if store_of(model) in database.aliases and table in tables:
                    counted[key] = connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    return counted


def _rows_check(counted: dict[str, int], manifest: dict, *, where: str) -> None:
    if counted != manifest["rows"]:
        differ = ", ".join(
            f"{key.replace('_', ' ')}: {counted.get(key)} (the manifest says {n})"
            for key, n in manifest["rows"].items()
            if counted.get(key) != n
        )
        raise BackupError(f"the rows {where} differ from the manifest's: {differ}")


def _keys_put(folder: Path, manifest: dict, progress: Progress) -> None:
    """The backup's keys in place of this installation's: the secret key, so the sessions and
    the worker's queued tasks it signed carry on, and the key that signs notifications, which
    the devices' subscriptions restored name. Done last, being the one change the undo does not
    put back. A key the backup lacks (the secret key given by SILENTSTAR_SECRET_KEY, no
    notification ever sent) leaves this installation's."""
    for field, (name, what) in KEPT_KEYS.items():
        if not manifest.get(field):
            continue
        key = (folder / name).read_text().strip()
        secret_key_write(settings.DATA_DIR / name, key, replace=True)
        progress(f"{name}: {what}, restored into the data folder")


@dataclass(frozen=True)
class Restored:
    manifest: dict
    behind: list[str]  # apps whose migrations are newer in this code than in the backup
    undone: dict | None  # a stopped restore or import this one undid first


def backup_restore(*, folder: Path, progress: Progress = print) -> Restored:
    """Restore a backup into this installation, which must be empty: no events, working
    memory, fragments or summaries (a new one with its owner account and schedules is). Every
    check comes before anything changes, and a failure part-way leaves the installation as it
    was. The web and the worker must be stopped."""
    manifest = backup_verify(folder)
    behind = _schema_check(manifest)
    plan = restore_plan(manifest)
    storages_check(manifest)
    if (counted := _rows_in_files(folder, plan)) is not None:
        _rows_check(counted, manifest, where="in the backup's files")
    with one_at_a_time(what="restore"):
        undone = stopped_run_undo(progress=progress)
        with undone_on_failure(what="restore", source=folder, progress=progress):
            backup_put(folder=folder, manifest=manifest, progress=progress)
            _rows_check(installation_rows(), manifest, where="restored")
            _keys_put(folder, manifest, progress)
    return Restored(manifest=manifest, behind=behind, undone=undone)


def stopped_undo(*, progress: Progress = print) -> dict | None:
    """Only undo a restore or import that stopped part-way: what it was doing, or None."""
    with one_at_a_time(what="restore --undo"):
        return stopped_run_undo(progress=progress)
