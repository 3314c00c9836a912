import pytest
from django.core.exceptions import ImproperlyConfigured

from silentstar.env import (
    database_from_url,
    env_bool,
    env_float,
    env_int,
    env_list,
    env_str,
    env_time_zone,
)


def test_it_uses_the_default_when_unset(monkeypatch):
    monkeypatch.delenv("SILENTSTAR_X", raising=False)
    assert env_str("SILENTSTAR_X", "d") == "d"
    assert env_int("SILENTSTAR_X", 3) == 3
    assert env_bool("SILENTSTAR_X", True) is True
    assert env_float("SILENTSTAR_X", 0.5) == 0.5
    assert env_list("SILENTSTAR_X", ["a"]) == ["a"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1", True), ("true", True), ("YES", True), ("on", True), ("0", False), ("off", False)],
)
def test_it_reads_booleans(monkeypatch, raw, expected):
    monkeypatch.setenv("SILENTSTAR_X", raw)
    assert env_bool("SILENTSTAR_X", not expected) is expected


def test_it_refuses_a_word_that_is_not_a_boolean(monkeypatch):
    monkeypatch.setenv("SILENTSTAR_X", "maybe")
    with pytest.raises(ImproperlyConfigured, match=r"SILENTSTAR_X must be one of .* got 'maybe'"):
        env_bool("SILENTSTAR_X", False)


def test_it_refuses_an_integer_that_is_not_one(monkeypatch):
    monkeypatch.setenv("SILENTSTAR_X", "12a")
    with pytest.raises(
        ImproperlyConfigured, match="SILENTSTAR_X must be a whole number, got '12a'"
    ):
        env_int("SILENTSTAR_X", 1)


def test_it_refuses_an_integer_below_its_minimum(monkeypatch):
    monkeypatch.setenv("SILENTSTAR_X", "-1")
    with pytest.raises(ImproperlyConfigured, match="SILENTSTAR_X must be at least 0, got -1"):
        env_int("SILENTSTAR_X", 1, minimum=0)


def test_it_refuses_a_number_that_is_not_one(monkeypatch):
    monkeypatch.setenv("SILENTSTAR_X", "fast")
    with pytest.raises(ImproperlyConfigured, match="SILENTSTAR_X must be a number"):
        env_float("SILENTSTAR_X", 0.1)


def test_it_splits_lists_on_commas(monkeypatch):
    monkeypatch.setenv("SILENTSTAR_X", " a.example , b.example,,")
    assert env_list("SILENTSTAR_X", []) == ["a.example", "b.example"]


def test_it_accepts_only_real_time_zones(monkeypatch):
    monkeypatch.setenv("SILENTSTAR_TZ", "Europe/London")
    assert env_time_zone("SILENTSTAR_TZ", "UTC") == "Europe/London"
    monkeypatch.setenv("SILENTSTAR_TZ", "Mars/Olympus")
    with pytest.raises(ImproperlyConfigured, match=r"IANA time zone .* 'Mars/Olympus'"):
        env_time_zone("SILENTSTAR_TZ", "UTC")


def test_it_turns_a_postgres_url_into_a_database_entry():
    entry = database_from_url(
        "DATABASE_URL", "postgres://me:p%40ss@db.local:6543/gem?sslmode=require"
    )
    assert entry == {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "gem",
        "USER": "me",
        "PASSWORD": "p@ss",
        "HOST": "db.local",
        "PORT": "6543",
        "OPTIONS": {"sslmode": "require"},
    }


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://me@host/db", "must be a postgres:// URL"),
        ("postgres://me@host", "must name a database"),
        ("postgres://me@host:port/db", "port that is not a number"),
    ],
)
def test_it_refuses_database_urls_it_cannot_use(url, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        database_from_url("DATABASE_URL", url)
