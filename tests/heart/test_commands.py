import pytest
from django.core.management import CommandError, call_command
from django.db import connections
from django_q.models import Schedule

from events.models import Event, Turn
from gem.models import WorkingMemory
from tests.conftest import semantic_extra_required

pytestmark = pytest.mark.django_db(databases="__all__")


def test_it_runs_a_turn_from_the_terminal_with_the_offline_companion(capsys, settings):
    settings.COMPANION_OFFLINE = True
    call_command("turn", "hello there", "--as", "luna")
    out = capsys.readouterr().out
    assert "I got your message, luna: “hello there”" in out
    assert list(Event.objects.values_list("actor", flat=True)) == ["luna", "claude"]
    assert Event.objects.first().content == "<luna>hello there</luna>"
    assert Turn.objects.get().status == "done"


def test_without_as_it_speaks_as_the_identity_of_the_last_message(settings):
    settings.COMPANION_OFFLINE = True
    call_command("turn", "hello there", "--as", "renki")
    call_command("turn", "and again")
    assert list(Event.objects.order_by("id").values_list("actor", flat=True)) == [
        "renki",
        "claude",
        "renki",
        "claude",
    ]


def test_with_the_semantic_search_on_a_terminal_turn_is_followed_by_its_vectors(settings):
    semantic_extra_required()
    settings.COMPANION_OFFLINE = True
    settings.SEARCH_SEMANTIC = True
    call_command("turn", "I took up the cello", "--as", "luna")
    with connections["events"].cursor() as cursor:
        cursor.execute("SELECT count(*) FROM lens_event_vector")
        (vectors,) = cursor.fetchone()
    assert vectors == 2  # the message and the reply, as after a turn the worker answers


def test_it_tags_the_message_as_a_plan_at_a_given_moment(capsys, settings):
    settings.COMPANION_OFFLINE = True
    call_command(
        "turn",
        "call the pharmacy friday at 5pm",
        "--as",
        "luna",
        "--tag",
        "plan",
        "--at",
        "2026-03-02T09:00",
    )
    plan = WorkingMemory.objects.get(type="plan")
    assert plan.due.isoformat() == "2026-03-06T17:00:00+00:00"
    assert Event.objects.first().ts.isoformat() == "2026-03-02T09:00:00+00:00"


def test_it_refuses_a_moment_before_the_last_turn(settings):
    settings.COMPANION_OFFLINE = True
    call_command("turn", "later", "--at", "2026-03-02T09:00")
    with pytest.raises(CommandError, match="would come before the last event"):
        call_command("turn", "earlier", "--at", "2026-03-01T09:00")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["hi", "--as", "claude"], "No identity 'claude' on the person's side"),
        (["hi", "--at", "tuesday"], "--at must be an ISO 8601 time"),
    ],
)
def test_it_explains_bad_input(args, message):
    with pytest.raises(CommandError, match=message):
        call_command("turn", *args)
    assert Event.objects.count() == 0


def test_it_declares_the_schedules_once(capsys):
    call_command("ensure_schedules")
    call_command("ensure_schedules")
    assert set(Schedule.objects.values_list("func", flat=True)) == {
        "heart.tasks.recover_turns_task",
        "heart.tasks.keep_cache_warm_task",
        "heart.tasks.prune_snapshots_task",
        "heart.tasks.decide_nudges_task",
        "gem.tasks.sweep_decay_task",
        "gem.tasks.archive_working_memory_task",
        "mirror.tasks.run_mirror_task",
        "compass.tasks.review_task",
        "transfer.tasks.recover_imports_task",
    }
    assert Schedule.objects.count() == 9
    assert "Scheduled: gem: decay sweep" in capsys.readouterr().out
