from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from events.models import Turn
from heart.models import ContextSnapshot
from heart.services import turn_submit
from heart.tasks import prune_snapshots_task, recover_turns_task, run_turns_task
from tests.conftest import semantic_extra_required

pytestmark = pytest.mark.django_db(databases="__all__")


def test_it_recovers_a_turn_a_dead_worker_left_running_and_answers_it(settings):
    settings.COMPANION_OFFLINE = True
    turn = turn_submit(text="<luna>still there?</luna>", actor="luna", enqueue=False)
    Turn.objects.filter(pk=turn.pk).update(
        status="running", started_at=timezone.now() - timedelta(hours=2), attempts=1
    )
    assert recover_turns_task() == [turn.pk]
    turn.refresh_from_db()
    assert (turn.status, turn.attempts) == ("done", 2)
    assert "still there?" in turn.partial_text


def test_it_leaves_a_turn_that_is_running_now_alone():
    turn = turn_submit(text="<luna>hi</luna>", actor="luna", enqueue=False)
    Turn.objects.filter(pk=turn.pk).update(status="running", started_at=timezone.now())
    assert recover_turns_task() == []
    assert Turn.objects.get(pk=turn.pk).status == "running"


def test_it_recovers_a_turn_whose_worker_went_silent_after_a_short_silence(settings):
    """Two minutes without a heartbeat is enough: not the task timeout (sixteen minutes)."""
    settings.COMPANION_OFFLINE = True
    assert settings.TURN_STALE_SECONDS == 60
    turn = turn_submit(text="<luna>still there?</luna>", actor="luna", enqueue=False)
    now = timezone.now()
    Turn.objects.filter(pk=turn.pk).update(
        status="running",
        started_at=now - timedelta(minutes=3),
        heartbeat_at=now - timedelta(minutes=2),
        attempts=1,
    )
    assert recover_turns_task() == [turn.pk]
    turn.refresh_from_db()
    assert (turn.status, turn.attempts) == ("done", 2)


def test_it_leaves_a_long_turn_with_a_fresh_heartbeat_alone():
    turn = turn_submit(text="<luna>tell me everything</luna>", actor="luna", enqueue=False)
    now = timezone.now()
    Turn.objects.filter(pk=turn.pk).update(
        status="running",
        started_at=now - timedelta(minutes=20),
        heartbeat_at=now - timedelta(seconds=5),
        attempts=1,
    )
    assert recover_turns_task() == []
    assert Turn.objects.get(pk=turn.pk).status == "running"


def test_it_gives_a_worker_to_a_turn_left_queued_without_one(settings):
    """A turn whose task went with a stopped worker does not wait for the task's redelivery."""
    settings.COMPANION_OFFLINE = True
    turn = turn_submit(text="<luna>anyone?</luna>", actor="luna", enqueue=False)
    Turn.objects.filter(pk=turn.pk).update(queued_at=timezone.now() - timedelta(minutes=2))
    assert recover_turns_task() == [turn.pk]
    assert Turn.objects.get(pk=turn.pk).status == "done"


def test_it_prunes_snapshots_past_the_retention(settings):
    settings.SNAPSHOT_RETENTION_DAYS = 7
    ContextSnapshot.objects.create(
        turn=1, ts=timezone.now() - timedelta(days=8), assembled_system="", assembled_user=""
    )
    ContextSnapshot.objects.create(turn=2, assembled_system="", assembled_user="")
    assert prune_snapshots_task() == 1
    assert list(ContextSnapshot.objects.values_list("turn", flat=True)) == [2]


def test_with_the_semantic_search_on_a_turn_is_followed_by_its_vectors(settings):
    semantic_extra_required()
    settings.COMPANION_OFFLINE = True
    settings.SEARCH_SEMANTIC = True
    turn = turn_submit(text="<luna>I took up the cello</luna>", actor="luna", enqueue=False)
    assert run_turns_task(turn.pk) == [turn.pk]
    with connections["events"].cursor() as cursor:
        cursor.execute("SELECT count(*) FROM lens_event_vector")
        (vectors,) = cursor.fetchone()
    assert vectors == 2  # the message and the reply
