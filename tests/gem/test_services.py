from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.core.management import call_command

from gem.models import WorkingMemory
from gem.services import working_memory_sweep

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=ZoneInfo("UTC"))


def item(type_, *, age_hours, turn=1, due=None):
    at = NOW - timedelta(hours=age_hours)
    return WorkingMemory.objects.create(
        type=type_,
        content=f"{type_} {age_hours}",
        refreshed_at=at,
        created_at=at,
        turn=turn,
        due=due,
    )


def test_it_marks_faded_items_decayed_and_keeps_the_rest():
    old_feeling = item("feeling", age_hours=20)
    fresh_feeling = item("feeling", age_hours=1)
    old_secret = item("secret", age_hours=10_000)
    untimed_plan = item("plan", age_hours=10_000)
    future_plan = item("plan", age_hours=500, due=NOW + timedelta(days=30))
    overdue_plan = item("plan", age_hours=900, due=NOW - timedelta(days=30))

    gone = working_memory_sweep(now=NOW, current_turn=1)

    assert sorted(gone) == sorted([old_feeling.pk, overdue_plan.pk])
    statuses = dict(WorkingMemory.objects.values_list("pk", "status"))
    assert statuses[old_feeling.pk] == "decayed"
    assert statuses[overdue_plan.pk] == "decayed"
    for kept in (fresh_feeling, old_secret, untimed_plan, future_plan):
        assert statuses[kept.pk] == "active"
    assert WorkingMemory.objects.get(pk=old_feeling.pk).resolved_at == NOW


def test_it_counts_turns_as_well_as_hours():
    thought = item("thought", age_hours=0, turn=1)
    assert working_memory_sweep(now=NOW, current_turn=30) == []
    assert working_memory_sweep(now=NOW, current_turn=80) == [thought.pk]


def test_it_sweeps_from_the_command_line(capsys):
    item("feeling", age_hours=500)
    call_command("decay_sweep")
    assert "Marked 1 working-memory item(s) decayed." in capsys.readouterr().out
