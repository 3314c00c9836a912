"""The Anvil's imports, run by a worker: a queued run is claimed once, written with its
speakers as chosen, and a file that no longer reads fails it with the reason."""

import json

import pytest
from django.core.files.storage import default_storage

from events.models import Event
from transfer.bridges import bridge_plan, bundle_read, file_keep, import_enqueue
from transfer.bundle import BridgeError
from transfer.models import ImportRun
from transfer.tasks import import_task

pytestmark = pytest.mark.django_db(databases="__all__")

CHAT = "\n".join(
    json.dumps(line)
    for line in [
        {"user_name": "Luna", "character_name": "Seraphina", "create_date": 1715867107000},
        {"name": "Luna", "is_user": True, "send_date": "2024-05-16T13:45:07Z", "mes": "Hello."},
        {"name": "Seraphina", "is_user": False, "send_date": "2024-05-16T13:46:00Z", "mes": "Hi."},
    ]
).encode()


def queued(speakers: dict) -> ImportRun:
    return ImportRun.objects.create(
        format="sillytavern",
        file_name="chat.jsonl",
        file_sha256=file_keep(CHAT),
        status="queued",
        speakers=speakers,
    )


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
