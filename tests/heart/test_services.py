from datetime import timedelta

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.db import OperationalError
from django.utils import timezone

from bench.fakeapi import FakeError, FakeReply
from events.models import Event
from heart import services
from heart.services import owner_ensure, turn_submit, turns_recover
from heart.tasks import run_turns_task
from silentstar import claude

pytestmark = pytest.mark.django_db


def test_it_creates_the_owner_with_the_given_password():
    assert owner_ensure(username="mono", password="a long given password") is None
    owner = get_user_model().objects.get(username="mono")
    assert owner.is_superuser and owner.is_staff
    assert authenticate(username="mono", password="a long given password") == owner


def test_it_generates_a_password_once_when_none_is_given():
    generated = owner_ensure(username="mono", password=None)
    assert generated and len(generated) >= 16
    assert authenticate(username="mono", password=generated) is not None
    assert owner_ensure(username="mono", password=None) is None
    assert authenticate(username="mono", password=generated) is not None
    assert get_user_model().objects.count() == 1


def test_it_applies_a_password_given_later():
    owner_ensure(username="mono", password=None)
    owner_ensure(username="mono", password="the new password")
    assert authenticate(username="mono", password="the new password") is not None


STALE = timedelta(seconds=5)


@pytest.mark.django_db(databases="__all__")
def test_a_turn_waiting_out_a_rate_limit_keeps_its_heartbeat_and_is_not_run_twice(
    fake_api, monkeypatch
):
    """Claude asks for a wait twice as long as the silence after which recovery takes a turn's
    worker for dead. Recovery runs all through the wait (the clock moves only there): the turn
    keeps its one attempt, and the reply is asked for once more, not by a second attempt."""
    monkeypatch.setattr(services, "HEARTBEAT_INTERVAL", 0)
    clock = [timezone.now()]
    monkeypatch.setattr(timezone, "now", lambda: clock[0])
    requeued = []

    def wait_while_recovery_runs(seconds: float) -> None:
        clock[0] += timedelta(seconds=seconds)
        requeued.extend(turns_recover(stale_after=STALE))

    monkeypatch.setattr(claude, "sleep", wait_while_recovery_runs)
    fake_api.push(
        FakeError(429, retry_after=2 * STALE.total_seconds()), FakeReply("<say>here</say>")
    )
    turn = turn_submit(text="<luna>there?</luna>", actor="luna", enqueue=False)

    assert run_turns_task(turn.pk) == [turn.pk]

    turn.refresh_from_db()
    assert requeued == []
    assert (turn.status, turn.attempts, turn.partial_text) == ("done", 1, "here")
    assert len(fake_api.requests) == 2
    assert Event.objects.count() == 2


@pytest.mark.django_db(databases="__all__")
def test_a_save_of_the_streamed_text_that_meets_a_locked_database_is_skipped(fake_api, monkeypatch):
    """The display and the heartbeat of a streaming reply wait for the next save; the reply
    itself is not failed for it."""
    monkeypatch.setattr(services, "PARTIAL_SAVE_INTERVAL", 0)
    real_update = services._turn_update
    refused = []

    def locked_once(turn_id, **changes):
        if "partial_text" in changes and "status" not in changes and not refused:
            refused.append(changes["partial_text"])
            raise OperationalError("database is locked")
        return real_update(turn_id, **changes)

    monkeypatch.setattr(services, "_turn_update", locked_once)
    fake_api.push(FakeReply("<say>one two three four</say>", chunks=4))
    turn = turn_submit(text="<luna>there?</luna>", actor="luna", enqueue=False)

    run_turns_task(turn.pk)

    turn.refresh_from_db()
    assert refused
    assert (turn.status, turn.error, turn.partial_text) == ("done", "", "one two three four")
    assert turn.first_token_at is not None
