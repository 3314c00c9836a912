import json
import logging
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone
from django_q.models import Schedule
from django_q.scheduler import scheduler

from events.models import Event
from gem import archive as archive_module
from gem.archive import archive_restore, archive_run, working_memory_measured
from gem.archive_store import (
    ARCHIVED,
    MOVING,
    ArchiveError,
    archive_read,
    archive_storage,
    index_read,
)
from gem.models import Fragment, WorkingMemory, WorkingMemorySource
from gem.prune import Phase
from gem.rows import working_memory_row
from gem.services import time_zone_set, working_memory_create, working_memory_status_set
from silentstar.schedules import schedules_ensure

pytestmark = pytest.mark.django_db(databases="__all__")

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def item(content, *, type="thought", idle_days=None, status="resolved", importance=None):
    """An item written ``idle_days + 1`` days ago that left active memory ``idle_days`` ago
    (``idle_days`` None: still active)."""
    days = 0 if idle_days is None else idle_days
    written = working_memory_create(
        type=type,
        content=content,
        actor="luna",
        at=NOW - timedelta(days=days + 1),
        turn=1,
        importance=importance,
    ).item
    if idle_days is not None:
        working_memory_status_set(
            item_ids=[written.pk], status=status, reason="done", now=NOW - timedelta(days=idle_days)
        )
    written.refresh_from_db()
    return written


def rows_of(items):
    return {each.pk: working_memory_row(WorkingMemory.objects.get(pk=each.pk)) for each in items}


def read_json(folder, name):
    return json.loads((folder / name).read_text())


def test_it_moves_exactly_the_old_items_no_longer_active_and_writes_the_layout(archive_folder):
    Fragment.objects.create(key="garden")
    old = item("weeded the garden beds", idle_days=100)
    old_secret = item("the spare key under the stone", type="secret", idle_days=95)
    WorkingMemorySource.objects.create(wm=old, event_id=5)
    recent = item("repotted the fern", idle_days=10)
    active = item("the tomatoes need stakes", idle_days=None)
    moving = rows_of([old, old_secret])
    events = Event.objects.create(content="a message", actor="luna") and Event.objects.count()

    report = archive_run(now=NOW)

    assert report.archived == sorted(moving)
    assert set(WorkingMemory.objects.values_list("pk", flat=True)) == {recent.pk, active.pk}
    assert Event.objects.count() == events
    day = (NOW - timedelta(days=100)).date()
    lines = (archive_folder / f"by-date/{day:%Y/%m}/{day}.jsonl").read_text().splitlines()
    assert [json.loads(text) for text in lines] == [moving[old.pk]]
    assert moving[old.pk]["fragments"] == ["garden"] and moving[old.pk]["sources"] == [5]
    index = read_json(archive_folder, "index/master-index.json")
    assert set(index) == {str(pk) for pk in moving}
    assert index[str(old.pk)]["file"] == f"by-date/{day:%Y/%m}/{day}.jsonl"
    assert index[str(old.pk)]["line"] == 0 and index[str(old.pk)]["state"] == ARCHIVED
    assert read_json(archive_folder, "by-type/thought.json") == [old.pk]
    assert read_json(archive_folder, "by-type/secret.json") == [old_secret.pk]
    assert read_json(archive_folder, "by-tag/resolved.json") == sorted(moving)
    assert read_json(archive_folder, "by-tag/garden.json") == [old.pk]
    hashes = read_json(archive_folder, "index/semantic-hashes.json")
    assert hashes[old.semantic_hash] == [old.pk]
    assert archive_read() == moving


def test_a_restore_brings_back_identical_rows_and_a_second_restore_adds_nothing():
    Fragment.objects.create(key="fern")
    twin = item("water the fern every sunday", type="plan", idle_days=None)
    near = item("water the fern on sunday mornings", type="plan", idle_days=None)
    for each, status in ((twin, "resolved"), (near, "dropped")):
        working_memory_status_set(
            item_ids=[each.pk], status=status, reason="done", now=NOW - timedelta(days=110)
        )
    before = rows_of([twin, near])
    assert before[near.pk]["near_duplicate_of"] == twin.pk
    archive_run(now=NOW)
    assert not WorkingMemory.objects.exists()

    report = archive_restore(ids=[near.pk, twin.pk])

    assert report.restored == sorted(before)
    assert rows_of([twin, near]) == before
    assert archive_read() == {}
    again = archive_restore(ids=[near.pk, twin.pk])
    assert again.restored == [] and again.already == sorted(before)
    assert WorkingMemory.objects.count() == 2


def test_a_restore_by_day_and_type_takes_only_those():
    first = item("tidied the shed", idle_days=100)
    second = item("a quiet evening", type="feeling", idle_days=100)
    third = item("sorted the seeds", idle_days=200)
    archive_run(now=NOW)
    day = (NOW - timedelta(days=100)).date()

    report = archive_restore(since=day, until=day + timedelta(days=1), type="thought")

    assert report.restored == [first.pk]
    assert set(archive_read()) == {second.pk, third.pk}


def test_a_restore_of_an_id_nowhere_is_refused_before_anything_changes():
    kept = item("tidied the shed", idle_days=100)
    archive_run(now=NOW)
    with pytest.raises(ArchiveError, match="Not in the archive nor in working memory: 999"):
        archive_restore(ids=[kept.pk, 999])
    assert set(archive_read()) == {kept.pk} and not WorkingMemory.objects.exists()


def test_an_items_day_is_the_day_in_the_owners_chosen_time_zone(archive_folder):
    time_zone_set(name="Pacific/Kiritimati")  # UTC+14: noon in London is 02:00 the next day
    old = item("weeded the garden beds", idle_days=100)

    archive_run(now=NOW)

    day = (NOW - timedelta(days=100) + timedelta(hours=14)).date()
    assert day != (NOW - timedelta(days=100)).date()
    index = read_json(archive_folder, "index/master-index.json")
    assert index[str(old.pk)]["file"] == f"by-date/{day:%Y/%m}/{day}.jsonl"


def test_a_run_stopped_before_the_rows_leave_is_finished_by_the_next(monkeypatch, archive_folder):
    old = [item(f"old chore number {n}", idle_days=100 + n) for n in range(3)]
    rows = rows_of(old)

    def stopped(_rows):
        raise RuntimeError("the process was killed")

    monkeypatch.setattr(archive_module, "_rows_remove", stopped)
    with pytest.raises(RuntimeError):
        archive_run(now=NOW)
    assert rows_of(old) == rows
    assert {entry["state"] for entry in index_read(archive_storage()).values()} == {MOVING}
    assert archive_read() == {}
    monkeypatch.undo()

    report = archive_run(now=NOW)

    assert report.finished == sorted(rows) and report.archived == []
    assert not WorkingMemory.objects.exists()
    assert archive_read() == rows
    written = [
        json.loads(text)["id"]
        for path in (archive_folder / "by-date").rglob("*.jsonl")
        for text in path.read_text().splitlines()
    ]
    assert sorted(written) == sorted(rows)


def test_an_item_changed_after_a_stopped_run_stays_in_working_memory(monkeypatch):
    old = item("cleaned the gutters", idle_days=100)
    monkeypatch.setattr(archive_module, "_rows_remove", lambda _rows: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        archive_run(now=NOW)
    monkeypatch.undo()
    working_memory_status_set(item_ids=[old.pk], status="active", reason="back", now=NOW)

    archive_run(now=NOW)

    assert WorkingMemory.objects.filter(pk=old.pk, status="active").exists()
    assert index_read(archive_storage()) == {}


def test_a_dry_run_moves_nothing():
    old = item("weeded the garden beds", idle_days=100)
    report = archive_run(now=NOW, dry_run=True)
    assert report.archived == [old.pk]
    assert WorkingMemory.objects.filter(pk=old.pk).exists() and archive_read() == {}


def capacity_at(settings, fill):
    """Set the capacity so that working memory fills ``fill`` of it."""
    candidates, _ = working_memory_measured()
    settings.ARCHIVE_CAPACITY_BYTES = int(sum(each.size for each in candidates) / fill)


def test_soft_pruning_takes_unimportant_items_idle_a_month(settings):
    unimportant = item("swept the porch", idle_days=40, importance=0.2)
    important = item("the porch light flickers", idle_days=40, importance=0.6)
    secret = item("the porch code", type="secret", idle_days=40, importance=0.2)
    fresh = item("swept the stairs", idle_days=5, importance=0.2)
    for fill, phase, moved in ((0.5, Phase.NONE, []), (0.85, Phase.SOFT, [unimportant.pk])):
        capacity_at(settings, fill)
        report = archive_run(now=NOW)
        assert (report.phase, report.archived) == (phase, moved)
    left = set(WorkingMemory.objects.values_list("pk", flat=True))
    assert left == {important.pk, secret.pk, fresh.pk}


def test_hard_pruning_takes_superseded_then_least_important_until_under_the_target(settings):
    active = item("a long active thought " + "word " * 200, idle_days=None)
    resolved = [item(f"resolved note {n}", idle_days=1, importance=n / 10) for n in range(1, 6)]
    superseded = item("an old idea", idle_days=1, status="superseded", importance=0.9)
    candidates, _ = working_memory_measured()
    size = {each.id: each.size for each in candidates}
    capacity_at(settings, 0.96)
    target = settings.ARCHIVE_HARD_TARGET * settings.ARCHIVE_CAPACITY_BYTES
    expected, remaining = [], sum(size.values())
    for each in [superseded, *resolved]:
        if remaining < target:
            break
        expected.append(each.pk)
        remaining -= size[each.pk]

    report = archive_run(now=NOW)

    assert report.phase is Phase.HARD and report.archived == sorted(expected)
    assert report.size_after == remaining < target
    assert WorkingMemory.objects.filter(pk=active.pk).exists()


def test_an_emergency_archives_every_item_idle_a_month_and_says_so(settings, caplog):
    item("a long active thought " + "word " * 400, idle_days=None)
    idle = [item(f"idle note {n}", idle_days=31 + n, importance=0.9) for n in range(3)]
    secret = item("the alarm code", type="secret", idle_days=40)
    capacity_at(settings, 1.0)
    settings.ARCHIVE_HARD_TARGET = 0.0  # hard pruning alone would take everything it may
    events = Event.objects.count()

    with caplog.at_level(logging.ERROR, logger="gem.archive"):
        report = archive_run(now=NOW)

    assert report.phase is Phase.EMERGENCY
    assert report.archived == sorted(each.pk for each in idle)
    assert WorkingMemory.objects.filter(pk=secret.pk).exists()
    assert "Working memory is full" in caplog.text and "Working memory is full" in report.warning
    assert Event.objects.count() == events


def test_the_command_runs_lists_and_restores(capsys):
    old = item("weeded the garden beds", idle_days=100)
    call_command("archive", "run", "--dry-run")
    assert f"Would archive 1 item: {old.pk}." in capsys.readouterr().out
    call_command("archive", "run")
    assert f"Archived 1 item: {old.pk}." in capsys.readouterr().out
    call_command("archive", "list", "--like", "garden beds weeded")
    listed = capsys.readouterr().out
    assert listed.startswith(f"{old.pk}\t") and "1 archived item." in listed
    call_command("archive", "restore", str(old.pk))
    assert f"Restored 1 item: {old.pk}." in capsys.readouterr().out
    with pytest.raises(CommandError, match="Say what to restore"):
        call_command("archive", "restore")
    with pytest.raises(CommandError, match="Not in the archive"):
        call_command("archive", "restore", "999")


def test_a_second_run_at_once_is_refused():
    with archive_module._claimed(), pytest.raises(ArchiveError, match="Another archive run"):
        archive_run(now=NOW)


def test_the_daily_schedule_archives_old_items():
    old = item("weeded the garden beds", idle_days=100)
    schedules_ensure()
    Schedule.objects.update(next_run=timezone.now() - timedelta(seconds=1))
    scheduler()
    assert not WorkingMemory.objects.filter(pk=old.pk).exists()
    assert set(archive_read()) == {old.pk}


def test_a_restore_that_fails_leaves_its_items_archived(monkeypatch):
    old = item("weeded the garden beds", idle_days=100)
    rows = rows_of([old])
    archive_run(now=NOW)

    def failing(row):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(archive_module, "working_memory_from_row", failing)
    with pytest.raises(RuntimeError):
        archive_restore(ids=[old.pk])
    monkeypatch.undo()

    assert not WorkingMemory.objects.exists() and archive_read() == rows
    assert archive_restore(ids=[old.pk]).restored == [old.pk]
    assert rows_of([old]) == rows


def test_the_anvil_says_what_the_last_run_said_of_the_size_until_it_is_fine(settings, admin_client):
    item("a long active thought " + "word " * 400, idle_days=None)
    page = reverse("admin:gem_workingmemory_changelist")
    capacity_at(settings, 1.0)

    archive_run(now=NOW)

    shown = [str(message) for message in admin_client.get(page).context["messages"]]
    assert len(shown) == 1 and shown[0].startswith("Working memory is full")
    settings.ARCHIVE_CAPACITY_BYTES *= 10
    archive_run(now=NOW)
    assert not list(admin_client.get(page).context["messages"])
