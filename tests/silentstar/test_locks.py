"""Waiting out a locked database (silentstar/locks.py)."""

import pytest
from django.db import OperationalError

from silentstar import locks
from silentstar.locks import lock_error, when_unlocked

pytestmark = pytest.mark.store_free


class SqlState(Exception):
    def __init__(self, sqlstate):
        self.sqlstate = sqlstate


def postgres_error(sqlstate: str) -> OperationalError:
    error = OperationalError("could not obtain lock")
    error.__cause__ = SqlState(sqlstate)
    return error


@pytest.fixture
def waits(monkeypatch):
    recorded: list[float] = []
    monkeypatch.setattr(locks.time, "sleep", recorded.append)
    return recorded


def test_it_knows_a_lock_from_sqlite_and_postgresql():
    assert lock_error(OperationalError("database is locked"))
    assert lock_error(OperationalError("database table is locked: ledger_modelcall"))
    assert lock_error(postgres_error("55P03")) and lock_error(postgres_error("40P01"))
    assert not lock_error(OperationalError("no such table: ledger_modelcall"))
    assert not lock_error(postgres_error("42P01"))


def test_it_tries_a_write_again_while_the_database_is_locked(waits):
    tries = []

    def write():
        tries.append(1)
        if len(tries) < 4:
            raise OperationalError("database is locked")
        return "written"

    assert when_unlocked(write, patience=10) == "written"
    assert waits == [0.05, 0.1, 0.2]


def test_it_gives_up_once_its_patience_is_spent(waits):
    def write():
        raise OperationalError("database is locked")

    with pytest.raises(OperationalError, match="database is locked"):
        when_unlocked(write, patience=0.01)
    assert waits == []


def test_it_raises_any_other_error_at_once(waits):
    def write():
        raise OperationalError("no such table: ledger_modelcall")

    with pytest.raises(OperationalError, match="no such table"):
        when_unlocked(write, patience=10)
    assert waits == []
