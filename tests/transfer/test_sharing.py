"""An export made for sharing leaves out what was taken back or forgotten (transfer/sharing.py)."""

import json
from datetime import UTC, datetime

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

from events.models import Event
from gem.models import WorkingMemory
from gem.services import working_memory_forget
from heart.corrections import correction_make
from heart.models import ContextSnapshot
from mirror.models import Summary, TagSuggestion
from mirror.services import suggestion_forget
from transfer.portable import portable_export

pytestmark = pytest.mark.django_db(databases="__all__")

SECRET = "my bank pin is 4471 9902"


def rows(folder, name: str) -> list[dict]:
    return [json.loads(line) for line in (folder / name).read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def memory(settings, tmp_path, admin_user):
    settings.MEDIA_ROOT = tmp_path / "media"
    image = default_storage.save("images/2026/12/card.png", ContentFile(b"\x89PNG\r\n\x1a\n"))
    taken = Event.objects.create(actor="luna", content=f"<luna>{SECRET}</luna>", image=image)
    kept = Event.objects.create(actor="luna", content="<luna>the rain again</luna>")
    correction_make(event_id=taken.pk, kind="retraction", made_by="owner")
    Summary.objects.create(
        level="L0",
        first_event_id=taken.pk,
        last_event_id=kept.pk,
        content=f"She said {SECRET}. Then the rain again.",
    )
    TagSuggestion.objects.create(proposer="compass", type="pin", content="a walk by the sea")
    dropped = TagSuggestion.objects.create(proposer="compass", type="pin", content="the old flat")
    suggestion_forget(suggestion_id=dropped.pk, user_id=admin_user.pk, by="owner")
    item = WorkingMemory.objects.create(type="pin", content="the spare key under the blue pot")
    working_memory_forget(item_ids=[item.pk], by="owner", user_id=None, now=timezone.now())
    ContextSnapshot.objects.create(
        turn=1, ts=datetime(2026, 12, 1, tzinfo=UTC), assembled_system="s", assembled_user=SECRET
    )
    return taken, kept


def test_it_leaves_out_what_was_taken_back_or_forgotten_and_every_snapshot(memory, tmp_path):
    taken, kept = memory

    manifest = portable_export(
        folder=tmp_path / "shared", progress=lambda _: None, for_sharing=True
    )

    shared = tmp_path / "shared"
    assert manifest["for_sharing"] is True and manifest["images"] == []
    events = {row["id"]: row for row in rows(shared, "events.jsonl")}
    assert (events[taken.pk]["content"], events[taken.pk]["image"]) == ("", "")
    assert events[kept.pk]["content"] == "<luna>the rain again</luna>"
    [summary] = rows(shared, "summaries.jsonl")
    assert summary["content"] == "She said [left out]. Then the rain again."
    [item] = rows(shared, "working_memory.jsonl")
    assert item["content"] == "[left out]"
    assert rows(shared, "forgotten.jsonl")[0]["content"] == "[left out]"
    assert [row["content"] for row in rows(shared, "suggestions.jsonl")] == [
        "a walk by the sea",
        "[left out]",
    ]
    assert rows(shared, "snapshots.jsonl") == []
    every_file = "".join(path.read_text(encoding="utf-8") for path in shared.glob("*.jsonl"))
    assert not any(words in every_file for words in ("4471", "blue pot", "old flat"))


def test_the_full_export_keeps_them(memory, tmp_path):
    manifest = portable_export(folder=tmp_path / "full", progress=lambda _: None)

    assert manifest["for_sharing"] is False and len(manifest["images"]) == 1
    assert SECRET in (tmp_path / "full" / "events.jsonl").read_text(encoding="utf-8")
    assert len(rows(tmp_path / "full", "snapshots.jsonl")) == 1
