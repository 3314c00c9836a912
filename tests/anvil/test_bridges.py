import hashlib
import json
import re

import pytest
from django.contrib.auth.models import Permission, User
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from events.models import Event
from mirror.models import Proposer, TagSuggestion
from tests.conftest import REPO
from transfer.bridges import PREVIEW_LISTED
from transfer.bundle import LoreEntry
from transfer.formats.card import card_dump
from transfer.lock import one_at_a_time
from transfer.models import ImportedMessage, ImportedProposal, ImportRun
from transfer.tasks import recover_imports_task

pytestmark = pytest.mark.django_db(databases="__all__")

FIXTURES = REPO / "tests" / "transfer" / "fixtures" / "bridges"
UPLOAD = reverse("admin:transfer-import-upload")
IMPORT = reverse("admin:transfer-import-run")


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def card_png() -> bytes:
    lantern = LoreEntry(
        name="The lantern",
        keys=("lantern", "lamp"),
        secondary_keys=(),
        content="A brass lantern, dented on one side, that she carries to the pier.",
        constant=False,
        enabled=True,
        where="0",
    )
    return card_dump(
        name="Seraphina",
        description="A keeper of the north light who speaks softly.",
        entries=[lantern],
        png=True,
    )


def upload(client, data: bytes, *, name: str, format: str):
    return client.post(
        UPLOAD, {"format": format, "file": SimpleUploadedFile(name, data)}, follow=False
    )


def shown(preview) -> str:
    """What a preview page says the import would do: its content before the Import button."""
    return preview.text.split('id="content-main"')[1].split("<form")[0]


def run_made(file_name: str, **fields) -> ImportRun:
    """A run of ``file_name`` with ``fields`` as given: a SillyTavern chat unless ``format``
    says otherwise."""
    fields = {"format": "sillytavern", "file_sha256": "0" * 64, **fields}
    return ImportRun.objects.create(file_name=file_name, **fields)


def import_post(client, preview, **speakers):
    """The Import button of ``preview``: its hidden fields, and the speakers chosen."""
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', preview.text))
    fields.pop("csrfmiddlewaretoken", None)
    return client.post(IMPORT, {**fields, **speakers})


def test_it_keeps_a_card_and_previews_its_draft_and_wake_text(admin_client):
    data = card_png()
    preview = upload(admin_client, data, name="seraphina.png", format="card")
    assert preview.status_code == 200
    assert "A draft of 1 fragment" in preview.text
    assert "new fragment" in preview.text  # the draft's diff against the Gem
    assert "A brass lantern, dented" in preview.text
    assert "Who the companion is" in preview.text
    assert "A keeper of the north light" in preview.text  # the wake text's diff
    assert "in use now" in preview.text
    assert "Nothing has been written yet" in preview.text
    sha256 = hashlib.sha256(data).hexdigest()
    with default_storage.open(f"imports/{sha256}", "rb") as kept:
        assert kept.read() == data
    assert f'value="{sha256}"' in preview.text
    assert not ImportRun.objects.exists() and not ImportedProposal.objects.exists()


def test_it_imports_a_card_as_proposals_and_then_finds_nothing_new(admin_client):
    data = card_png()
    preview = upload(admin_client, data, name="seraphina.png", format="card")
    response = import_post(admin_client, preview)
    run = ImportRun.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:transfer_importrun_change", args=[run.pk])
    assert run.file_name == "seraphina.png" and run.finished_at is not None
    assert run.user.username == "admin"
    assert sorted(run.proposals.values_list("kind", flat=True)) == ["draft", "wake"]

    page = admin_client.get(response["Location"])
    assert "1 draft proposed" in page.text and "1 wake text proposed" in page.text
    assert "<li>0 " not in page.text  # a card holds no conversation nor memories
    assert "?proposer__exact=import" not in page.text
    assert page.text.count('class="loom-call"') == 2  # a card for each proposal
    assert "Apply" in page.text and "Edit" in page.text and "Drop" in page.text

    again = upload(admin_client, data, name="seraphina.png", format="card")
    assert "Nothing new" in again.text
    assert "Already proposed by an earlier import" in again.text
    assert 'value="Import"' not in again.text


def test_a_chat_asks_who_speaks_and_imports_nothing_until_every_speaker_is_chosen(
    admin_client,
):
    preview = upload(admin_client, fixture("chat.jsonl"), name="chat.jsonl", format="sillytavern")
    assert "Who speaks" in preview.text
    assert "8 messages to log as events, 0 already here" in preview.text
    assert "16 May 2024" in preview.text  # the conversation's first and last times
    assert re.search(
        r"the Mirror would make \d+ to \d+ calls: about \$[\d.]+, at most \$[\d.]+", preview.text
    )
    assert "SillyTavern system notes (narration, comments)" in preview.text  # left out, said

    refused = import_post(admin_client, preview, speaker_0="claude")
    assert refused.status_code == 200
    assert "Choose who “Nell” is here." in refused.text
    assert not Event.objects.exists() and not ImportRun.objects.exists()

    done = import_post(admin_client, preview, speaker_0="claude", speaker_1="hasuki")
    assert done.status_code == 302
    assert set(Event.objects.values_list("actor", flat=True)) == {"claude", "hasuki"}
    assert ImportedMessage.objects.count() == Event.objects.count() == 8
    last = Event.objects.order_by("-id").first()
    page = admin_client.get(done["Location"])
    assert "8 messages logged as events" in page.text
    assert f"{reverse('heart-chat')}?before={last.pk + 1}" in page.text

    again = upload(admin_client, fixture("chat.jsonl"), name="chat.jsonl", format="sillytavern")
    assert "0 messages to log as events, 8 already here" in again.text
    assert "Nothing new" in again.text


def test_a_speaker_cannot_be_given_an_identity_of_the_other_side(admin_client):
    preview = upload(admin_client, fixture("chat.jsonl"), name="chat.jsonl", format="sillytavern")
    refused = import_post(admin_client, preview, speaker_0="hasuki", speaker_1="hasuki")
    assert refused.status_code == 200
    assert "Select a valid choice" in refused.text
    assert not Event.objects.exists()


def test_memories_are_staged_in_the_queue_for_the_run_page_to_lead_to(admin_client):
    preview = upload(admin_client, fixture("mem0_list.json"), name="m.json", format="mem0")
    assert "2 memories to stage as suggestions" in preview.text
    assert "Is afraid of the dark pier" in preview.text
    assert "26 Jul 2024" in preview.text  # when it was remembered
    done = import_post(admin_client, preview)
    staged = TagSuggestion.objects.filter(proposer=Proposer.IMPORT)
    assert staged.count() == 2
    page = admin_client.get(done["Location"])
    queue = reverse("admin:mirror_tagsuggestion_changelist") + "?proposer__exact=import"
    assert queue in page.text
    listed = admin_client.get(queue)
    assert "Is afraid of the dark pier" in listed.text


def test_a_malformed_file_is_refused_naming_each_line_at_fault(admin_client):
    broken = b'[{"id": "a", "memory": "Likes tea"}, {"memory": 3}]'
    response = upload(admin_client, broken, name="broken.json", format="mem0")
    assert response.status_code == 200
    assert "“broken.json” was refused, nothing imported:" in response.text
    assert "[1].id" in response.text and "[1].memory" in response.text
    assert not default_storage.exists("imports")
    assert not ImportRun.objects.exists()


def test_a_card_nested_ten_thousand_deep_is_refused_in_words(admin_client):
    deep = b'{"name": "Deep", "extensions": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"
    response = upload(admin_client, deep, name="deep.json", format="card")
    assert response.status_code == 200
    assert "“deep.json” was refused, nothing imported:" in response.text
    assert "nested too deeply (lists and objects more than 64 levels inside one another" in (
        response.text
    )
    assert not default_storage.exists("imports")


def test_an_empty_file_and_one_over_the_limit_are_refused_saying_the_limit(admin_client, settings):
    empty = upload(admin_client, b"", name="empty.json", format="mem0")
    assert "“empty.json” is empty: there is nothing to import." in empty.text
    settings.UPLOAD_MAX_BYTES = {"image": 10, "upload": 10}
    page = admin_client.get(UPLOAD)
    assert "At most 10 bytes." in page.text
    large = upload(admin_client, fixture("mem0_list.json"), name="m.json", format="mem0")
    assert "a file to import may be at most 10 bytes" in large.text
    assert not ImportRun.objects.exists()


def test_an_import_while_another_runs_waits_for_it_then_runs(admin_client):
    preview = upload(admin_client, fixture("mem0_list.json"), name="m.json", format="mem0")
    with one_at_a_time(what="restore"):
        response = import_post(admin_client, preview)  # the worker runs it at once in tests
        run = ImportRun.objects.get()
        assert response["Location"] == reverse("admin:transfer_importrun_change", args=[run.pk])
        assert run.status == "waiting" and run.error == ""
        page = admin_client.get(response["Location"])
        assert "Waiting for another restore or import to end" in page.text
        assert "holds no worker while it waits" in page.text
        assert 'hx-trigger="every 1s"' in page.text
        assert not TagSuggestion.objects.exists()

    recover_imports_task()  # the minutely recovery gives it a worker

    run.refresh_from_db()
    assert run.status == "done" and TagSuggestion.objects.count() == 2


def test_a_waiting_run_names_the_import_it_waits_for(admin_client):
    first = run_made("first.json", format="mem0")
    second = run_made("second.json", format="mem0", file_sha256="1" * 64, status="waiting")
    page = admin_client.get(reverse("admin:transfer_importrun_change", args=[second.pk]))
    first_url = reverse("admin:transfer_importrun_change", args=[first.pk])
    assert f'Waiting for the import of <a href="{first_url}">first.json</a> to end' in page.text


def test_an_import_of_a_file_no_longer_kept_asks_for_it_again(admin_client):
    preview = upload(admin_client, fixture("mem0_list.json"), name="m.json", format="mem0")
    (kept,) = default_storage.listdir("imports")[1]
    default_storage.delete(f"imports/{kept}")
    response = import_post(admin_client, preview)
    assert response["Location"] == UPLOAD
    page = admin_client.get(UPLOAD)
    assert "no longer kept here: upload it again" in page.text
    assert not ImportRun.objects.exists()


def test_the_runs_list_says_a_run_stopped_part_way_and_offers_the_upload_page(admin_client):
    run = run_made(
        "half.jsonl",
        status="stopped",
        counts={"messages": 6000, "events": 2000},
        error="Its worker stopped: nothing was heard from it for 120 seconds.",
    )
    page = admin_client.get(reverse("admin:transfer_importrun_changelist"))
    assert "half.jsonl" in page.text and "stopped part-way" in page.text
    assert UPLOAD in page.text
    assert "Import from another companion" in admin_client.get(reverse("admin:index")).text
    url = reverse("admin:transfer_importrun_change", args=[run.pk])
    run_page = admin_client.get(url)
    assert (
        "Stopped part-way: 2,000 of 6,000 messages written; import the file again to finish it."
        in run_page.text
    )
    assert "nothing was heard from it for 120 seconds" in run_page.text
    assert "hx-trigger" not in run_page.text  # it no longer polls
    assert admin_client.get(url, headers={"HX-Request": "true"})["HX-Refresh"] == "true"
    assert admin_client.get(reverse("admin:transfer_importrun_add")).status_code == 403


def test_a_stopped_run_finished_by_a_later_import_says_so(admin_client):
    stopped = run_made("chat.jsonl", status="stopped", counts={"messages": 6000, "events": 2000})
    later = run_made("chat again.jsonl", status="done", finished_at=timezone.now())
    page = admin_client.get(reverse("admin:transfer_importrun_change", args=[stopped.pk]))
    assert "2,000 of 6,000 messages written, and a later import finished it." in page.text
    later_url = reverse("admin:transfer_importrun_change", args=[later.pk])
    assert f'Finished by <a href="{later_url}">the import of chat again.jsonl</a>' in page.text


def test_a_run_under_way_shows_how_far_it_has_come_and_its_page_follows_it(admin_client):
    run = run_made("long.jsonl", counts={"messages": 6000, "events": 2000, "events_here": 2000})
    url = reverse("admin:transfer_importrun_change", args=[run.pk])

    region = admin_client.get(url, headers={"HX-Request": "true"})

    assert region.text.lstrip().startswith('<section id="import-progress"')
    assert '<progress max="6000" value="4000"' in region.text
    assert "4,000 of 6,000 messages" in region.text
    ImportRun.objects.filter(pk=run.pk).update(status="done", finished_at=timezone.now())
    ended = admin_client.get(url, headers={"HX-Request": "true"})
    assert ended.status_code == 204 and ended["HX-Refresh"] == "true"
    assert "Done." in admin_client.get(url).text


def test_a_queued_run_waits_for_a_worker(admin_client):
    run = run_made("m.json", format="mem0", status="queued")
    page = admin_client.get(reverse("admin:transfer_importrun_change", args=[run.pk]))
    assert "Waiting for a worker to start the import" in page.text
    assert 'hx-trigger="every 1s"' in page.text


def test_importing_takes_the_right_to_add_imports(client, admin_client):
    assert client.get(UPLOAD).status_code == 302  # signed out: to the sign-in page
    staff = User.objects.create_user("reader", password="pw", is_staff=True)
    for codename in ("use_memory", "view_importrun"):
        staff.user_permissions.add(Permission.objects.get(codename=codename))
    client.force_login(staff)
    assert client.get(reverse("admin:transfer_importrun_changelist")).status_code == 200
    assert client.get(UPLOAD).status_code == 403
    assert client.post(IMPORT, {}).status_code == 403
    assert "Import from another companion" not in client.get(reverse("admin:index")).text
    staff.user_permissions.add(Permission.objects.get(codename="add_importrun"))
    assert client.get(UPLOAD).status_code == 200


def test_the_import_answers_only_a_post(admin_client):
    assert admin_client.get(IMPORT).status_code == 405


def test_a_file_too_large_for_the_page_is_previewed_by_the_worker_then_imported(
    admin_client, settings, monkeypatch
):
    settings.IMPORT_PREVIEW_IN_PAGE_BYTES = 100
    data = fixture("chat.jsonl")

    uploaded = upload(admin_client, data, name="chat.jsonl", format="sillytavern")

    run = ImportRun.objects.get()  # the worker read it at once, as it does in tests
    url = reverse("admin:transfer_importrun_change", args=[run.pk])
    assert uploaded.status_code == 302 and uploaded["Location"] == url
    assert run.status == "previewed" and run.file_sha256 == hashlib.sha256(data).hexdigest()
    preview = admin_client.get(url)
    settings.IMPORT_PREVIEW_IN_PAGE_BYTES = 2**20
    small = upload(admin_client, data, name="chat.jsonl", format="sillytavern")
    assert shown(preview) == shown(small)  # the same preview as a small file's, in the page
    assert "8 messages to log as events, 0 already here" in preview.text
    assert "Who speaks" in preview.text
    assert f'<input type="hidden" name="run" value="{run.pk}"' in preview.text

    def planned_again(*args, **kwargs):
        raise AssertionError("the Import button planned the file in the page request")

    monkeypatch.setattr("anvil.bridges.kept_plan", planned_again)
    monkeypatch.setattr("anvil.bridges.bridge_plan", planned_again)
    refused = import_post(admin_client, preview, speaker_0="claude")
    assert refused.status_code == 200 and "Choose who “Nell” is here." in refused.text
    assert not Event.objects.exists()

    done = import_post(admin_client, preview, speaker_0="claude", speaker_1="hasuki")

    assert done.status_code == 302 and done["Location"] == url
    run.refresh_from_db()
    assert (run.status, run.counts["events"], run.user.username) == ("done", 8, "admin")
    assert set(Event.objects.values_list("actor", flat=True)) == {"claude", "hasuki"}
    assert "8 messages logged as events" in admin_client.get(url).text
    again = import_post(admin_client, preview, speaker_0="claude", speaker_1="hasuki")
    assert again["Location"] == url and ImportedMessage.objects.count() == 8


def test_a_preview_under_way_in_the_worker_shows_its_stage(admin_client):
    run = run_made(
        "long.jsonl",
        status="previewing",
        preview={"stage": "finding what is here already", "step": 1, "steps": 3},
    )
    url = reverse("admin:transfer_importrun_change", args=[run.pk])

    region = admin_client.get(url, headers={"HX-Request": "true"})

    assert "Reading the file for its preview: finding what is here already" in region.text
    assert '<progress max="3" value="1"' in region.text
    assert 'hx-trigger="every 1s"' in region.text
    page = admin_client.get(url)
    assert "Proposals" not in page.text  # none can be known before the file is read


def test_a_refused_file_previewed_by_the_worker_says_each_problem(admin_client, settings):
    settings.IMPORT_PREVIEW_IN_PAGE_BYTES = 10
    broken = b'[{"id": "a", "memory": "Likes tea"}, {"memory": 3}]'

    uploaded = upload(admin_client, broken, name="broken.json", format="mem0")

    run = ImportRun.objects.get()
    assert run.status == "failed"
    page = admin_client.get(uploaded["Location"])
    assert "“broken.json” was refused, nothing imported:" in page.text
    assert "[1].id" in page.text and "[1].memory" in page.text
    assert not TagSuggestion.objects.exists()


def test_a_preview_shows_the_greetings_the_entries_left_out_and_the_ambient_prose_proposed(
    admin_client,
):
    card = {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {
            "name": "Seraphina",
            "description": "A keeper.",
            "first_mes": "You came back.",
            "alternate_greetings": ["The lamp is lit tonight."],
            "mes_example": "<START>\n{{char}}: Hm.",
            "character_book": {
                "entries": [
                    {"keys": ["harbour"], "content": "Where ships rest.", "constant": True},
                    {
                        "keys": ["Old Grey"],
                        "comment": "a seal",
                        "content": "Grey.",
                        "enabled": False,
                    },
                ]
            },
        },
    }
    preview = upload(admin_client, json.dumps(card).encode(), name="sera.json", format="card")
    said = shown(preview)

    assert "Greetings" in said and "You came back." in said and "The lamp is lit tonight." in said
    assert "Example messages" in said and "{{char}}: Hm." in said
    assert "data.character_book.entries[1] (“a seal”), disabled there" in said
    assert "Always in mind: an addition to the ambient prose" in said
    assert "Always in mind from the character card “Seraphina”: [harbour]." in said
    assert "naming one in the chat wakes the fragment in that turn" in said


def test_a_preview_lists_the_first_entries_left_out_and_counts_the_rest(admin_client):
    ghosts = {
        str(n): {"key": [f"ghost {n}"], "content": "Gone.", "disable": True}
        for n in range(PREVIEW_LISTED + 7)
    }
    book = {"entries": {**ghosts, "last": {"key": ["lamp"], "content": "Lit."}}}
    preview = upload(
        admin_client, json.dumps(book).encode(), name="ghosts.json", format="sillytavern"
    )
    said = shown(preview)

    assert said.count("disabled there") == PREVIEW_LISTED
    assert "…and 7 more entries left out, each said in the draft's preface" in said
    # With no entry to make a fragment there is no draft to keep them on, and none is claimed.
    alone = upload(
        admin_client,
        json.dumps({"entries": ghosts}).encode(),
        name="only.json",
        format="sillytavern",
    )
    assert "…and 7 more entries left out." in shown(alone)
    assert "draft's proposal" not in shown(alone)
