"""One restore or import at a time: real installations in their own processes."""

import json
import subprocess
import sys

import psycopg
import pytest

from tests.conftest import REPO
from tests.transfer.installations import postgresql
from transfer.lock import ADVISORY_KEY

# Holds an installation's transfer lock as another restore would, until killed.
HOLD_LOCK = """
import sys, time
from filelock import FileLock
with FileLock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(600)
"""


# Each command run as manage.py runs it, in one process (a process each would spend a second
# starting Django five times): what each said on its way out, with the status it exits with.
EACH_REFUSED = """
import json, os
from django.core.management import ManagementUtility
said = []
for command in json.loads(os.environ['COMMANDS']):
    try:
        ManagementUtility(['manage.py', *command]).execute()
        status = 0
    except SystemExit as leaving:
        status = leaving.code
    said.append(status)
print(json.dumps(said))
"""


def test_every_restore_and_import_is_refused_while_another_runs(installation, filled, tmp_path):
    _, folder = filled
    target = installation("target")
    before = target.set_up_rows
    mira = tmp_path / "mira.jsonl"
    mira.write_text("")
    commands = [
        ["restore", str(folder)],
        ["restore", "--undo"],
        ["import", str(folder)],
        ["import_silentstar", str(tmp_path / "memory.sqlite")],
        ["mira", "import", str(mira)],
    ]
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(target.data / "transfer.lock")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "held\n"
        done = target.manage(
            "shell", "--no-imports", "-c", EACH_REFUSED, env={"COMMANDS": json.dumps(commands)}
        )
    finally:
        holder.kill()
        holder.wait()

    assert done.returncode == 0, done.stderr
    statuses = json.loads(done.stdout.splitlines()[-1])
    refusals = done.stderr.count("another restore or import is running in this installation")
    assert statuses == [1] * len(commands) and refusals == len(commands), done.stderr
    assert target.rows() == before


def test_of_two_restores_at_once_one_restores_and_the_other_is_refused(
    installation, filled, tmp_path
):
    source, folder = filled
    target = installation("target")
    runs = [
        subprocess.Popen(
            [sys.executable, "manage.py", "restore", str(folder)],
            cwd=REPO,
            env=target.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outcomes = sorted((run.wait(timeout=120), run.communicate()[1]) for run in runs)

    assert [status for status, _ in outcomes] == [0, 1]
    assert "another restore or import is running" in outcomes[1][1] or "not empty" in outcomes[1][1]
    assert target.rows() == source.rows_kept


def test_on_postgresql_the_store_s_advisory_lock_also_holds_it(installation, filled):
    if not postgresql():
        pytest.skip("PostgreSQL only: SQLite's stores are files in the data folder")
    _, folder = filled
    target = installation("target")
    with psycopg.connect(target.database_urls["DATABASE_URL"], autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", [ADVISORY_KEY])
        refused = target.restore(folder)
        imported = target.manage("import", str(folder))

    assert refused.returncode != 0 and imported.returncode != 0
    assert "the default store's advisory lock is held" in refused.stderr
    assert "the default store's advisory lock is held" in imported.stderr
