from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.models import Schedule
from django_q.scheduler import scheduler

from gem.models import WorkingMemory
from silentstar.schedules import schedules_ensure

pytestmark = pytest.mark.django_db(databases="__all__")


def test_it_sweeps_decay_when_django_q_runs_the_schedule():
    faded = WorkingMemory.objects.create(
        type="feeling", content="restless", refreshed_at=timezone.now() - timedelta(days=2)
    )
    schedules_ensure()
    Schedule.objects.update(next_run=timezone.now() - timedelta(seconds=1))
    scheduler()
    faded.refresh_from_db()
    assert faded.status == "decayed"
