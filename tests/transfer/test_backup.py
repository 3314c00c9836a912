"""manage.py backup, end to end: real installations in their own processes."""

import errno
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.heart.test_worker import wait_for
from tests.transfer.installations import (
    CONSISTENCY,
    FILL,
    WRITE,
    Installation,
    checksums_hold,
    manifest_fix,
    overwrite_middle,
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
    (backups / "notes").mkdir(parents=True)
    (backups / "silentstar-notes.txt").write_text("not a backup")
    made = [source.backup(backups, "--keep", "2") for _ in range(3)]

    assert sorted(backups.iterdir()) == sorted(
        [*made[1:], backups / "notes", backups / "silentstar-notes.txt", backups / TIDYING]
    )


def test_on_postgresql_each_database_is_dumped_once_with_the_stores_it_holds(
    installation, tmp_path
):
    if not postgresql():
        pytest.skip("PostgreSQL only: SQLite has one file per store")
    source = installation("source", events_apart=True)
    source.shell(FILL)
    folder = source.backup(tmp_path / "backups")
    manifest = checksums_hold(folder)
    assert [(entry["aliases"], entry["backend"]) for entry in manifest["databases"]] == [
        (["default", "summaries", "snapshots"], "postgresql"),
        (["events"], "postgresql"),
    ]

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
    assert backup_folders(tmp_path / "backups") == []


TIDYING = ".silentstar-backups.lock"


def backup_folders(into: Path) -> list[Path]:
    return sorted(into.glob("silentstar-*"))


def refused(done: subprocess.CompletedProcess, *said: str) -> None:
    """The command failed with a sentence saying each of ``said``, not a traceback."""
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    for words in said:
        assert words in done.stderr, done.stderr


def test_a_backup_of_a_damaged_store_is_refused_and_removed(installation, tmp_path):
    if postgresql():
        pytest.skip("SQLite only: PostgreSQL's pages are the server's, not files to damage")
    source = installation("source", filled=True)
    overwrite_middle(source.data / "events.sqlite3")
    backups = tmp_path / "backups"

    failed = source.manage("backup", str(backups))

    refused(failed, "Backup failed: the events store is damaged: ", "the backup was removed")
    assert backup_folders(backups) == []


def test_a_backup_carries_the_secret_key_kept_in_the_data_folder(filled):
    source, folder = filled
    manifest = checksums_hold(folder)
    key = (folder / "secret_key").read_bytes()
    assert key == (source.data / "secret_key").read_bytes()
    assert manifest["secret_key"] == {
        "name": "secret_key",
        "size": len(key),
        "sha256": hashlib.sha256(key).hexdigest(),
    }
    assert stat.S_IMODE((folder / "secret_key").stat().st_mode) == 0o600


def test_a_backup_carries_the_key_that_signs_notifications_once_there_is_one(
    installation, tmp_path
):
    source = installation("source")
    before = source.backup(tmp_path / "before")
    source.shell("from heart.push import push_public_key; push_public_key()")

    folder = source.backup(tmp_path / "after")

    manifest = checksums_hold(folder)
    key = (folder / "push_key.pem").read_bytes()
    assert key == (source.data / "push_key.pem").read_bytes()
    assert manifest["push_key"] == {
        "name": "push_key.pem",
        "size": len(key),
        "sha256": hashlib.sha256(key).hexdigest(),
    }
    assert stat.S_IMODE((folder / "push_key.pem").stat().st_mode) == 0o600
    assert checksums_hold(before)["push_key"] is None and not (before / "push_key.pem").exists()


@pytest.fixture
def backup_copy(filled, tmp_path) -> Path:
    """A copy of the filled installation's backup, to damage."""
    _, folder = filled
    return Path(shutil.copytree(folder, tmp_path / folder.name))


def test_verify_says_a_sound_backup_is_sound_with_its_time_and_rows(filled, backup_copy):
    source, _ = filled
    manifest = json.loads((backup_copy / "manifest.json").read_text())

    checked = source.manage("backup", "--verify", str(backup_copy))

    assert checked.returncode == 0, checked.stderr
    rows = manifest["rows"]
    assert checked.stdout.strip() == (
        f"{backup_copy} is a sound backup, made {manifest['created']} (events: {rows['events']}, "
        f"working memory: {rows['working_memory']}, fragments: {rows['fragments']}, "
        f"summaries: {rows['summaries']})"
    )


def database_damaged(folder: Path, manifest: dict) -> str:
    """4 KiB overwritten in the middle of a database file, its checksum made to match."""
    name = manifest["databases"][0]["name"]
    overwrite_middle(folder / name)
    manifest_fix(folder, name)
    return f"the backup's {name} is damaged: "


def not_a_database(folder: Path, manifest: dict) -> str:
    name = manifest["databases"][0]["name"]
    (folder / name).write_text("a shopping list\n" * 100)
    manifest_fix(folder, name)
    return f"the backup's {name} is damaged: "


def dump_cut_short(folder: Path, manifest: dict) -> str:
    """A dump without its last bytes: the table of contents at its start still reads."""
    if not postgresql():
        pytest.skip("PostgreSQL only: a dump's data lies after the contents pg_restore lists")
    name = manifest["databases"][0]["name"]
    data = (folder / name).read_bytes()
    (folder / name).write_bytes(data[:-100])
    manifest_fix(folder, name)
    return f"the backup's {name} is damaged: pg_restore: error: could not read from input file"


def database_linked(folder: Path, manifest: dict) -> str:
    """A database file swapped for a link to the same bytes elsewhere: it passes its checksum."""
    name = manifest["databases"][-1]["name"]
    outside = folder.parent / "outside"
    (folder / name).rename(outside)
    (folder / name).symlink_to(outside)
    return f"{name} is, or lies under, a symbolic link"


def media_linked(folder: Path, manifest: dict) -> str:
    outside = folder.parent / "outside-media"
    (folder / "media").rename(outside)
    (folder / "media").symlink_to(outside)
    return f"{manifest['files'][0]['name']} is, or lies under, a symbolic link"


def manifest_linked(folder: Path, manifest: dict) -> str:
    outside = folder.parent / "outside-manifest.json"
    (folder / "manifest.json").rename(outside)
    (folder / "manifest.json").symlink_to(outside)
    return "manifest.json is a symbolic link"


def image_changed(folder: Path, manifest: dict) -> str:
    name = manifest["files"][0]["name"]
    with (folder / name).open("ab") as image:
        image.write(b"!")
    return f"the backup is damaged: {name} fails its checksum"


def manifest_mangled(folder: Path, manifest: dict) -> str:
    manifest["files"][0] = manifest["files"][0]["name"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return "manifest.json is damaged: TypeError("


def unfinished(folder: Path, manifest: dict) -> str:
    (folder / "manifest.json").unlink()
    return "manifest.json is missing"


def key_changed(folder: Path, manifest: dict) -> str:
    (folder / "secret_key").write_text("another key\n")
    return "the backup is damaged: secret_key fails its checksum"


@pytest.mark.parametrize(
    "damage",
    [
        database_damaged,
        not_a_database,
        dump_cut_short,
        database_linked,
        media_linked,
        manifest_linked,
        image_changed,
        manifest_mangled,
        unfinished,
        key_changed,
    ],
)
def test_verify_names_what_is_wrong_with_a_backup(filled, backup_copy, damage):
    source, _ = filled
    said = damage(backup_copy, json.loads((backup_copy / "manifest.json").read_text()))

    checked = source.manage("backup", "--verify", str(backup_copy))

    refused(checked, f"{backup_copy} is not a sound backup: ", said)


GATE = "gate.png"


def gated(installation: Installation) -> None:
    """A named pipe among the images, in place of any image of its name: a backup copying it
    waits there until something is written into it, so it is caught part-way by no race, its
    databases copied and its manifest not yet written."""
    images = installation.data / "media" / "images" / "2026" / "11"
    images.mkdir(parents=True, exist_ok=True)
    (images / GATE).unlink(missing_ok=True)
    os.mkfifo(images / GATE)


@dataclass
class Caught:
    """A backup run in its own process and held at the gate, which is a plain image again for
    any other backup."""

    running: subprocess.Popen
    folder: Path
    writer: int

    def let_go(self) -> tuple[str, str]:
        """The held backup goes on, copying a few bytes for the image: its output."""
        os.write(self.writer, b"an image")
        os.close(self.writer)
        return self.running.communicate(timeout=120)

    def kill(self) -> None:
        self.running.kill()
        self.running.communicate()
        os.close(self.writer)


def backup_caught(installation: Installation, into: Path, *args: str) -> Caught:
    """A backup into ``into`` run in its own process and held at the gate (``gated``)."""
    (gate,) = (installation.data / "media" / "images").rglob(GATE)
    running = subprocess.Popen(
        [sys.executable, "manage.py", "backup", str(into), *args],
        cwd=REPO,
        env=installation.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            # Opens only once the backup has the pipe open to read it.
            writer = os.open(gate, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as error:
            assert error.errno == errno.ENXIO, error
            assert running.poll() is None and time.monotonic() < deadline, running.communicate()
            time.sleep(0.005)
    gate.unlink()
    gate.write_bytes(os.urandom(2**10))
    (folder,) = unfinished_with_a_database(into)
    return Caught(running, folder, writer)


def unfinished_with_a_database(into: Path) -> list[Path]:
    return [
        folder
        for folder in [into, *backup_folders(into)]
        if not (folder / "manifest.json").exists() and any(folder.glob("databases/*"))
    ]


def test_a_backup_killed_part_way_is_removed_by_the_next_one(installation, tmp_path):
    source = installation("source")
    gated(source)
    backups = tmp_path / "backups"
    killed = backup_caught(source, backups)
    killed.kill()

    done = source.manage("backup", str(backups))

    assert done.returncode == 0, done.stderr
    said = f"Removed the unfinished backup {killed.folder} (no manifest; its run stopped)"
    assert said in done.stdout
    (made,) = backup_folders(backups)  # the killed one's name, when made in the same second
    for finished in (made, here_killed_and_made_again(source, tmp_path / "here")):
        checksums_hold(finished)
        assert not (finished / "writing.lock").exists()


def here_killed_and_made_again(source: Installation, here: Path) -> Path:
    """A backup ``--here`` killed part-way, then another into the same folder, which empties it
    of the killed one's files first."""
    gated(source)
    backup_caught(source, here, "--here").kill()
    done = source.manage("backup", str(here), "--here")
    assert done.returncode == 0, done.stderr
    assert f"Removed the unfinished backup in {here} (no manifest; its run stopped)" in done.stdout
    return here


def test_a_running_backup_is_left_alone_and_not_counted_by_keep(installation, tmp_path):
    source = installation("source")
    backups = tmp_path / "backups"
    older = source.backup(backups)
    gated(source)
    caught = backup_caught(source, backups)
    writing = caught.folder
    try:
        newer = source.backup(backups, "--keep", "1")
        assert backup_folders(backups) == sorted([writing, newer])  # the older one deleted
        assert not (writing / "manifest.json").exists()
    finally:
        out, errors = caught.let_go()
    assert caught.running.returncode == 0, errors
    assert f"Backup written to {writing}" in out
    assert not older.exists()
    checksums_hold(writing)
    assert not (writing / "writing.lock").exists()


def on_a_filesystem_of_its_own(
    installation: Installation, folder: Path, options: str, *args: str
) -> subprocess.CompletedProcess:
    """``manage.py ARGS`` with ``folder`` a new tmpfs mounted with ``options``, in a mount
    namespace of its own (the filesystem goes with the process); what the folder holds
    afterwards is the last line of its output."""
    folder.mkdir()
    command = [sys.executable, "manage.py", *args]
    script = (
        'mount -t tmpfs -o "$OPTIONS" silentstar-test "$FOLDER" || exit 97\n'
        '"$@"\n'
        "status=$?\n"
        'echo "left:" $(ls -A "$FOLDER")\n'
        "exit $status\n"
    )
    done = subprocess.run(
        ["unshare", "--mount", "--map-root-user", "sh", "-c", script, "sh", *command],
        cwd=REPO,
        env={**installation.env, "OPTIONS": options, "FOLDER": str(folder)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode == 97 or "unshare failed" in done.stderr:
        pytest.skip(f"a filesystem of its own cannot be mounted here: {done.stderr.strip()}")
    return done


def test_a_backup_onto_a_read_only_folder_says_so(installation, tmp_path):
    source = installation("source")
    read_only = tmp_path / "read-only"

    done = on_a_filesystem_of_its_own(source, read_only, "ro,size=1m", "backup", str(read_only))

    refused(done, f"Backup failed: cannot write into {read_only}: Read-only file system")


@pytest.mark.parametrize("size", ["256k", "2m"])  # too small for the databases; for the files
def test_a_backup_onto_a_full_disk_says_so_and_removes_what_it_wrote(installation, tmp_path, size):
    source = installation("source", filled=True)
    images = source.data / "media" / "images"
    (images / "large.png").write_bytes(os.urandom(4 * 2**20))
    small = tmp_path / "small"

    done = on_a_filesystem_of_its_own(source, small, f"size={size}", "backup", str(small))

    refused(done, "Backup failed: ", "the backup was removed")
    assert "No space left on device" in done.stderr or "disk is full" in done.stderr
    assert done.stdout.splitlines()[-1] == f"left: {TIDYING}"
