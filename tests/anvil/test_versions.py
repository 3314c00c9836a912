"""Texts kept as versions in the admin (``anvil.versions``): the ambient prose, the wake texts and
the pass prompts. Saving adds a version, and any two can be compared."""

import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from django.contrib.admin.models import ADDITION, LogEntry
from django.db import connections
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from gem.models import AmbientProse, WakeText
from gem.selectors import ambient_prose_current, newest_version
from gem.services import time_zone_set
from mirror.models import MirrorPrompt, MirrorPromptKind
from mirror.passes import prompt_current

pytestmark = pytest.mark.django_db(databases="__all__")


def test_it_saves_an_edit_as_a_new_version_by_its_author(admin_client):
    original = MirrorPrompt.objects.get(kind="summarise")
    url = reverse("admin:mirror_mirrorprompt_change", args=[original.pk])
    page = admin_client.get(url)
    assert page.status_code == 200
    response = admin_client.post(url, {"kind": "summarise", "content": "Reflect gently."})
    assert response.status_code == 302
    assert MirrorPrompt.objects.filter(kind="summarise").count() == 2
    original.refresh_from_db()
    assert original.content.startswith("You are the Mirror")  # kept as it was
    assert prompt_current("summarise") == "Reflect gently."
    assert MirrorPrompt.objects.filter(kind="summarise").first().author == "admin"


def test_it_lists_the_prompts_and_which_version_is_in_use(admin_client):
    response = admin_client.get(reverse("admin:mirror_mirrorprompt_changelist"))
    assert response.status_code == 200
    assert b"In use" in response.content
    delete = reverse("admin:mirror_mirrorprompt_delete", args=[MirrorPrompt.objects.first().pk])
    assert admin_client.get(delete).status_code == 403


def test_a_prompt_is_compared_with_the_version_before_it(admin_client):
    original = MirrorPrompt.objects.get(kind="merge")
    url = reverse("admin:mirror_mirrorprompt_change", args=[original.pk])
    admin_client.post(url, {"kind": "merge", "content": "Merge the three, keeping names."})
    newest = MirrorPrompt.objects.filter(kind="merge").order_by("-created_at", "-id").first()
    page = admin_client.get(reverse("admin:mirror_mirrorprompt_diff"), {"new": newest.pk})
    assert page.status_code == 200
    assert page.context["old"] == original and page.context["new"] == newest
    words_read = re.sub(r"</?(?:ins|del)>", "", page.content.decode())
    assert "Merge the three, keeping names." in words_read
    # The newest of a kind opens the add form: the next version starts from what is in use.
    form = admin_client.get(reverse("admin:mirror_mirrorprompt_add"), {"kind": "merge"})
    assert "Merge the three, keeping names." in form.content.decode()


def test_the_list_marks_the_newest_version_of_each_kind_with_a_query_for_all_rows(admin_client):
    url = reverse("admin:mirror_mirrorprompt_changelist")
    with CaptureQueriesContext(connections["summaries"]) as before:
        admin_client.get(url)
    for n in range(6):
        MirrorPrompt.objects.create(kind="clean", content=f"clean {n}")
    with CaptureQueriesContext(connections["summaries"]) as after:
        page = admin_client.get(url)

    assert len(after) == len(before)  # not a query a row
    in_use = {p.pk for p in page.context["cl"].result_list if p.in_use}
    newest = {newest_version(MirrorPrompt, kind=kind).pk for kind in MirrorPromptKind.values}
    assert in_use == newest and len(newest) == len(MirrorPromptKind.values)


# --- Ambient prose and wake texts ---------------------------------------------------------


def test_it_saves_every_ambient_edit_as_a_new_version_and_checks_its_keys(admin_client, fragments):
    AmbientProse.objects.create(content="Luna loves [fairy].")
    add = reverse("admin:gem_ambientprose_add")
    form = admin_client.get(add)
    assert form.context["adminform"].form.initial["content"] == "Luna loves [fairy]."
    assert form.context["check"].unmentioned == ["cottagecore", "lonely", "ouji"]

    response = admin_client.post(add, {"content": "Luna loves [fairy] and [tea]."}, follow=True)

    assert list(AmbientProse.objects.order_by("pk").values_list("content", flat=True)) == [
        "Luna loves [fairy].",
        "Luna loves [fairy] and [tea].",
    ]
    shown = [str(message) for message in response.context["messages"]]
    assert any("Named without a fragment: [tea]" in message for message in shown)
    [entry] = LogEntry.objects.all()
    assert entry.action_flag == ADDITION
    assert entry.change_message == "New version: 1 line added, 1 removed"


def test_it_keeps_ambient_versions_unchanged_and_saves_a_versions_page_as_a_new_one(
    admin_client,
):
    version = AmbientProse.objects.create(content="first")
    url = reverse("admin:gem_ambientprose_change", args=[version.pk])
    assert admin_client.post(url, {"content": "second, from the first"}).status_code == 302
    admin_client.post(reverse("admin:gem_ambientprose_delete", args=[version.pk]), {"post": "yes"})
    version.refresh_from_db()
    assert version.content == "first"
    assert ambient_prose_current() == "second, from the first"
    newest = AmbientProse.objects.order_by("-pk").first()
    assert newest.pk != version.pk and newest.author.get_username() == "admin"


def test_it_compares_any_two_versions(admin_client):
    first = AmbientProse.objects.create(content="one\ntwo <b>")
    AmbientProse.objects.create(content="middle")
    last = AmbientProse.objects.create(content="one\nthree")
    url = reverse("admin:gem_ambientprose_diff")
    response = admin_client.get(url, {"old": first.pk, "new": last.pk})
    page = response.content.decode()
    assert response.context["summary"] == "1 line added, 1 removed"
    assert "<del>two &lt;b&gt;</del>" in page  # escaped, the words that went marked
    assert "<ins>three</ins>" in page


def test_it_compares_a_version_with_the_one_it_replaced(admin_client):
    AmbientProse.objects.create(content="one")
    second = AmbientProse.objects.create(content="two")
    response = admin_client.get(reverse("admin:gem_ambientprose_diff"), {"new": second.pk})
    assert response.context["old"].content == "one"


def test_it_compares_two_versions_selected_in_the_list(admin_client):
    first = AmbientProse.objects.create(content="one")
    second = AmbientProse.objects.create(content="two")
    response = admin_client.post(
        reverse("admin:gem_ambientprose_changelist"),
        {"action": "versions_compare", "_selected_action": [second.pk, first.pk]},
    )
    assert (
        response.url == f"{reverse('admin:gem_ambientprose_diff')}?old={first.pk}&new={second.pk}"
    )


def test_it_says_how_to_ask_for_a_comparison(admin_client):
    response = admin_client.get(reverse("admin:gem_ambientprose_diff"), {"new": "x"}, follow=True)
    [message] = response.context["messages"]
    assert "Say which versions to compare" in str(message)


def test_it_versions_each_wake_text_on_its_own(admin_client):
    wake_before = WakeText.objects.filter(kind="wake").count()
    image = WakeText.objects.create(kind="image", content="An image: describe it.")
    form = admin_client.get(reverse("admin:gem_waketext_add"), {"kind": "image"})
    assert form.context["adminform"].form.initial["content"] == "An image: describe it."
    admin_client.post(
        reverse("admin:gem_waketext_add"), {"kind": "image", "content": "An image: look closely."}
    )
    newest = WakeText.objects.filter(kind="image").order_by("-pk").first()
    assert newest.content == "An image: look closely."
    assert WakeText.objects.filter(kind="wake").count() == wake_before
    response = admin_client.get(reverse("admin:gem_waketext_diff"), {"new": newest.pk})
    assert response.context["old"] == image


def test_it_offers_a_new_version_of_each_wake_text(admin_client):
    page = admin_client.get(reverse("admin:gem_waketext_changelist")).content.decode()
    add = reverse("admin:gem_waketext_add")
    assert f'href="{add}?kind=wake"' in page
    assert f'href="{add}?kind=image"' in page


@pytest.mark.parametrize(
    ("url", "service", "post"),
    [
        ("admin:gem_ambientprose_add", "text_version_add", {"content": "Luna by the sea."}),
        ("admin:gem_waketext_add", "text_version_add", {"kind": "image", "content": "Look."}),
        ("admin:loom_loomprompt_add", "text_version_add", {"kind": "weaver", "content": "Weave."}),
    ],
)
def test_every_version_saved_in_the_anvil_is_written_by_the_gem_s_service(
    admin_client, admin_user, monkeypatch, url, service, post
):
    import anvil.versions

    written = []
    real = getattr(anvil.versions, service)
    monkeypatch.setattr(
        anvil.versions, service, lambda **given: written.append(given) or real(**given)
    )

    response = admin_client.post(reverse(url), post)

    assert response.status_code == 302
    [given] = written
    given.pop("model", None)
    assert given == {**post, "author": admin_user}


# --- One clock ----------------------------------------------------------------------------


@pytest.fixture
def in_tokyo():
    """The owner's zone nine hours ahead of UTC, and two wake context versions of 6 Dec 2026,
    03:34 and 03:50 UTC (12:34 and 12:50 in Tokyo)."""
    time_zone_set(name="Asia/Tokyo")
    old, new = (WakeText.objects.create(kind="wake", content=text) for text in ("Wake.", "Up."))
    WakeText.objects.filter(pk=old.pk).update(created_at=datetime(2026, 12, 6, 3, 34, tzinfo=UTC))
    WakeText.objects.filter(pk=new.pk).update(created_at=datetime(2026, 12, 6, 3, 50, tzinfo=UTC))
    return old, new


def test_a_versions_name_says_its_moment_in_the_owners_zone(admin_client, in_tokyo):
    old, new = in_tokyo
    page = admin_client.get(reverse("admin:gem_waketext_change", args=[old.pk])).text
    assert "wake context of 6 Dec 2026, 12:34" in page
    assert "03:34" not in page
    diff = admin_client.get(reverse("admin:gem_waketext_diff"), {"old": old.pk, "new": new.pk})
    assert "wake context of 6 Dec 2026, 12:34" in diff.text
    assert "wake context of 6 Dec 2026, 12:50" in diff.text


def test_the_versions_list_says_each_moment_in_the_owners_zone(admin_client, in_tokyo):
    page = admin_client.get(reverse("admin:gem_waketext_changelist"), {"kind": "wake"}).text
    assert "6 Dec 2026, 12:34" in page and "6 Dec 2026, 12:50" in page
    assert "p.m." not in page


def test_saving_names_the_new_version_in_the_owners_zone(admin_client, in_tokyo):
    old, _ = in_tokyo
    response = admin_client.post(
        reverse("admin:gem_waketext_change", args=[old.pk]),
        {"kind": "wake", "content": "Awake."},
        follow=True,
    )
    newest = WakeText.objects.order_by("-pk").first()
    shown = timezone.localtime(newest.created_at, ZoneInfo("Asia/Tokyo"))
    said = f"wake context of {shown.day} {shown:%b %Y, %H:%M}"
    assert f"Saved as a new version: {said}." in response.text
    assert LogEntry.objects.get(object_id=str(newest.pk)).object_repr == said
