"""The pass prompts in the admin (``anvil.versions.MirrorPromptAdmin``): saving adds a version."""

import pytest
from django.urls import reverse

from mirror.models import MirrorPrompt
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
    assert "Merge&nbsp;the&nbsp;three,&nbsp;keeping&nbsp;names." in page.content.decode()
    # The newest of a kind opens the add form: the next version starts from what is in use.
    form = admin_client.get(reverse("admin:mirror_mirrorprompt_add"), {"kind": "merge"})
    assert "Merge the three, keeping names." in form.content.decode()
