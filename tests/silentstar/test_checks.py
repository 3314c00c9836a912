"""The project's system checks (silentstar/checks.py)."""

import errno
import secrets
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.core.checks import Error, Tags, run_checks
from django.db import connections

from silentstar import disks
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


# --- A full disk or read-only data (disk_check) ---------------------------------------------------

DISK_CHECKS = ("silentstar.E020", "silentstar.E021", "silentstar.W020", "silentstar.W021")


def disk_problems() -> list:
    return [message for message in run_checks() if message.id in DISK_CHECKS]


@pytest.fixture
def data_folder(settings, tmp_path):
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    return settings.DATA_DIR


@pytest.mark.django_db(databases="__all__")
def test_it_warns_when_the_disk_holding_the_data_folder_is_nearly_full(
    data_folder, settings, monkeypatch
):
    settings.DISK_FREE_MIN_MB = 0
    assert disk_problems() == []  # the folder and the stores take writes
    assert list(data_folder.iterdir()) == []  # and the check leaves nothing behind
    monkeypatch.setattr(disks.shutil, "disk_usage", lambda folder: SimpleNamespace(free=9 * 2**20))
    settings.DISK_FREE_MIN_MB = 100
    (warning,) = disk_problems()
    assert (warning.id, warning.is_serious()) == ("silentstar.W020", False)
    assert warning.msg == (
        f"The disk holding the data folder {data_folder} has only 9 MB free: once it is full, "
        "messages are refused until space is freed."
    )
    assert "SILENTSTAR_DISK_FREE_MIN_MB" in warning.hint


@pytest.mark.django_db(databases="__all__")
def test_it_says_the_disk_holding_the_data_folder_is_full(data_folder, monkeypatch):
    monkeypatch.setattr(disks.shutil, "disk_usage", lambda folder: SimpleNamespace(free=4096))

    (warning,) = disk_problems()

    assert warning.id == "silentstar.W021"
    assert warning.msg == (
        f"The disk holding the data folder {data_folder} is full: every message is refused "
        "until space is freed."
    )


@pytest.mark.django_db(databases="__all__")
def test_it_refuses_a_data_folder_that_takes_no_writes(data_folder, monkeypatch):
    def refused(**kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(disks.tempfile, "mkstemp", refused)
    (error,) = disk_problems()
    assert (error.id, error.is_serious()) == ("silentstar.E020", True)
    assert error.msg == (
        f"The data folder {data_folder} cannot be written (Read-only file system): Silentstar "
        "could store nothing, and every message would be refused."
    )


@pytest.mark.django_db(databases="__all__")
def test_it_refuses_a_sqlite_store_that_takes_no_writes(data_folder, settings, monkeypatch):
    if connections["events"].vendor != "sqlite":
        pytest.skip("SQLite's own: a PostgreSQL store is asked by check --database")
    settings.DISK_FREE_MIN_MB = 0
    opened = disks._sqlite_open

    def read_only(path):
        connection = opened(path)
        if path == Path(connections["events"].settings_dict["NAME"]):
            connection.execute("PRAGMA query_only = ON")
        return connection

    monkeypatch.setattr(disks, "_sqlite_open", read_only)
    (error,) = disk_problems()
    assert error.id == "silentstar.E021"
    assert error.msg == (
        "The events store cannot take a write (attempt to write a readonly database): every "
        "message would be refused."
    )
