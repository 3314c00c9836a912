"""The real thing on the Redis broker: a django-q2 cluster with ``REDIS_URL`` set, against a
redis-server of its own, answering a turn from the queue. Skipped without redis-server (Debian:
apt-get install redis-server); under CI its absence fails."""

import os
import shutil
import signal
import socket
import sqlite3
import subprocess

import pytest

from bench.load import spare_port
from tests.conftest import requirement_missing
from tests.heart.test_worker import SQLITE_ONLY, start_cluster, turn_answered, wait_for

pytestmark = pytest.mark.store_free  # SQLite stores of its own, whatever the suite runs on


def redis_server_required() -> str:
    path = shutil.which("redis-server")
    if path:
        return path
    requirement_missing("redis-server is missing (Debian: apt-get install redis-server)")


@pytest.fixture
def redis_url(tmp_path):
    """A redis-server of this test's own on a spare port, stopped afterwards."""
    port = spare_port()
    in_memory_only = ["--save", "", "--appendonly", "no", "--dir", str(tmp_path)]
    server = subprocess.Popen(
        [redis_server_required(), "--port", str(port), "--bind", "127.0.0.1", *in_memory_only],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def answers() -> bool:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5) as client:
                    client.sendall(b"PING\r\n")
                    return client.recv(16).startswith(b"+PONG")
            except OSError:
                return False

        wait_for(answers, timeout=10, what="redis-server to answer")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.mark.serial
def test_it_answers_a_queued_turn_through_redis(manage, tmp_path, redis_url, sqlite_stores_copy):
    env = {**SQLITE_ONLY, "REDIS_URL": redis_url}
    sqlite_stores_copy(tmp_path / "data")
    cluster = start_cluster({**os.environ, **env, "SILENTSTAR_DATA_DIR": str(tmp_path / "data")})
    try:
        submit = (
            "from heart.services import turn_submit; "
            "from django_q.brokers import get_broker; "
            "print(type(get_broker()).__name__); "
            "print(turn_submit(text='<luna>still with me?</luna>', actor='luna').pk)"
        )
        submitted = manage("shell", "--no-imports", "-c", submit, env=env)
        assert submitted.returncode == 0, submitted.stderr
        broker, turn_id = submitted.stdout.split()
        assert broker == "Redis"

        status, shown, error = turn_answered(
            tmp_path / "data",
            int(turn_id),
            timeout=20,
            what="the worker to answer the turn through Redis",
        )
        assert (status, error) == ("done", "")
        assert shown.startswith("I got your message")  # the offline companion's answer
        assert "still with me?" in shown
        # Nothing went through the database queue.
        with sqlite3.connect(tmp_path / "data" / "silentstar.sqlite3") as default:
            assert default.execute("SELECT count(*) FROM django_q_ormq").fetchone() == (0,)
    finally:
        cluster.send_signal(signal.SIGTERM)  # the cluster stops its own worker processes
        try:
            cluster.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(cluster.pid, signal.SIGKILL)
            pytest.fail("the cluster did not stop on SIGTERM")
