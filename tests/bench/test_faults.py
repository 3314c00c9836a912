"""``python -m bench faults`` at its smallest: one fault of each kind, against a real worker
(``manage.py qcluster``) and the fake Messages API, on throwaway SQLite stores.

The command makes its own SQLite stores whatever the environment names, so the run under
PostgreSQL would only repeat it: it is left out there (``store_free``).
"""

import json

import pytest

from bench.faults import KINDS

pytestmark = [pytest.mark.store_free, pytest.mark.serial]


def test_every_kind_of_fault_happens_and_nothing_is_lost_doubled_or_stuck(bench, tmp_path):
    figures = tmp_path / "faults.json"
    done = bench("faults", "--faults", str(len(KINDS)), "--seed", "1", "--json", str(figures))
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(figures.read_text())
    assert result["faults"] == len(KINDS)
    for kind, counted in result["kinds"].items():
        assert counted == {**counted, "faults": 1, "injected": 1, "recovered": 1}, kind
    assert (
        result["messages"] == len(KINDS) + 1
    )  # a first message; not the one the full disk refused
    assert result["events_lost"] == result["duplicated"] == result["turns_stuck"] == 0
    assert result["images_left_behind"] == 0
    assert "events lost: 0 (goal 0)" in done.stdout


def test_it_refuses_nonsense_counts(bench):
    done = bench("faults", "--faults", "0")
    assert done.returncode == 1 and "at least 1" in done.stderr
