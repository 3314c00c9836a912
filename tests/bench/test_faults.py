"""``python -m bench faults`` at its smallest: one fault of each kind, against a real worker
(``manage.py qcluster``) and the fake Messages API, on SQLite stores of the command's own with
the ORM broker. Its PostgreSQL, Redis and two-worker run (``--backend postgresql --redis
--workers 2``) is shown by the runs in docs/benchmarks.md: the suite's PostgreSQL pass leaves
this test out (``store_free``), as the command makes its own stores."""

import json

import pytest

from bench.faults import IMPORT_KILL, IMPORT_MESSAGES, KINDS, WITHOUT_MESSAGE

pytestmark = [pytest.mark.serial, pytest.mark.store_free]


def test_every_kind_of_fault_happens_and_nothing_is_lost_doubled_stuck_or_refused(bench, tmp_path):
    figures = tmp_path / "faults.json"
    done = bench(
        "faults",
        "--faults",
        str(len(KINDS)),
        "--seed",
        "1",
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
    assert result["messages"] == len(KINDS) - len(WITHOUT_MESSAGE) + 1
    # The worker killed part-way through an import; the next import finished it, each once.
    killed = result["kinds"][IMPORT_KILL]
    assert 0 < killed["written_before"][0] < IMPORT_MESSAGES
    assert killed["written_after"] == [IMPORT_MESSAGES] and killed["twice"] == 0
    assert result["events_lost"] == result["duplicated"] == result["turns_stuck"] == 0
    assert result["messages_refused"] == result["transfers_left_unsafe"] == 0
    assert result["images_left_behind"] == 0
    assert "events lost: 0 (goal 0)" in done.stdout
    assert "messages refused: 0 (goal 0)" in done.stdout
    assert f"after the next import {IMPORT_MESSAGES:,};" in done.stdout


@pytest.mark.store_free
def test_it_refuses_nonsense_counts(bench):
    done = bench("faults", "--faults", "0")
    assert done.returncode == 1 and "at least 1" in done.stderr
