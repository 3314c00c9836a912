"""The pass prompts in the admin (``anvil.versions.MirrorPromptAdmin``): saving adds a version."""

import re

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from gem.selectors import newest_version
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
