from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from heart.models import ContextSnapshot, Turn
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
