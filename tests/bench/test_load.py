"""``python -m bench load``: gunicorn, the worker and a short swarm on throwaway SQLite stores."""

import re
from importlib.util import find_spec

import pytest

from tests.conftest import requirement_missing

pytestmark = [pytest.mark.store_free, pytest.mark.serial]


def servers_required() -> None:
    """Skip without gunicorn and locust (requirements-dev.txt); under CI their absence fails."""
    missing = [name for name in ("gunicorn", "locust") if find_spec(name) is None]
    if not missing:
        return
    requirement_missing(f"{', '.join(missing)} missing: pip install -r requirements-dev.txt")


def test_it_serves_a_short_swarm_without_errors_and_answers_its_turns(bench):
    servers_required()
    done = bench("load", "--seconds", "4", "--users", "2")
    assert done.returncode == 0, done.stderr
    summary = done.stdout.splitlines()[0]
    assert summary.startswith("2 users for 4 s on sqlite3"), done.stdout
    assert re.search(r"[\d.]+ requests/s, 0 errors$", summary), done.stdout
    kinds = {line[:16].strip() for line in done.stdout.splitlines()[2:]}
    assert {"sign in", "send", "turn poll", "chat page", "all"} <= kinds, done.stdout
    sent, answered, failed = map(
        int, re.search(r"turns: (\d+) sent, (\d+) answered, (\d+) failed", done.stdout).groups()
    )
    assert sent >= 2 and answered >= 1 and failed == 0, done.stdout
    assert "machine load" in done.stdout


def test_it_refuses_nonsense_counts(bench):
    done = bench("load", "--users", "0")
    assert done.returncode == 1 and "at least 1" in done.stderr
