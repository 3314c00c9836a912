"""The real thing: a django-q2 cluster in its own process answering a turn from the queue."""

import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO

SQLITE_ONLY = {
    "DATABASE_URL": "",
    "EVENTS_DATABASE_URL": "",
    "SUMMARIES_DATABASE_URL": "",
    "SNAPSHOTS_DATABASE_URL": "",
    "ANTHROPIC_API_KEY": "",
    "SILENTSTAR_Q_SYNC": "false",
}


def wait_for(condition, *, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_it_answers_a_queued_turn_in_a_real_worker(manage, tmp_path):
    for alias in ("default", "events", "summaries", "snapshots"):
        assert manage("migrate", "--database", alias, env=SQLITE_ONLY).returncode == 0
    env = {**os.environ, **SQLITE_ONLY, "SILENTSTAR_DATA_DIR": str(tmp_path / "data")}
    cluster = subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        submit = (
            "from heart.services import turn_submit; "
            "print(turn_submit(text='<luna>are you there?</luna>', actor='luna').pk)"
        )
        submitted = manage("shell", "--no-imports", "-c", submit, env=SQLITE_ONLY)
        assert submitted.returncode == 0, submitted.stderr
        turn_id = int(submitted.stdout.strip())

        def turn_state():
            with sqlite3.connect(tmp_path / "data" / "events.sqlite3") as events:
                return events.execute(
                    "SELECT status, partial_text, error FROM heart_turn WHERE id = ?", [turn_id]
                ).fetchone()

        status, shown, error = wait_for(
            lambda: (state := turn_state()) and state[0] in {"done", "error"} and state,
            timeout=60,
            what="the worker to answer the turn",
        )
        assert (status, error) == ("done", "")
        assert "are you there?" in shown and "offline" in shown
    finally:
        cluster.send_signal(signal.SIGTERM)  # the cluster stops its own worker processes
        try:
            cluster.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(cluster.pid, signal.SIGKILL)
            pytest.fail("the cluster did not stop on SIGTERM")
