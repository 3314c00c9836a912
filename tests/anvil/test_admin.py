"""The Anvil as a whole: a visitor signed out is sent to sign in, a constraint is said in words on
any form, and a reader may look but not change."""

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from django.utils.html import escape

from gem.models import Fragment, WorkingMemory

pytestmark = pytest.mark.django_db(databases="__all__")


@pytest.mark.parametrize(
    "url",
    [
        "/admin/gem/fragment/graph/",
        "/admin/gem/fragment/fairy/rename/",
        "/admin/gem/fragment/fairy/fold/",
        "/admin/gem/ambientprose/diff/?new=1",
        "/admin/gem/waketext/diff/?new=1",
        "/admin/gem/fragment/draft/",
    ],
)
def test_it_sends_a_logged_out_visitor_to_sign_in(client, fragments, url):
    response = client.get(url)
    assert response.status_code == 302
    assert "login" in response.url
    assert client.post(url, {"new_key": "x", "into": "ouji", "confirm": "1"}).status_code == 302
    assert Fragment.objects.filter(key="fairy").exists()


@pytest.mark.parametrize(
    ("url", "form", "words"),
    [
        (
            "admin:gem_fragmentedge_add",
            {"source": "cottagecore", "target": "fairy", "relation": "again"},
            "These two fragments are already linked.",
        ),
        (
            "admin:mirror_summary_add",
            {
                "level": "L0",
                "first_event_id": "9",
                "last_event_id": "3",
                "content": "x",
                "tokens": "1",
                "suggestions-TOTAL_FORMS": "0",
                "suggestions-INITIAL_FORMS": "0",
            },
            "A summary’s first event cannot come after its last.",
        ),
    ],
)
def test_every_constraint_a_form_meets_answers_in_words(admin_client, fragments, url, form, words):
    response = admin_client.post(reverse(url), form)
    assert response.status_code == 200
    page = response.content.decode()
    assert escape(words) in page
    assert "is violated" not in page


def test_it_lets_a_reader_look_but_not_reshape_or_change_status(
    client, django_user_model, fragments
):
    reader = django_user_model.objects.create_user("reader", password="x", is_staff=True)
    reader.user_permissions.set(
        Permission.objects.filter(
            codename__in=["use_memory", "view_fragment", "view_workingmemory"]
        )
    )
    client.force_login(reader)
    assert client.get(reverse("admin:gem_fragment_graph")).status_code == 200
    rename = reverse("admin:gem_fragment_rename", args=["fairy"])
    assert client.post(rename, {"new_key": "fae", "confirm": "1"}).status_code == 403
    assert client.get(reverse("admin:gem_fragment_draft")).status_code == 403
    item = WorkingMemory.objects.create(type="pin", content="tea")
    listed = client.get(reverse("admin:gem_workingmemory_changelist"))
    assert "status_change" not in listed.content.decode()
    client.post(
        reverse("admin:gem_workingmemory_changelist"),
        {
            "action": "status_change",
            "_selected_action": [item.pk],
            "apply": "1",
            "status": "dropped",
            "reason": "no",
        },
    )
    assert WorkingMemory.objects.get().status == "active"
    assert Fragment.objects.filter(key="fairy").exists()
