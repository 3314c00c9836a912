"""Sign-in with a limit on failed attempts (``heart.auth``)."""

import pytest
from django.urls import reverse

from heart.auth import (
    login_failure_record,
    login_failures_clear,
    login_wait_seconds,
    wait_message,
)

pytestmark = pytest.mark.django_db(databases="__all__")

PASSWORD = "the right password"


@pytest.fixture(autouse=True)
def own_cache(settings):
    """A cache of this test's own, so failures counted elsewhere never leak in."""
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "auth"}
    }
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user(username="mono", password=PASSWORD)


def sign_in(client, password, username="mono", **extra):
    return client.post(reverse("login"), {"username": username, "password": password}, **extra)


def signed_in(client):
    return "_auth_user_id" in client.session


def test_it_signs_in_with_the_right_password(client, owner):
    response = sign_in(client, PASSWORD)
    assert response.status_code == 302 and response.url == "/"
    assert signed_in(client)


def test_it_says_when_the_password_is_wrong(client, owner):
    response = sign_in(client, "wrong")
    assert response.status_code == 200
    assert "That name and password did not match." in response.text


def test_it_refuses_the_sixth_attempt_after_five_failures_even_with_the_right_password(
    client, owner
):
    for _ in range(5):
        assert sign_in(client, "wrong").status_code == 200
    response = sign_in(client, PASSWORD)
    assert response.status_code == 429
    assert "Too many attempts, try again in 15 minutes." in response.text
    assert "did not match" not in response.text
    assert 'value="mono"' in response.text
    assert not signed_in(client)


def test_it_resets_the_count_on_success(client, owner):
    for _ in range(4):
        sign_in(client, "wrong")
    assert sign_in(client, PASSWORD).status_code == 302
    client.post(reverse("logout"))
    for _ in range(4):
        assert sign_in(client, "wrong").status_code == 200
    assert sign_in(client, PASSWORD).status_code == 302


def test_it_counts_per_user_name_and_address(client, owner, django_user_model):
    django_user_model.objects.create_user(username="other", password=PASSWORD)
    for _ in range(5):
        sign_in(client, "wrong")
    assert sign_in(client, PASSWORD, username="other").status_code == 302
    client.post(reverse("logout"))
    assert sign_in(client, PASSWORD, REMOTE_ADDR="10.0.0.9").status_code == 302
    client.post(reverse("logout"))
    assert sign_in(client, PASSWORD, username=" MONO ").status_code == 429


def test_it_follows_the_limits_in_settings(client, owner, settings):
    settings.LOGIN_FAILURE_LIMIT = 2
    settings.LOGIN_FAILURE_WINDOW_MINUTES = 1
    sign_in(client, "wrong")
    sign_in(client, "wrong")
    response = sign_in(client, PASSWORD)
    assert response.status_code == 429
    assert "try again in 1 minute." in response.text


def test_it_lets_the_pair_try_again_once_failures_leave_the_window():
    for moment in (0, 60, 120, 180, 240):
        login_failure_record(address="1.2.3.4", username="mono", now=1000.0 + moment)
    assert login_wait_seconds(address="1.2.3.4", username="mono", now=1300.0) == 600.0
    assert login_wait_seconds(address="1.2.3.4", username="mono", now=1899.0) == 1.0
    assert login_wait_seconds(address="1.2.3.4", username="mono", now=1900.0) == 0.0
    login_failure_record(address="1.2.3.4", username="mono", now=1900.0)
    assert login_wait_seconds(address="1.2.3.4", username="mono", now=1900.0) == 60.0
    login_failures_clear(address="1.2.3.4", username="mono")
    assert login_wait_seconds(address="1.2.3.4", username="mono", now=1900.0) == 0.0


def test_it_words_the_wait_in_whole_minutes():
    assert wait_message(1) == "Too many attempts, try again in 1 minute."
    assert wait_message(61) == "Too many attempts, try again in 2 minutes."
    assert wait_message(900) == "Too many attempts, try again in 15 minutes."


def test_it_trusts_forwarded_addresses_only_behind_a_proxy(client, owner, settings):
    for number in range(5):
        sign_in(client, "wrong", headers={"X-Forwarded-For": f"10.0.0.{number}"})
    assert sign_in(client, PASSWORD).status_code == 429  # the header was ignored
    client.post(reverse("logout"))

    settings.LOGIN_BEHIND_PROXY = True
    forwarded = {"X-Forwarded-For": "203.0.113.5, 198.51.100.7"}
    for _ in range(5):
        sign_in(client, "wrong", headers=forwarded)
    assert sign_in(client, PASSWORD, headers=forwarded).status_code == 429
    other = {"X-Forwarded-For": "203.0.113.5, 198.51.100.8"}
    assert sign_in(client, PASSWORD, headers=other).status_code == 302


def test_it_sends_the_admins_sign_in_to_the_limited_one(client):
    response = client.get("/admin/login/?next=/admin/")
    assert response.status_code == 302
    assert response.url == f"{reverse('login')}?next=/admin/"


def test_it_signs_out_only_by_post(admin_client):
    assert admin_client.get(reverse("logout")).status_code == 405
    response = admin_client.post(reverse("logout"))
    assert response.status_code == 302 and response.url == reverse("login")
    assert not signed_in(admin_client)
