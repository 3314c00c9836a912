"""Who may read and write the memory (``gem.access``)."""

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from gem.access import REFUSAL

pytestmark = pytest.mark.django_db(databases="__all__")


def test_it_tells_a_refused_account_why_and_who_can_let_it_in(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("stranger"))
    response = client.get(reverse("heart-chat"))
    assert response.status_code == 403
    assert REFUSAL in response.text
    assert f'action="{reverse("logout")}"' in response.text


def test_it_lets_in_an_account_once_granted_the_permission(client, django_user_model):
    friend = django_user_model.objects.create_user("friend")
    client.force_login(friend)
    assert client.get(reverse("lens-index")).status_code == 403
    friend.user_permissions.add(Permission.objects.get(codename="use_memory"))
    assert client.get(reverse("lens-index")).status_code == 200


def test_it_sends_a_visitor_who_is_not_signed_in_from_the_anvil_to_sign_in(client):
    response = client.get(reverse("admin:gem_fragment_changelist"))
    assert response.status_code == 302
    assert response.url == f"{reverse('login')}?next={reverse('admin:gem_fragment_changelist')}"
