import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from bench.fakeapi import FakeReply
from gem.models import Fragment
from loom.models import CallStatus, DraftState, InboxImage, LoomCall, LoomPrompt, Session
from loom.services import loom_call_start, loom_draft_drop
from loom.tasks import run_loom_call_task
from tests.conftest import REPO
from tests.loom.fixtures import *  # noqa: F403  (the Loom's fixtures)
from tests.loom.fixtures import INVENTORY_DRAFT, answer, png_bytes

pytestmark = pytest.mark.django_db(databases="__all__")


def _call(fake_api, draft=INVENTORY_DRAFT, **kwargs) -> LoomCall:
    fake_api.push(FakeReply(answer(draft)))
    call = loom_call_start(agent="cataloguer", fragment_key="lantern", question="", **kwargs)
    call.refresh_from_db()
    assert call.status == CallStatus.DONE, call.error
    return call


def inventory() -> str:
    return Fragment.objects.get(key="lantern").inventory


def test_it_answers_404_for_an_address_that_names_no_row(admin_client):
    for name in ("admin:loom_session_change", "admin:loom_loomcall_change"):
        assert admin_client.get(reverse(name, args=["abc"])).status_code == 404
        assert admin_client.get(reverse(name, args=[999])).status_code == 404


def test_it_refuses_a_logged_out_visitor(client, gem):
    response = client.get(reverse("admin:loom_session_changelist"))
    assert response.status_code == 302
    assert "login" in response["Location"]


def test_it_opens_a_session_from_its_topic(admin_client, gem):
    response = admin_client.post(reverse("admin:loom_session_add"), {"topic": "The attic"})
    session = Session.objects.get()
    assert response["Location"] == reverse("admin:loom_session_change", args=[session.pk])
    page = admin_client.get(response["Location"])
    assert page.status_code == 200
    assert "Session: The attic" in page.text
    refused = admin_client.post(reverse("admin:loom_session_add"), {"topic": "   "})
    assert refused.status_code == 200 and Session.objects.count() == 1


def test_it_adds_a_fragment_by_key_and_names_near_keys_for_an_unknown_one(admin_client, session):
    url = reverse("admin:loom-session-fragment-add", args=[session.pk])
    admin_client.post(url, {"key": "shelf"})
    assert set(session.fragments.values_list("key", flat=True)) == {"lantern", "shelf"}
    response = admin_client.post(url, {"key": "lanterns"})
    assert "No fragment “lanterns” (did you mean lantern?)" in response.text
    assert admin_client.get(url).status_code == 405


def test_a_loom_draft_previews_as_a_diff_and_changes_nothing_until_applied(
    admin_client, fake_api, session
):
    call = _call(fake_api, session_id=session.pk)
    page = admin_client.get(reverse("admin:loom_session_change", args=[session.pk]))
    assert "a blue glass pane" in page.text
    assert "nothing has changed yet" in page.text
    assert 'class="anvil-diff"' in page.text
    assert "blue glass" not in inventory()

    response = admin_client.post(reverse("admin:loom-call-apply", args=[call.pk]))
    assert response.status_code == 302
    assert inventory() == "- brass, dented\n- a blue glass pane"
    call.refresh_from_db()
    assert call.draft_state == DraftState.APPLIED
    assert call.decided_by.username == "admin" and call.decided_at is not None
    messages = list(
        LogEntry.objects.filter(object_id="lantern").values_list("change_message", flat=True)
    )
    assert any(m.startswith("Changed from a draft: tiers inventory") for m in messages)
    (loom_entry,) = [m for m in messages if "Loom call" in m]
    assert f"Applied the Cataloguer's draft of Loom call {call.pk}" in loom_entry
    assert "fragment lantern; neighbours shelf" in loom_entry
    assert f"photos #{session.images.get().pk}" not in loom_entry  # none were chosen

    again = admin_client.post(reverse("admin:loom-call-apply", args=[call.pk]), follow=True)
    assert "already applied" in again.text


def test_a_draft_is_edited_on_the_page_an_imports_proposal_is(admin_client, fake_api, gem):
    call = _call(fake_api)
    page = admin_client.get(reverse("admin:loom-call-edit", args=[call.pk]))
    assert next(t.name for t in page.templates) == "admin/anvil/proposed_edit.html"
    assert page.context["words"].apply == "Apply this draft"
    assert page.context["apply_url"] == reverse("admin:loom-call-apply", args=[call.pk])
    assert "a blue glass pane" in page.context["fragments"][0]["tiers"][0][1]


def test_a_dropped_draft_changes_nothing(admin_client, fake_api, gem):
    call = _call(fake_api)
    admin_client.post(reverse("admin:loom-call-drop", args=[call.pk]))
    call.refresh_from_db()
    assert call.draft_state == DraftState.DROPPED
    assert inventory() == "- brass, dented"
    assert not LogEntry.objects.exists()


def test_an_edited_draft_previews_then_applies_the_edit(admin_client, fake_api, gem):
    call = _call(fake_api)
    edit = reverse("admin:loom-call-edit", args=[call.pk])
    assert "a blue glass pane" in admin_client.get(edit).text
    edited = INVENTORY_DRAFT.replace("blue", "green")
    preview = admin_client.post(edit, {"text": edited})
    assert "green" in preview.text and "blue glass" not in inventory()
    bad = admin_client.post(edit, {"text": "# lantern\n## nonsense\n"})
    assert "line 2" in bad.text
    apply = reverse("admin:loom-call-apply", args=[call.pk])
    nowhere = edited + "\n## edges\n\n- → nowhere\n"
    refused = admin_client.post(apply, {"text": nowhere})
    assert refused.status_code == 200
    assert "nowhere" in refused.context["error"] and refused.context["text"] == nowhere
    assert "blue glass" not in inventory() and "green" not in inventory()
    admin_client.post(apply, {"text": edited})
    assert inventory() == "- brass, dented\n- a green glass pane"
    call.refresh_from_db()
    assert call.applied_text == edited
    assert (
        "(edited)" in LogEntry.objects.filter(change_message__contains="Loom").get().change_message
    )


def test_a_failed_call_shows_its_error_and_a_retry(admin_client, fake_api, gem):
    fake_api.push(FakeReply("no sections at all"))
    call = loom_call_start(agent="weaver", fragment_key="lantern", question="")
    page = admin_client.get(reverse("admin:loom_loomcall_change", args=[call.pk]))
    assert "<h1>The Weaver on “lantern”</h1>" in page.text
    assert "the answer has no “=== draft ===” line" in page.text
    assert reverse("admin:loom-call-retry", args=[call.pk]) in page.text
    fake_api.push(FakeReply(answer(INVENTORY_DRAFT)))
    admin_client.post(reverse("admin:loom-call-retry", args=[call.pk]))
    call.refresh_from_db()
    assert call.status == CallStatus.DONE


def test_the_status_partial_polls_while_the_call_waits_and_leads_back_to_its_page(
    admin_client, session
):
    call = loom_call_start(
        agent="cataloguer",
        fragment_key="lantern",
        question="",
        session_id=session.pk,
        enqueue=False,
    )
    url = reverse("admin:loom-call-status", args=[call.pk])
    waiting = admin_client.get(url)
    assert f'hx-get="{url}"' in waiting.text and "waiting for a worker" in waiting.text
    run_loom_call_task(call.pk)
    workspace = reverse("admin:loom_session_change", args=[session.pk])
    done = admin_client.get(
        url, headers={"HX-Request": "true", "HX-Current-URL": f"http://testserver{workspace}"}
    )
    assert "hx-get" not in done.text
    assert f'name="next" value="{workspace}"' in done.text
    assert (
        admin_client.post(reverse("admin:loom-call-apply", args=[call.pk]), {"next": workspace})[
            "Location"
        ]
        == workspace
    )


def test_a_call_whose_worker_stopped_offers_a_retry_and_is_taken_again(admin_client, gem, settings):
    call = loom_call_start(agent="weaver", fragment_key="lantern", question="", enqueue=False)
    assert run_loom_call_task(call.pk) == call.pk
    long_ago = timezone.now() - timedelta(seconds=settings.Q_CLUSTER["timeout"] + 1)
    LoomCall.objects.filter(pk=call.pk).update(status=CallStatus.RUNNING, started_at=long_ago)
    page = admin_client.get(reverse("admin:loom_loomcall_change", args=[call.pk]))
    assert "its worker stopped" in page.text
    assert "hx-get" not in page.text
    admin_client.post(reverse("admin:loom-call-retry", args=[call.pk]))
    call.refresh_from_db()
    assert (call.status, call.attempts) == (CallStatus.DONE, 2)

    LoomCall.objects.filter(pk=call.pk).update(status=CallStatus.RUNNING, started_at=long_ago)
    assert run_loom_call_task(call.pk) == call.pk  # the queue delivering the task again
    LoomCall.objects.filter(pk=call.pk).update(status=CallStatus.RUNNING, started_at=timezone.now())
    assert run_loom_call_task(call.pk) is None  # a worker is on it


def test_it_asks_the_loom_from_a_fragments_page(admin_client, gem):
    change = admin_client.get(reverse("admin:gem_fragment_change", args=["lantern"]))
    ask = reverse("admin:loom-call-ask") + "?key=lantern"
    assert ask in change.text
    response = admin_client.post(ask, {"agent": "weaver", "question": "Relations?"})
    call = LoomCall.objects.get()
    assert (call.session, call.fragment_key, call.question) == (None, "lantern", "Relations?")
    assert response["Location"] == reverse("admin:loom_loomcall_change", args=[call.pk])
    assert admin_client.get(reverse("admin:loom-call-ask") + "?key=nope").status_code == 404


def test_the_inbox_takes_photos_and_a_session_takes_them_from_it(admin_client, gem, media):
    upload = reverse("admin:loom_inboximage_add")
    page = admin_client.get(upload)
    assert 'accept="image/*"' in page.text and 'capture="environment"' in page.text
    assert "multiple" in page.text
    photos = [SimpleUploadedFile(n, png_bytes(), content_type="image/png") for n in "ab"]
    admin_client.post(upload, {"image": photos})
    assert InboxImage.objects.count() == 2
    session = Session.objects.create(topic="The attic")
    ids = list(InboxImage.objects.values_list("pk", flat=True))
    admin_client.post(reverse("admin:loom-session-take", args=[session.pk]), {"images": ids})
    assert not InboxImage.objects.exists()
    assert session.images.count() == 2
    image = session.images.first()
    served = admin_client.get(reverse("admin:loom-session-image", args=[image.pk]))
    assert b"".join(served.streaming_content) == png_bytes()
    assert not list((Path(media) / "loom" / "inbox").iterdir())


@pytest.mark.parametrize(
    ("content", "overrides", "reason"),
    [
        (b"not an image at all", {}, "That file is not an image that can be read"),
        (png_bytes(), {"IMAGE_MAX_BYTES": 50}, "images may be at most 50 bytes"),
    ],
    ids=["not-an-image", "too-large"],
)
def test_the_inbox_refuses_what_the_chat_refuses(
    admin_client, media, settings, content, overrides, reason
):
    for name, value in overrides.items():
        setattr(settings, name, value)
    good = SimpleUploadedFile("good.png", png_bytes(), content_type="image/png")
    bad = SimpleUploadedFile("bad.png", content, content_type="image/png")
    response = admin_client.post(reverse("admin:loom_inboximage_add"), {"image": [good, bad]})
    assert response.status_code == 200
    assert "bad.png: " in response.text and reason in response.text
    assert not InboxImage.objects.exists()
    assert not Path(media).exists() or not list(Path(media).rglob("*.png"))


def test_the_inbox_says_how_many_photos_may_be_sent_at_once_and_still_checks_csrf(
    admin_user, media
):
    phone = Client(enforce_csrf_checks=True)
    phone.force_login(admin_user)
    upload = reverse("admin:loom_inboximage_add")
    assert "up to 100 at a time" in phone.get(upload).text
    token = phone.cookies["csrftoken"].value

    def photos(count):
        return [SimpleUploadedFile(f"{n}.png", png_bytes(), "image/png") for n in range(count)]

    response = phone.post(upload, {"image": photos(101), "csrfmiddlewaretoken": token})
    assert response.status_code == 200
    assert "At most 100 photos can be sent at once: send them in smaller groups." in response.text
    assert not InboxImage.objects.exists() and not Path(media).exists()

    assert phone.post(upload, {"image": photos(2)}).status_code == 403
    assert not InboxImage.objects.exists()
    response = phone.post(upload, {"image": photos(2), "csrfmiddlewaretoken": token}, follow=True)
    assert InboxImage.objects.count() == 2
    assert "2 photos in the inbox." in response.text


def test_the_inbox_refuses_photos_past_its_most_on_the_page(admin_client, media, settings):
    settings.LOOM_INBOX_MAX_PHOTOS = 2
    upload = reverse("admin:loom_inboximage_add")

    def photos(*names):
        return [SimpleUploadedFile(n, png_bytes(), content_type="image/png") for n in names]

    response = admin_client.post(upload, {"image": photos("a.png")}, follow=True)
    assert "1 photo in the inbox." in response.text
    response = admin_client.post(upload, {"image": photos("b.png", "c.png")})
    assert response.status_code == 200
    assert (
        "The inbox holds at most 2 photos and has 1 already: send at most 1 photo, or take some "
        "into a session or throw some away first."
    ) in response.text
    admin_client.post(upload, {"image": photos("b.png")})
    response = admin_client.post(upload, {"image": photos("c.png")})
    assert (
        "The inbox holds 2 photos, its most: take some into a session or throw some away first."
    ) in response.text
    assert sorted(InboxImage.objects.values_list("original_name", flat=True)) == ["a.png", "b.png"]
    assert len(list((Path(media) / "loom" / "inbox").iterdir())) == 2


def test_the_prompts_are_versioned_texts_starting_from_the_default(admin_client):
    add = reverse("admin:loom_loomprompt_add")
    page = admin_client.get(add + "?kind=weaver")
    assert "You are the Weaver" in page.text
    admin_client.post(add, {"kind": "weaver", "content": "Look for edges."})
    admin_client.post(add, {"kind": "weaver", "content": "Look harder."})
    assert list(LoomPrompt.objects.values_list("content", flat=True)) == [
        "Look harder.",
        "Look for edges.",
    ]


def test_the_installed_apps_shortcut_opens_the_inbox_upload_page(admin_client):
    manifest = json.loads((REPO / "static" / "heart" / "manifest.webmanifest").read_text())
    (shortcut,) = [s for s in manifest["shortcuts"] if s["name"] == "Photos to the inbox"]
    assert shortcut["url"] == reverse("admin:loom_inboximage_add")
    assert 'capture="environment"' in admin_client.get(shortcut["url"]).text


def test_discarding_inbox_photos_removes_their_files(admin_client, gem, media):
    upload = reverse("admin:loom_inboximage_add")
    photos = [SimpleUploadedFile(n, png_bytes(), content_type="image/png") for n in "ab"]
    admin_client.post(upload, {"image": photos})
    admin_client.post(
        reverse("admin:loom_inboximage_changelist"),
        {
            "action": "delete_selected",
            "_selected_action": list(InboxImage.objects.values_list("pk", flat=True)),
            "post": "yes",
        },
    )
    assert not InboxImage.objects.exists()
    assert not list((Path(media) / "loom" / "inbox").iterdir())


def test_starting_a_call_takes_the_right_to_add_calls(client, django_user_model, session):
    viewer = django_user_model.objects.create_user("viewer", password="x", is_staff=True)
    viewer.user_permissions.set(
        Permission.objects.filter(
            codename__in=["use_memory", "view_loomcall", "view_session", "change_session"]
        )
    )
    client.force_login(viewer)
    ask = reverse("admin:loom-call-ask") + "?key=lantern"
    assert client.get(ask).status_code == 200
    assert client.post(ask, {"agent": "weaver"}).status_code == 403
    call = reverse("admin:loom-session-call", args=[session.pk])
    assert client.post(call, {"agent": "weaver", "fragment_key": "lantern"}).status_code == 403
    assert not LoomCall.objects.exists()


def test_a_sessions_page_reads_its_calls_without_a_query_each(
    admin_client, admin_user, session, fake_api
):
    """Who decided each call and the patterns each staged are read with the calls."""

    def decided_weaver_call() -> None:
        fake_api.push(FakeReply(answer(INVENTORY_DRAFT, patterns="- a pattern\n- another")))
        call = loom_call_start(
            agent="weaver", fragment_key="lantern", question="", session_id=session.pk
        )
        loom_draft_drop(call_id=call.pk, user_id=admin_user.pk)

    def queries() -> int:
        with (
            CaptureQueriesContext(connections["default"]) as default,
            CaptureQueriesContext(connections["summaries"]) as summaries,
        ):
            page = admin_client.get(url)
        assert page.text.count("another</a>") == len(LoomCall.objects.all())
        return len(default) + len(summaries)

    url = reverse("admin:loom_session_change", args=[session.pk])
    decided_weaver_call()
    decided_weaver_call()
    two = queries()
    decided_weaver_call()
    assert queries() == two


# --- A draft over a fragment changed since -----------------------------------------------------

RED_WICK_DRAFT = "# lantern\n\n## inventory\n\n- brass, dented\n- a red wick\n"


def test_a_second_draft_of_one_tier_shows_both_changes_and_today_beside_it(
    admin_client, fake_api, gem
):
    first, second = _call(fake_api), _call(fake_api, RED_WICK_DRAFT)
    admin_client.post(reverse("admin:loom-call-apply", args=[first.pk]))
    card = admin_client.get(reverse("admin:loom_loomcall_change", args=[second.pk]))
    assert "“lantern” changed since this draft was written (conflicting: inventory)" in card.text
    page = admin_client.post(reverse("admin:loom-call-apply", args=[second.pk]))
    assert page.status_code == 200
    assert "“lantern” changed since this draft was written" in page.text
    (fragment,) = page.context["moved"]
    (row,) = [row for row in fragment["parts"] if row["part"] == "inventory"]
    assert (
        row["conflict"] and "a red wick" in row["draft"] and "a blue glass pane" in row["meanwhile"]
    )
    assert "inventory — conflict" in page.text
    assert "a blue glass pane" in page.context["today"]
    assert 'value="Apply this draft" formaction' in page.text and " disabled>" in page.text
    assert reverse("admin:loom-call-again", args=[second.pk]) in page.text
    second.refresh_from_db()
    assert second.draft_state == DraftState.PROPOSED and "a blue glass pane" in inventory()

    edited = second.draft.replace("- a red wick", "- a blue glass pane\n- a red wick")
    saved = admin_client.post(
        reverse("admin:loom-call-edit", args=[second.pk]), {"text": edited, "rebase": "1"}
    )
    assert saved.context["rebased"] and not saved.context["moved"]
    admin_client.post(
        reverse("admin:loom-call-apply", args=[second.pk]), {"text": saved.context["text"]}
    )
    assert inventory() == "- brass, dented\n- a blue glass pane\n- a red wick"


def test_a_draft_over_a_changed_fragment_is_applied_part_by_part_from_its_page(
    admin_client, fake_api, gem
):
    call = _call(fake_api, "# lantern\n\n## ambient\n\nA brass lantern.\n\n" + RED_WICK_DRAFT[11:])
    Fragment.objects.filter(key="lantern").update(inventory="- brass, polished")
    page = admin_client.post(reverse("admin:loom-call-apply", args=[call.pk]))
    assert {c["name"]: c["conflict"] for c in page.context["choices"]} == {
        "lantern:ambient": False,
        "lantern:inventory": True,
    }
    admin_client.post(
        reverse("admin:loom-call-apply", args=[call.pk]),
        {"text": call.draft, "by_parts": "1", "part": "lantern:ambient"},
    )
    lantern = Fragment.objects.get(key="lantern")
    assert (lantern.ambient, lantern.inventory) == ("A brass lantern.", "- brass, polished")
    call.refresh_from_db()
    assert call.draft_state == DraftState.APPLIED


def test_asking_again_starts_a_new_call_on_the_same_question(admin_client, fake_api, gem):
    call = _call(fake_api)
    fake_api.push(FakeReply(answer(RED_WICK_DRAFT)))
    response = admin_client.post(reverse("admin:loom-call-again", args=[call.pk]))
    again = LoomCall.objects.exclude(pk=call.pk).get()
    assert response["Location"] == reverse("admin:loom_loomcall_change", args=[again.pk])
    assert (again.agent, again.fragment_key) == (call.agent, call.fragment_key)
    call.refresh_from_db()
    assert call.draft_state == DraftState.PROPOSED
