"""What an error shows (silentstar/errors.py): the project's short pages, and never a password
of a connection string, whatever debug says."""

import pytest
from django.contrib.auth.decorators import login_not_required
from django.test import Client
from django.urls import path

pytestmark = pytest.mark.django_db(databases="__all__")

DATABASE_URL = "postgres://silentstar:hunter2secret@db.example:5432/silentstar"
REDIS_URL = "redis://:redis4secret@cache.example:6379/0"
PASSWORDS = ("hunter2secret", "redis4secret")
# What the development server puts in every request's META: the whole process environment.
ENVIRONMENT = {"DATABASE_URL": DATABASE_URL, "REDIS_URL": REDIS_URL, "SENTRY_DSN": REDIS_URL}


@pytest.fixture
def secrets_in_settings(settings):
    settings.REDIS_URL = REDIS_URL
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "redis": REDIS_URL}


def shows_no_password(response) -> bool:
    return not any(password in response.text for password in PASSWORDS)


@pytest.mark.parametrize("debug", [False, True], ids=["debug-off", "debug-on"])
def test_it_answers_a_foreign_host_with_the_short_page_and_no_password(
    client, settings, secrets_in_settings, debug
):
    settings.DEBUG = debug
    response = client.get("/", HTTP_HOST="evil.example", **ENVIRONMENT)
    assert response.status_code == 400
    assert "This site does not answer to the name in this address." in response.text
    assert shows_no_password(response)


def test_it_shows_the_short_page_for_a_failing_view_with_debug_off(settings, secrets_in_settings):
    settings.ROOT_URLCONF = __name__
    response = Client(raise_request_exception=False).get("/failing/", **ENVIRONMENT)
    assert response.status_code == 500
    assert "Something went wrong on the server" in response.text
    assert shows_no_password(response)


def test_its_debug_page_masks_every_connection_string(settings, secrets_in_settings):
    settings.ROOT_URLCONF = __name__
    settings.DEBUG = True
    response = Client(raise_request_exception=False).get("/failing/", **ENVIRONMENT)
    assert response.status_code == 500
    assert "the view failed after reading" in response.text  # Django's debug page, masked
    assert "SENTRY_DSN" in response.text and "Q_CLUSTER" in response.text
    assert shows_no_password(response)


@pytest.mark.parametrize("debug", [False, True], ids=["debug-off", "debug-on"])
def test_it_answers_a_missing_static_file_with_the_short_page(client, settings, debug):
    settings.DEBUG = debug
    response = client.get("/static/css/no-such-file.css")
    assert response.status_code == 404
    assert "There is no page at this address." in response.text
    assert "URLconf" not in response.text  # Django's debug page lists every URL pattern


# Far from the passwords' lines above: the debug page shows the source around a failing line.
def failing(request):
    url = DATABASE_URL  # a variable of the failing frame, shown on the debug page
    raise RuntimeError(f"the view failed after reading {len(url)} characters")


urlpatterns = [path("failing/", login_not_required(failing))]
