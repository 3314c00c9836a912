"""The real thing: a django-q2 cluster in its own process answering a turn from the queue."""

import os
import signal
import sqlite3
import subprocess
import time

import pytest

from bench.fakeapi import FakeReply
from bench.faults import group_kill, start_cluster

# Every test here runs the worker on SQLite stores of its own, whatever the suite runs on.
pytestmark = pytest.mark.store_free

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


def turn_answered(data_dir, turn_id: int, *, timeout: float, what: str) -> tuple[str, str, str]:
    """``(status, partial_text, error)`` of a turn once a worker has finished it."""

    def turn_state():
        with sqlite3.connect(data_dir / "events.sqlite3") as events:
            return events.execute(
                "SELECT status, partial_text, error FROM heart_turn WHERE id = ?", [turn_id]
            ).fetchone()

    return wait_for(
        lambda: (state := turn_state()) and state[0] in {"done", "error"} and state,
        timeout=timeout,
        what=what,
    )


def test_it_answers_a_queued_turn_in_a_real_worker(manage, tmp_path, sqlite_stores_copy):
    sqlite_stores_copy(tmp_path / "data")
    env = {**os.environ, **SQLITE_ONLY, "SILENTSTAR_DATA_DIR": str(tmp_path / "data")}
    cluster = start_cluster(env)
    try:
        submit = (
            "from heart.services import turn_submit; "
            "print(turn_submit(text='<luna>are you there?</luna>', actor='luna').pk)"
        )
        submitted = manage("shell", "--no-imports", "-c", submit, env=SQLITE_ONLY)
        assert submitted.returncode == 0, submitted.stderr
        turn_id = int(submitted.stdout.strip())

        status, shown, error = turn_answered(
            tmp_path / "data", turn_id, timeout=60, what="the worker to answer the turn"
        )
        assert (status, error) == ("done", "")
        assert shown.startswith("I got your message")  # the offline companion's answer
        assert "are you there?" in shown
    finally:
        cluster.send_signal(signal.SIGTERM)  # the cluster stops its own worker processes
        try:
            cluster.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(cluster.pid, signal.SIGKILL)
            pytest.fail("the cluster did not stop on SIGTERM")


def children(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return [int(child) for child in found.stdout.split()]


def cluster_stop_as_scripts_run_does(cluster: subprocess.Popen) -> None:
    """SIGTERM to the cluster, which stops its idle workers; a second later, SIGTERM to what is
    left under its guard process (a busy worker, the monitor)."""
    cluster.send_signal(signal.SIGTERM)
    try:
        cluster.wait(timeout=1)
    except subprocess.TimeoutExpired:
        for sentinel in children(cluster.pid):
            for child in children(sentinel):
                os.kill(child, signal.SIGTERM)
        cluster.wait(timeout=20)


def test_a_worker_stopped_mid_reply_puts_the_turn_back_for_the_next_one(
    manage, tmp_path, fake_api, sqlite_stores_copy
):
    """Ctrl-C on scripts/run while a reply streams: the worker gets SIGTERM, the turn goes back
    to the queue at once (not after a silence), and a worker of the next cluster answers it,
    with one reply in the log and one snapshot."""
    sqlite_stores_copy(tmp_path / "data")
    long_reply = "<say>" + " ".join(f"word{n}" for n in range(60)) + "</say>"
    fake_api.push(FakeReply(long_reply, chunks=60, delay=0.25), FakeReply("<say>all of it</say>"))
    data = tmp_path / "data"
    env = {**os.environ, **SQLITE_ONLY, "ANTHROPIC_API_KEY": "test-key"}
    env["SILENTSTAR_DATA_DIR"] = str(data)

    def turn_state():
        with sqlite3.connect(data / "events.sqlite3") as events:
            return events.execute(
                "SELECT status, partial_text, reply_event_id, attempts FROM heart_turn"
            ).fetchone()

    def count(store: str, table: str) -> int:
        with sqlite3.connect(data / f"{store}.sqlite3") as connection:
            return connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]

    first = start_cluster(env)
    try:
        submit = (
            "from heart.services import turn_submit; "
            "turn_submit(text='<luna>hi</luna>', actor='luna')"
        )
        submitted = manage("shell", "--no-imports", "-c", submit, env=SQLITE_ONLY)
        assert submitted.returncode == 0, submitted.stderr
        wait_for(
            lambda: (state := turn_state()) and state[0] == "running" and "word3" in state[1],
            timeout=60,
            what="the reply to stream",
        )
        cluster_stop_as_scripts_run_does(first)
        status, _, reply_event, attempts = wait_for(
            lambda: (state := turn_state()) and state[0] != "running" and state,
            timeout=20,
            what="the turn to leave running",
        )
    finally:
        group_kill(first)
    assert (status, reply_event, attempts) == ("queued", None, 1)
    assert count("events", "heart_event") == 1

    second = start_cluster(env)
    try:
        status, shown, reply_event, attempts = wait_for(
            lambda: (state := turn_state()) and state[0] in {"done", "error"} and state,
            timeout=60,
            what="the next cluster to answer the turn",
        )
    finally:
        second.send_signal(signal.SIGTERM)
        try:
            second.wait(timeout=20)
        finally:
            group_kill(second)
    assert (status, shown, attempts) == ("done", "all of it", 2)
    assert count("events", "heart_event") == 2
    assert count("snapshots", "heart_contextsnapshot") == 1
    assert len(fake_api.requests) == 2
