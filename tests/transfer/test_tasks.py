"""The Anvil's imports, run by a worker: a queued run is claimed once, written with its
speakers as chosen, and a file that no longer reads fails it with the reason; a second import
waits for the first; a run whose worker died is marked stopped and finished by the next."""

import json
from datetime import timedelta

import pytest
from django.core.files.storage import default_storage
from django.utils import timezone

from events.models import Event
from transfer import bridges
from transfer.bridges import (
    RunStopped,
    bridge_import,
    bridge_plan,
    bundle_read,
    file_keep,
    import_enqueue,
    kept_plan,
    run_finished_by,
)
from transfer.bundle import BridgeError
from transfer.models import ImportedMessage, ImportRun
from transfer.tasks import import_task, recover_imports_task

pytestmark = pytest.mark.django_db(databases="__all__")

SERAPHINA = {"Seraphina": "claude"}

CHAT = "\n".join(
    json.dumps(line)
    for line in [
        {"user_name": "Luna", "character_name": "Seraphina", "create_date": 1715867107000},
        {"name": "Luna", "is_user": True, "send_date": "2024-05-16T13:45:07Z", "mes": "Hello."},
        {"name": "Seraphina", "is_user": False, "send_date": "2024-05-16T13:46:00Z", "mes": "Hi."},
    ]
).encode()


def chat(count: int, *, chat_id: str = "1715867107000") -> bytes:
    """A SillyTavern chat of ``count`` messages, Luna's and Seraphina's in turn."""
    lines = [{"user_name": "Luna", "character_name": "Seraphina", "create_date": chat_id}]
    lines += [
        {
            "name": "Luna" if n % 2 == 0 else "Seraphina",
            "is_user": n % 2 == 0,
            "send_date": f"2024-05-16T13:{n // 60:02d}:{n % 60:02d}Z",
            "mes": f"line {n} of chat {chat_id}",
        }
        for n in range(count)
    ]
    return "\n".join(json.dumps(line) for line in lines).encode()


def queued(speakers: dict, *, data: bytes = CHAT, file_name: str = "chat.jsonl") -> ImportRun:
    return ImportRun.objects.create(
        format="sillytavern",
        file_name=file_name,
        file_sha256=file_keep(data),
        status="queued",
        speakers=speakers,
    )


class WorkerKilled(Exception):
    """Stands for the end of a worker's process part-way through an import."""


def test_a_queued_import_is_run_once_with_its_speakers():
    run = queued({"Seraphina": "claude"})

    assert import_task(run.pk) == run.pk
    assert import_task(run.pk) is None  # claimed already: a second worker does nothing

    run.refresh_from_db()
    assert (run.status, run.counts["events"], run.counts["messages"]) == ("done", 2, 2)
    assert list(Event.objects.values_list("actor", flat=True)) == ["luna", "claude"]


def test_a_kept_file_gone_fails_the_run_with_the_reason_and_writes_nothing():
    run = queued({"Seraphina": "claude"})
    default_storage.delete(f"imports/{run.file_sha256}")

    import_task(run.pk)

    run.refresh_from_db()
    assert run.status == "failed" and "no longer kept here" in run.error
    assert not Event.objects.exists()


def test_an_import_is_queued_only_once_every_speaker_has_an_identity():
    sha256 = file_keep(CHAT)
    plan = bridge_plan(
        bundle_read(format="sillytavern", data=CHAT), file_name="chat.jsonl", format="sillytavern"
    )

    with pytest.raises(BridgeError, match="Who is “Seraphina”"):
        import_enqueue(plan=plan, file_sha256=sha256, user=None)

    assert not ImportRun.objects.exists()


def test_a_run_whose_worker_died_is_marked_stopped_and_the_next_import_finishes_it():
    data = chat(10)
    sha256 = file_keep(data)
    plan = kept_plan(
        sha256=sha256, format="sillytavern", file_name="chat.jsonl", speakers=SERAPHINA
    )

    def killed(done: int, total: int) -> None:
        raise WorkerKilled  # after the first batch of 4, its beat saved

    with pytest.raises(WorkerKilled):
        bridge_import(plan, file_sha256=sha256, progress=killed, batch=4)
    first = ImportRun.objects.get()
    assert first.status == "running" and first.counts["events"] == 4
    assert recover_imports_task() == []  # its beat is fresh: it may still be writing
    ImportRun.objects.update(beat_at=timezone.now() - timedelta(hours=1))

    assert recover_imports_task() == [first.pk]
    first.refresh_from_db()
    assert first.status == "stopped" and first.get_status_display() == "stopped part-way"
    assert "nothing was heard from it for 120 seconds" in first.error

    second = import_enqueue(
        plan=kept_plan(
            sha256=sha256, format="sillytavern", file_name="chat.jsonl", speakers=SERAPHINA
        ),
        file_sha256=sha256,
        user=None,
    )

    second.refresh_from_db()
    assert (second.status, second.counts["events"], second.counts["events_here"]) == ("done", 6, 4)
    origins = list(ImportedMessage.objects.values_list("origin", flat=True))
    assert len(origins) == len(set(origins)) == Event.objects.count() == 10
    first.refresh_from_db()
    assert first.status == "stopped" and run_finished_by(first) == second


def test_a_worker_alive_after_its_run_was_marked_stopped_writes_no_more_batches():
    data = chat(12)
    sha256 = file_keep(data)
    plan = kept_plan(
        sha256=sha256, format="sillytavern", file_name="chat.jsonl", speakers=SERAPHINA
    )

    def marked_stopped(done: int, total: int) -> None:
        ImportRun.objects.update(status="stopped")  # the recovery, while this worker is silent

    with pytest.raises(RunStopped, match="importing the same file again finishes it"):
        bridge_import(plan, file_sha256=sha256, progress=marked_stopped, batch=4)

    assert Event.objects.count() == 8  # the batch under way when it was marked, and no more
    assert ImportRun.objects.get().status == "stopped"


def test_two_imports_queued_together_both_complete_the_second_waiting_for_the_first(
    monkeypatch,
):
    first = queued(SERAPHINA, data=chat(6, chat_id="1"), file_name="first.jsonl")
    second = queued(SERAPHINA, data=chat(4, chat_id="2"), file_name="second.jsonl")
    seen = []
    stage = bridges._suggestions_stage

    def second_queued_meanwhile(plan, run, counts):
        if run.pk == first.pk:
            import_task(second.pk)  # a worker takes it while the first holds the installation
            seen.append(ImportRun.objects.get(pk=second.pk).status)
        stage(plan, run, counts)

    monkeypatch.setattr(bridges, "_suggestions_stage", second_queued_meanwhile)

    import_task(first.pk)

    assert seen == ["waiting"]
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, first.counts["events"]) == ("done", 6)
    assert (second.status, second.counts["events"], second.error) == ("done", 4, "")
    assert Event.objects.count() == 10


def test_a_waiting_import_gets_a_worker_from_the_recovery_once_the_installation_is_free():
    from transfer.lock import one_at_a_time

    run = queued(SERAPHINA)
    with one_at_a_time(what="restore"):
        import_task(run.pk)
        run.refresh_from_db()
        assert run.status == "waiting" and not Event.objects.exists()
        recover_imports_task()  # still held: it waits on
        run.refresh_from_db()
        assert run.status == "waiting"

    recover_imports_task()

    run.refresh_from_db()
    assert (run.status, run.counts["events"]) == ("done", 2)


def test_a_preview_whose_worker_died_fails_asking_for_the_file_again():
    run = ImportRun.objects.create(
        format="sillytavern",
        file_name="chat.jsonl",
        file_sha256=file_keep(CHAT),
        status="previewing",
        beat_at=timezone.now() - timedelta(hours=1),  # claimed, then silent
    )

    assert recover_imports_task() == []

    run.refresh_from_db()
    assert run.status == "failed" and "upload the file again" in run.error
