"""A restore or import killed part-way: the installation is untouched, complete, or kept from
starting until the next command puts it back; then that command succeeds. Real installations,
each command in its own process, killed with SIGKILL at chosen moments."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

STEP_TIMEOUT = 120


def killed_at(target, args: list[str], moment) -> subprocess.CompletedProcess | None:
    """Run ``manage.py ARGS`` in ``target`` and SIGKILL it at ``moment`` (a line it prints
    starting with that text, or the undo copy's ``run.json`` appearing, for ``"run.json"``).
    Returns the finished run when it ended before the moment came."""
    run = subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env={**target.env, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    run_json = target.data / "transfer-undo" / "run.json"
    deadline = time.monotonic() + STEP_TIMEOUT
    try:
        if moment == "run.json":
            while not run_json.exists():
                assert time.monotonic() < deadline and run.poll() is None, run.stderr.read()
                time.sleep(0.002)
        else:
            for line in run.stdout:
                if line.startswith(moment):
                    break
            else:
                run.wait(timeout=STEP_TIMEOUT)
                return subprocess.CompletedProcess(run.args, run.returncode, "", run.stderr.read())
        os.kill(run.pid, 9)
        return None
    finally:
        run.wait(timeout=STEP_TIMEOUT)
        run.stdout.close()
        run.stderr.close()


def left_half_filled(target) -> bool:
    return (target.data / "transfer-undo" / "run.json").exists()


# Killed when run.json appears (the copy made, nothing changed yet) is the import's first moment;
# the restore's are after its first store, and after its files (all written, not yet counted).
RESTORE_MOMENTS = ("databases/", "files: ")


@pytest.mark.parametrize("moment", RESTORE_MOMENTS)
def test_a_killed_restore_is_undone_or_done_and_the_next_one_succeeds(installation, filled, moment):
    source, folder = filled
    target = installation("target")

    assert killed_at(target, ["restore", str(folder)], moment) is None, "ended before the kill"

    stopped = left_half_filled(target)
    if stopped:
        refused = target.manage("check")
        assert refused.returncode != 0 and "transfer.E001" in refused.stderr
        assert "manage.py restore --undo" in refused.stderr
    else:
        left = target.rows()
        assert left in (target.set_up_rows, source.rows_kept)
    if stopped or left != source.rows_kept:
        again = target.restore(folder)
        assert again.returncode == 0, again.stderr
    assert target.rows() == source.rows_kept and target.images() == source.images()
    assert target.manage("check").returncode == 0


def test_undo_puts_back_the_installation_a_killed_restore_left(installation, filled):
    _, folder = filled
    # The kill follows the line it waits for by as long as this process takes to read it: on a
    # busy machine the restore may finish meanwhile, and another installation is tried.
    for attempt in range(3):
        target = installation(f"target {attempt}")
        before = target.set_up_rows
        assert killed_at(target, ["restore", str(folder)], "databases/") is None
        if left_half_filled(target):
            break
    assert left_half_filled(target) and target.rows() != before

    undone = target.manage("restore", "--undo")

    assert undone.returncode == 0, undone.stderr
    assert "stopped part-way: undone, the installation is as it was before it" in undone.stdout
    assert target.rows() == before and target.images() == {}
    assert target.manage("check").returncode == 0
    nothing = target.manage("restore", "--undo")
    assert "nothing to undo" in nothing.stdout


@pytest.fixture(scope="module")
def export(filled, tmp_path_factory) -> Path:
    source, _ = filled
    folder = tmp_path_factory.mktemp("export") / "export"
    done = source.manage("export", str(folder))
    assert done.returncode == 0, done.stderr
    return folder


IMPORT_MOMENTS = ("run.json", "events.jsonl: ", "images: ")


@pytest.mark.parametrize("moment", IMPORT_MOMENTS)
def test_a_killed_import_is_undone_by_the_next_which_succeeds(installation, filled, export, moment):
    source, _ = filled
    target = installation("target")

    assert killed_at(target, ["import", str(export)], moment) is None, "ended before the kill"

    def events(rows: dict[str, list[str]]) -> dict[str, list[str]]:
        return {name: table for name, table in rows.items() if "heart_event" in name}

    stopped = left_half_filled(target)
    # Killed after it finished its work but before it ended, the import is complete: there is
    # nothing left for a next one to do.
    if stopped or events(target.rows()) != events(source.rows_kept):
        again = target.manage("import", str(export))
        assert again.returncode == 0, again.stderr
        assert ("stopped part-way: undone" in again.stdout) == stopped
    assert events(target.rows()) == events(source.rows_kept)
    assert target.manage("check").returncode == 0
