import pytest
from django.contrib import admin
from django.urls import reverse

from events.models import Event

pytestmark = pytest.mark.django_db(databases="__all__")


def test_it_answers_with_the_login_page(client):
    response = client.get(reverse("login"))
    assert response.status_code == 200
    assert b"Sign in" in response.content


def test_it_sends_visitors_who_are_not_signed_in_to_the_login_page(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


def test_it_serves_static_files_without_signing_in(client):
    response = client.get("/static/css/login.css")
    assert response.status_code == 200


@pytest.mark.parametrize("model", list(admin.site._registry), ids=lambda m: m._meta.label)
def test_it_lists_every_model_in_the_admin_with_search(admin_client, model):
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    response = admin_client.get(url, {"q": "fairy"})
    assert response.status_code == 200


def test_it_registers_every_project_model_in_the_admin():
    from django.apps import apps

    for app in ("heart", "gem", "mirror"):
        for model in apps.get_app_config(app).get_models():
            assert model in admin.site._registry, model


@pytest.mark.parametrize(
    "url",
    [
        "/accounts/password_reset/",
        "/accounts/password_reset/done/",
        "/accounts/reset/MQ/set-password/",
        "/accounts/reset/done/",
    ],
)
def test_it_offers_no_password_reset_by_mail(client, url):
    assert client.get(url).status_code == 404
    assert client.post(url, {"email": "mono@example.org"}).status_code == 404


def test_it_changes_the_password_of_the_signed_in_user(client, django_user_model):
    user = django_user_model.objects.create_user(username="mono", password="the old password")
    client.force_login(user)
    assert client.get(reverse("password_change")).status_code == 200
    response = client.post(
        reverse("password_change"),
        {
            "old_password": "the old password",
            "new_password1": "a new and longer password",
            "new_password2": "a new and longer password",
        },
    )
    assert response.status_code == 302 and response.url == reverse("password_change_done")
    assert client.get(response.url).status_code == 200
    user.refresh_from_db()
    assert user.check_password("a new and longer password")


def test_it_changes_no_password_without_the_old_one(client, django_user_model):
    user = django_user_model.objects.create_user(username="mono", password="the old password")
    client.force_login(user)
    response = client.post(
        reverse("password_change"),
        {
            "old_password": "a guess",
            "new_password1": "a new and longer password",
            "new_password2": "a new and longer password",
        },
    )
    assert response.status_code == 200
    user.refresh_from_db()
    assert user.check_password("the old password")


def test_it_sends_visitors_who_are_not_signed_in_from_the_password_change_to_sign_in(client):
    for url in (reverse("password_change"), reverse("password_change_done")):
        response = client.get(url)
        assert response.status_code == 302
        assert response.url.startswith(reverse("login"))


def test_it_signs_out(admin_client):
    response = admin_client.post(reverse("logout"))
    assert response.status_code == 302 and response.url == reverse("login")
    assert admin_client.get("/").status_code == 302


@pytest.mark.django_db(databases="__all__")
def test_the_event_logs_old_addresses_in_the_anvil_lead_to_the_new_ones(admin_client):
    event = Event.objects.create(content="hello", actor="luna")
    response = admin_client.get(f"/admin/heart/event/{event.pk}/change/?x=1")
    assert response.status_code == 301
    assert response["Location"] == f"/admin/events/event/{event.pk}/change/?x=1"
    assert admin_client.get(response["Location"]).status_code == 200
    assert admin_client.get("/admin/heart/turn/").status_code == 301
    assert admin_client.get("/admin/heart/contextsnapshot/").status_code == 200
