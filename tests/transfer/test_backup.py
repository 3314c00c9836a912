"""manage.py backup, end to end: real installations in their own processes."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.heart.test_worker import wait_for
from tests.transfer.installations import (
    CONSISTENCY,
    FILL,
    WRITE,
    checksums_hold,
    postgresql,
)


def test_a_backup_taken_while_turns_are_written_restores_a_consistent_state(installation, tmp_path):
    source = installation("source")
    stop, written = tmp_path / "stop", tmp_path / "written"
    writer = subprocess.Popen(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", WRITE],
        cwd=REPO,
        env={**os.environ, **source.env, "STOP": str(stop), "WRITTEN": str(written)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )

    def turns_written() -> int:
        return int(written.read_text() or 0) if written.exists() else 0

    try:
        wait_for(lambda: turns_written() >= 3, timeout=60, what="the first turns")
        first = source.backup(tmp_path / "backups")
        after_backup = turns_written()
        wait_for(lambda: turns_written() >= after_backup + 2, timeout=60, what="more turns")
    finally:
        stop.touch()
        _, errors = writer.communicate(timeout=60)
    assert writer.returncode == 0, errors
    manifest = checksums_hold(first)
    assert 6 <= manifest["rows"]["events"] < 2 * turns_written()  # taken between the writes

    restored = installation("restored")
    assert restored.restore(first).returncode == 0
    state = json.loads(restored.shell(CONSISTENCY))
    assert state["problems"] == []
    assert state["events"] == manifest["rows"]["events"]
    source_images = source.images()
    assert state["images"] and all(
        restored.images()[name] == source_images[name] for name in state["images"]
    )

    # Backed up again and restored again: the same rows, the same images and checksums.
    second = restored.backup(tmp_path / "backups of the restored")
    again = installation("restored again")
    assert again.restore(second).returncode == 0
    assert again.rows() == restored.rows()
    assert again.images() == restored.images()
    second_manifest = checksums_hold(second)
    assert second_manifest["rows"] == manifest["rows"]
    assert second_manifest["files"] == manifest["files"]


def test_keep_deletes_only_the_older_finished_backups(installation, tmp_path):
    source = installation("source")
    backups = tmp_path / "backups"
    unfinished = backups / "silentstar-2000-01-01T00-00-00Z"
    unfinished.mkdir(parents=True)
    (backups / "notes").mkdir()
    made = [source.backup(backups, "--keep", "2") for _ in range(3)]

    assert sorted(backups.iterdir()) == sorted([*made[1:], unfinished, backups / "notes"])


def test_on_postgresql_each_database_is_dumped_once_with_the_stores_it_holds(
    installation, tmp_path
):
    if not postgresql():
        pytest.skip("PostgreSQL only: SQLite has one file per store")
    source = installation("source", events_apart=True)
    source.shell(FILL)
    manifest = checksums_hold(source.backup(tmp_path / "backups"))
    assert [(entry["aliases"], entry["backend"]) for entry in manifest["databases"]] == [
        (["default", "summaries", "snapshots"], "postgresql"),
        (["events"], "postgresql"),
    ]
    folder = next((tmp_path / "backups").iterdir())

    laid_out_otherwise = installation("one database")
    refused = laid_out_otherwise.restore(folder)
    assert refused.returncode != 0 and "set the database URLs as they were" in refused.stderr

    alike = installation("alike", events_apart=True)
    assert alike.restore(folder).returncode == 0
    assert alike.rows() == source.rows()


def test_on_postgresql_a_missing_pg_dump_is_named(installation, tmp_path):
    if not postgresql():
        pytest.skip("PostgreSQL only")
    source = installation("source")
    nowhere = tmp_path / "empty-path"
    nowhere.mkdir()

    failed = source.manage("backup", str(tmp_path / "backups"), env={"PATH": str(nowhere)})

    assert failed.returncode != 0 and "pg_dump is missing" in failed.stderr
    assert list((tmp_path / "backups").iterdir()) == []
