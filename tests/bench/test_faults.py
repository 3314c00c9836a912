"""``python -m bench faults`` at its smallest: one fault of each kind, against a real worker
(``manage.py qcluster``) and the fake Messages API, on the backend the suite runs on: SQLite
stores of the command's own with the ORM broker, or, under PostgreSQL, databases of its own on
the suite's server with the Redis broker (a redis-server of its own) and two workers."""

import json
import shutil

import pytest
from django.conf import settings

from bench.faults import KINDS, TRANSFERS
from tests.conftest import requirement_missing

pytestmark = pytest.mark.serial


def backend_options() -> list[str]:
    if "postgresql" not in settings.DATABASES["default"]["ENGINE"]:
        return []
    if shutil.which("redis-server") is None:
        requirement_missing("redis-server is missing (Debian: apt-get install redis-server)")
    return ["--backend", "postgresql", "--redis", "--workers", "2"]


def test_every_kind_of_fault_happens_and_nothing_is_lost_doubled_stuck_or_refused(bench, tmp_path):
    figures = tmp_path / "faults.json"
    done = bench(
        "faults",
        "--faults",
        str(len(KINDS)),
        "--seed",
        "1",
        *backend_options(),
        "--json",
        str(figures),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(figures.read_text())
    assert result["faults"] == len(KINDS)
    for kind, counted in result["kinds"].items():
        assert counted == {**counted, "faults": 1, "injected": 1, "recovered": 1}, kind
    # A first message, and one for each fault of a turn (the full disk's is refused and sent
    # again: one of the two is accepted).
    assert result["messages"] == len(KINDS) - len(TRANSFERS) + 1
    assert result["events_lost"] == result["duplicated"] == result["turns_stuck"] == 0
    assert result["messages_refused"] == result["transfers_left_unsafe"] == 0
    assert result["images_left_behind"] == 0
    assert "events lost: 0 (goal 0)" in done.stdout
    assert "messages refused: 0 (goal 0)" in done.stdout


@pytest.mark.store_free
def test_it_refuses_nonsense_counts(bench):
    done = bench("faults", "--faults", "0")
    assert done.returncode == 1 and "at least 1" in done.stderr
