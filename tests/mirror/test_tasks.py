"""The Mirror's scheduled check through django-q2 (``mirror.tasks``)."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from django_q.models import Schedule
from django_q.tasks import async_task, result

from mirror.models import MirrorRun, Summary

pytestmark = pytest.mark.django_db(databases="__all__")


def test_it_is_scheduled_to_check_the_trigger(settings):
    call_command("ensure_schedules", verbosity=0)
    schedule = Schedule.objects.get(func="mirror.tasks.run_mirror_task")
    assert schedule.minutes == settings.MIRROR_CHECK_MINUTES and schedule.repeats == -1


def test_it_runs_through_django_q_when_the_trigger_fires(log, mirror_api):
    log.clock = timezone.now() - timedelta(hours=1)  # the task reads the real clock
    log.turns(19)
    assert result(async_task("mirror.tasks.run_mirror_task")) is None  # not yet (19 turns)
    log.turns(1, start=19)
    run_id = result(async_task("mirror.tasks.run_mirror_task"))
    assert MirrorRun.objects.get(pk=run_id).status == "done"
    assert Summary.objects.get().run_id == run_id
