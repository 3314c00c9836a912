"""Whole or nothing for the commands that fill an installation: restore and import DIR.

Before such a command changes anything, the installation as it is (an empty one: its owner,
schedules and set-up rows, and any images no event names) is backed up into
``DATA_DIR/transfer-undo/copy``, and then ``run.json`` is written beside it, saying what is about
to change. Its presence is the one sign that a change may have begun:

- the command fails: the copy is put back, exactly (``transfer.replace.backup_put``), and removed;
- the command is killed: the copy stays, and the next restore or import (or ``restore --undo``)
  puts it back before anything else, and says so; until then ``manage.py check``, and so
  ``migrate``, ``runserver`` and the worker, refuse to start on the half-filled installation;
- the command succeeds: ``run.json`` is removed first (the moment the change counts as done), then
  the copy.

A folder without ``run.json`` is a copy being made or being removed: nothing had changed, or
everything had, so it is removed without putting anything back.
"""

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from transfer.backup import (
    BackupError,
    Progress,
    backup_create,
    databases,
    installation_rows,
    manifest_read,
)
from transfer.replace import backup_put
from transfer.stopped import RUN_FILE, stopped_run, undo_folder


def stopped_run_undo(*, progress: Progress) -> dict | None:
    """Put back the installation a stopped restore or import left half-changed, and return what
    that run was doing; None when there was nothing to put back."""
    folder = undo_folder()
    stopped = stopped_run()
    if stopped is not None:
        copy = folder / "copy"
        backup_put(
            folder=copy, manifest=manifest_read(copy), progress=lambda _: None,
            files_beside_kept=False,
        )  # fmt: skip
        (folder / RUN_FILE).unlink()
        progress(
            f"The {stopped['what']} of {stopped['source']} that started at {stopped['started']} "
            "stopped part-way: undone, the installation is as it was before it."
        )
    shutil.rmtree(folder, ignore_errors=True)
    return stopped


@contextmanager
def undone_on_failure(*, what: str, source: Path, progress: Progress) -> Iterator[None]:
    """Run the block as one change of an empty installation: a failure (or a kill) inside it
    puts everything back as it was before it. Refused, before anything is copied, when the
    installation is not empty: no events, working memory, fragments or summaries. Call it
    holding ``transfer.lock.one_at_a_time``, after ``stopped_run_undo``."""
    present = {key: count for key, count in installation_rows().items() if count}
    if present:
        shown = ", ".join(f"{key.replace('_', ' ')}: {n}" for key, n in present.items())
        raise BackupError(
            f"this installation is not empty ({shown}): a {what} goes only into an empty one"
        )
    for database in databases():
        if database.backend == "sqlite":
            # A store never migrated has no file yet; an empty file is an empty SQLite database,
            # which the copy can hold and the undo put back.
            database.path.touch()
    folder = undo_folder()
    copy = folder / "copy"
    folder.mkdir(parents=True)
    try:
        backup_create(into=copy, here=True, progress=lambda _: None)
    except BackupError as error:
        shutil.rmtree(folder, ignore_errors=True)
        raise BackupError(f"copying this installation before the {what} failed: {error}") from None
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    run = {"what": what, "source": str(source), "started": datetime.now(UTC).isoformat()}
    written = folder / f"{RUN_FILE}.partial"
    written.write_text(json.dumps(run) + "\n")
    written.replace(folder / RUN_FILE)
    try:
        yield
    except BaseException as error:
        try:
            stopped_run_undo(progress=lambda _: None)
        except Exception as undo_error:
            raise BackupError(
                f"{error}; putting the installation back failed too ({undo_error}): "
                f"the copy of it is kept in {folder}, and the next restore or import (or "
                "manage.py restore --undo) tries again"
            ) from None
        progress(f"The {what} failed: the installation is as it was before it.")
        raise
    (folder / RUN_FILE).unlink()
    shutil.rmtree(folder, ignore_errors=True)
