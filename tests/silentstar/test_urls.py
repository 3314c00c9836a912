import pytest
from django.contrib import admin
from django.urls import reverse

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
