"""The Compass's django-q2 entry points (``compass.tasks``)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from compass.models import Consultation
from compass.tasks import review_task, run_consultation_task
from gem.services import working_memory_create

pytestmark = pytest.mark.django_db(databases="__all__")


@pytest.fixture(autouse=True)
def offline(settings):
    settings.COMPANION_OFFLINE = True


def test_it_answers_a_queued_consultation_once():
    consultation = Consultation.objects.create(question="what should this week hold")
    assert run_consultation_task(consultation.pk) == consultation.pk
    assert run_consultation_task(consultation.pk) is None
    consultation.refresh_from_db()
    assert (consultation.status, consultation.attempts) == ("done", 1)


def test_the_hourly_task_gives_up_on_a_dead_run_and_reviews():
    working_memory_create(
        type="plan",
        content="call the physio",
        actor="luna",
        at=timezone.now(),
        turn=1,
        due=timezone.now() - timedelta(days=1),
    )
    stuck = Consultation.objects.create(
        question="q", status="running", started_at=timezone.now() - timedelta(hours=1)
    )
    review_id = review_task()

    stuck.refresh_from_db()
    assert stuck.status == "failed" and "The worker stopped" in stuck.error
    review = Consultation.objects.get(pk=review_id)
    assert (review.kind, review.status) == ("review", "done")
    assert review.proposals.get().suggestion.content == "Reschedule: call the physio"
    assert review_task() is None
