"""Identities in the Anvil change through the Gem's one write, ``identities_set``, and are
refused in its words."""

import pytest
from django.contrib.admin.models import LogEntry

from gem.models import Identity, IdentitySide

pytestmark = pytest.mark.django_db(databases="__all__")


def names() -> list[str]:
    return list(Identity.objects.order_by("id").values_list("name", flat=True))


def test_it_adds_and_renames_an_identity_and_logs_each(admin_client):
    before = names()
    response = admin_client.post(
        "/admin/gem/identity/add/", {"name": "mika", "side": "user", "color": "#112233"}
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    mika = Identity.objects.get(name="mika")
    response = admin_client.post(
        f"/admin/gem/identity/{mika.pk}/change/",
        {"name": "mikaela", "side": "user", "color": "#112233"},
    )
    assert response.status_code == 302
    assert names() == [*before, "mikaela"]
    assert LogEntry.objects.filter(object_id=str(mika.pk)).count() == 2


def test_it_refuses_a_name_another_identity_has_in_any_case(admin_client):
    taken = Identity.objects.filter(side=IdentitySide.USER).first().name
    response = admin_client.post(
        "/admin/gem/identity/add/",
        {"name": taken.upper(), "side": "user", "color": "#112233"},
    )
    assert response.status_code == 200
    assert "each name is used once" in response.content.decode()
    assert taken.upper() not in names()


def test_it_deletes_an_identity_but_never_the_last_of_its_side(admin_client):
    companions = list(Identity.objects.filter(side=IdentitySide.COMPANION).order_by("id"))
    *others, last = companions
    for identity in others:
        response = admin_client.post(f"/admin/gem/identity/{identity.pk}/delete/", {"post": "yes"})
        assert response.status_code == 302
    response = admin_client.get(f"/admin/gem/identity/{last.pk}/delete/")
    assert response.status_code == 403
    assert list(Identity.objects.filter(side=IdentitySide.COMPANION)) == [last]
