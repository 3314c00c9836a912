"""``manage.py mirror run|rebuild``."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from mirror.models import MirrorRun, Summary

pytestmark = pytest.mark.django_db(databases="__all__")


def run(*args):
    from io import StringIO

    out = StringIO()
    call_command("mirror", *args, stdout=out)
    return out.getvalue()


def test_it_runs_by_hand_only_when_the_trigger_fires_unless_forced(log, mirror_api):
    log.turns(3)
    assert "did not run" in run("run")
    out = run("run", "--force")
    assert "L0 events" in out and "Passes: clean 1× test-clean" in out
    assert MirrorRun.objects.get().kind == "manual"


def test_a_forced_run_with_nothing_pending_does_not_ask_to_be_forced(log, mirror_api):
    said = run("run", "--force")
    assert said.startswith("The Mirror did not run: nothing is pending, or another run")
    assert "--force" not in said
    assert "use --force to run anyway" in run("run")


def test_it_rebuilds_with_a_dry_run_that_changes_nothing(log, mirror_api):
    log.turns(3)
    run("run", "--force")
    out = run("rebuild", "--dry-run")
    assert "=== L0 events" in out and "nothing was changed" in out
    assert Summary.objects.count() == 1 and MirrorRun.objects.count() == 1
    summary = Summary.objects.get()
    out = run("rebuild", "--from", str(summary.first_event_id), "--to", str(summary.last_event_id))
    assert "Replaced 1 summaries" in out
    assert Summary.objects.filter(superseded_by__isnull=False).count() == 1


def test_it_says_what_is_wrong_with_a_backwards_range(log):
    with pytest.raises(CommandError, match=r"--from \(9\) must not be after --to \(3\)"):
        run("rebuild", "--from", "9", "--to", "3")
