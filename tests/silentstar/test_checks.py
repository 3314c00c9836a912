"""The project's system checks (silentstar/checks.py)."""

import secrets

import pytest
from django.core.checks import Error, Tags, run_checks

from silentstar.checks import loopback

PLAIN_HTTP = "silentstar.E001"


def plain_http_errors() -> list[Error]:
    return [message for message in run_checks(tags=[Tags.security]) if message.id == PLAIN_HTTP]


def test_it_refuses_debug_off_over_plain_http(settings):
    settings.DEBUG, settings.HTTPS, settings.ALLOW_PLAIN_HTTP = False, False, False
    (error,) = plain_http_errors()
    assert error.is_serious()
    assert "SILENTSTAR_HTTPS" in error.msg and "SILENTSTAR_ALLOW_PLAIN_HTTP" in error.hint


def test_it_passes_with_https_on(settings):
    settings.DEBUG, settings.HTTPS, settings.ALLOW_PLAIN_HTTP = False, True, False
    assert plain_http_errors() == []


def test_it_passes_when_plain_http_is_allowed(settings):
    settings.DEBUG, settings.HTTPS, settings.ALLOW_PLAIN_HTTP = False, False, True
    assert plain_http_errors() == []


def test_it_passes_with_debug_on(settings):
    settings.DEBUG, settings.HTTPS, settings.ALLOW_PLAIN_HTTP = True, False, False
    assert plain_http_errors() == []


def test_it_passes_debug_off_over_plain_http_when_only_this_machine_is_allowed(settings):
    settings.DEBUG, settings.HTTPS, settings.ALLOW_PLAIN_HTTP = False, False, False
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]", ".localhost", "app.localhost"]
    assert plain_http_errors() == []


def test_it_names_the_hosts_beyond_this_machine_when_it_refuses(settings):
    settings.DEBUG, settings.HTTPS, settings.ALLOW_PLAIN_HTTP = False, False, False
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1", "192.168.1.20", "*"]
    (error,) = plain_http_errors()
    assert "beyond this machine (192.168.1.20, *): sign-in passwords" in error.msg


@pytest.mark.parametrize(
    ("host", "only_here"),
    [
        ("localhost", True),
        ("LOCALHOST.", True),
        ("chat.localhost", True),
        (".localhost", True),
        ("127.0.0.1", True),
        ("127.3.2.1", True),
        ("[::1]", True),
        ("localhost.example", False),
        ("0.0.0.0", False),
        ("192.168.1.20", False),
        ("[::]", False),
        ("*", False),
        (".example.org", False),
    ],
)
def test_it_tells_this_machines_own_names_from_others(host, only_here):
    assert loopback(host) is only_here


@pytest.mark.store_free
def test_manage_check_refuses_debug_off_over_plain_http(manage):
    production_over_http = {
        "SILENTSTAR_DEBUG": "false",
        "SILENTSTAR_SECRET_KEY": secrets.token_urlsafe(50),
        "SILENTSTAR_ALLOWED_HOSTS": "silentstar.example",
        "SILENTSTAR_HTTPS": "false",
        "SILENTSTAR_ALLOW_PLAIN_HTTP": None,
    }
    refused = manage("check", env=production_over_http)
    assert refused.returncode != 0
    assert PLAIN_HTTP in refused.stderr

    allowed = manage("check", env={**production_over_http, "SILENTSTAR_ALLOW_PLAIN_HTTP": "true"})
    assert allowed.returncode == 0, allowed.stderr
