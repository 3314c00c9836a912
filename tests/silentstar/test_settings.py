import re
import secrets
import sqlite3
import stat

import pytest
from django.conf import settings
from django.core.management import call_command
from django.urls import reverse

from tests.conftest import SQLITE_ONLY

# The tests marked store_free start manage.py with settings of their own: a check reads the
# settings and never a store, and the WAL test reads SQLite stores migrated apart from the suite's.
PRODUCTION = {
    "SILENTSTAR_DEBUG": "false",
    "SILENTSTAR_SECRET_KEY": secrets.token_urlsafe(50),
    "SILENTSTAR_ALLOWED_HOSTS": "silentstar.example",
    "SILENTSTAR_HTTPS": "true",
}


@pytest.mark.store_free
def test_it_passes_the_deployment_checks_with_production_values(manage):
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=PRODUCTION)
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


@pytest.mark.store_free
def test_it_warns_about_development_values_in_the_deployment_checks(manage):
    result = manage(
        "check", "--deploy", "--fail-level", "WARNING", env={"SILENTSTAR_DEBUG": "true"}
    )
    assert result.returncode != 0
    assert "security.W018" in result.stderr  # DEBUG on


@pytest.mark.store_free
def test_it_starts_with_nothing_set_debug_off_and_a_key_kept_in_the_data_folder(manage, tmp_path):
    nothing_set = dict.fromkeys(
        (
            "SILENTSTAR_DEBUG",
            "SILENTSTAR_SECRET_KEY",
            "SILENTSTAR_ALLOWED_HOSTS",
            "SILENTSTAR_HTTPS",
        )
    )
    checked = manage("check", env=nothing_set)
    assert checked.returncode == 0, checked.stderr  # debug off over plain HTTP, on loopback
    kept = tmp_path / "data" / "secret_key"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600

    show = "from django.conf import settings; print(settings.DEBUG, settings.SECRET_KEY)"
    shown = manage("shell", "--no-imports", "-c", show, env=nothing_set)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == ["False", kept.read_text().strip()]


@pytest.mark.store_free
def test_it_names_the_variable_when_a_value_is_bad(manage):
    result = manage("check", env={"SILENTSTAR_Q_WORKERS": "two"})
    assert result.returncode != 0
    assert "SILENTSTAR_Q_WORKERS must be a whole number, got 'two'" in result.stderr


@pytest.mark.store_free
def test_it_lays_the_prices_and_cache_minimums_of_the_environment_over_the_tables(manage):
    show = (
        "from django.conf import settings; p = settings.MODEL_PRICES; "
        "print(p['claude-opus-5-5'].input, p['claude-opus-5-5'].output, p['claude-new-1'].input, "
        "settings.CACHE_MINIMUM_TOKENS['claude-opus-5-5'], "
        "settings.CACHE_MINIMUM_TOKENS['claude-sonnet-4-6'])"
    )
    new = (
        '{"input": 1, "output": 2, "cache_write_5m": 1.25, "cache_write_1h": 2, "cache_read": 0.1}'
    )
    env = {
        "SILENTSTAR_MODEL_PRICES": f'{{"claude-opus-5-5": {{"input": 3}}, "claude-new-1": {new}}}',
        "SILENTSTAR_CACHE_MINIMUM_TOKENS": '{"claude-opus-5-5": 1024}',
    }
    result = manage("shell", "--no-imports", "-c", show, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["3.0", "20", "1.0", "1024", "1024"]


@pytest.mark.store_free
@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("SILENTSTAR_MODEL_PRICES", "{opus: 4}", "SILENTSTAR_MODEL_PRICES: not JSON"),
        (
            "SILENTSTAR_MODEL_PRICES",
            '{"claude-opus-5-5": {"input": -4}}',
            "SILENTSTAR_MODEL_PRICES: 'claude-opus-5-5''s input must be a number",
        ),
        (
            "SILENTSTAR_CACHE_MINIMUM_TOKENS",
            '{"claude-opus-5-5": "lots"}',
            "SILENTSTAR_CACHE_MINIMUM_TOKENS: the cache minimum of 'claude-opus-5-5' must be",
        ),
    ],
)
def test_it_names_the_variable_when_prices_or_minimums_are_bad(manage, name, value, said):
    result = manage("check", env={name: value})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and said in result.stderr


@pytest.mark.store_free
def test_it_refuses_a_task_retry_that_is_not_longer_than_the_timeout(manage):
    result = manage("check", env={"SILENTSTAR_Q_TIMEOUT": "300", "SILENTSTAR_Q_RETRY": "300"})
    assert result.returncode != 0
    assert (
        "SILENTSTAR_Q_RETRY (300) must be larger than SILENTSTAR_Q_TIMEOUT (300)" in result.stderr
    )


@pytest.mark.store_free
def test_it_refuses_a_task_timeout_shorter_than_claudes_attempts(manage):
    result = manage("check", env={"SILENTSTAR_Q_TIMEOUT": "500", "SILENTSTAR_Q_RETRY": "560"})
    assert result.returncode != 0
    assert (
        "SILENTSTAR_Q_TIMEOUT (500) must be longer than SILENTSTAR_CLAUDE_TIMEOUT" in result.stderr
    )


@pytest.mark.store_free
def test_it_refuses_an_unknown_time_zone(manage):
    result = manage("check", env={"SILENTSTAR_TIME_ZONE": "Europe/Atlantis"})
    assert result.returncode != 0
    assert "SILENTSTAR_TIME_ZONE must be an IANA time zone" in result.stderr


@pytest.mark.store_free
def test_it_refuses_a_push_contact_that_is_no_address(manage):
    result = manage("check", env={"SILENTSTAR_PUSH_CONTACT": "owner@example.org"})
    assert result.returncode != 0
    assert "SILENTSTAR_PUSH_CONTACT must be a mailto: or https: address" in result.stderr


@pytest.mark.store_free
def test_it_bounds_background_tasks():
    cluster = settings.Q_CLUSTER
    assert cluster["timeout"] < cluster["retry"]
    assert cluster["max_attempts"] >= 1
    assert cluster["catch_up"] is False
    assert cluster["poll"] <= 0.1


@pytest.mark.store_free
def test_it_uses_the_orm_broker_by_default_and_redis_when_configured(manage):
    show = (
        "from django.conf import settings; "
        "print(settings.Q_CLUSTER.get('orm'), settings.Q_CLUSTER.get('redis'))"
    )
    assert manage("shell", "--no-imports", "-c", show, env={"REDIS_URL": ""}).stdout.split() == [
        "default",
        "None",
    ]
    with_redis = manage(
        "shell", "--no-imports", "-c", show, env={"REDIS_URL": "redis://127.0.0.1:6399/0"}
    )
    assert with_redis.stdout.split() == ["None", "redis://127.0.0.1:6399/0"]


@pytest.mark.store_free
def test_it_keeps_the_sqlite_stores_in_wal_mode_with_immediate_transactions(
    manage, tmp_path, sqlite_stores_copy
):
    """Each alias migrates into its own file, in WAL mode, with the event log's triggers (the
    stores ``sqlite_stores_migrated`` had ``manage.py`` migrate with nothing but the defaults)."""
    data = sqlite_stores_copy(tmp_path / "data")

    def objects(name):
        with sqlite3.connect(data / name) as db:
            assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
            return {row[0] for row in db.execute("SELECT name FROM sqlite_master")}

    events = objects("events.sqlite3")
    assert {"heart_event", "heart_eventtag", "heart_turn", "heart_event_no_update"} <= events
    assert "gem_fragment" not in events
    assert "heart_contextsnapshot" in objects("snapshots.sqlite3")
    assert "mirror_summary" in objects("summaries.sqlite3")
    gem = objects("silentstar.sqlite3")
    assert {"gem_fragment", "gem_workingmemory", "django_q_ormq", "auth_user"} <= gem
    assert "heart_event" not in gem

    show = (
        "from django.db import connections; "
        "print(connections['events'].settings_dict['OPTIONS']['transaction_mode'])"
    )
    assert manage("shell", "--no-imports", "-c", show, env=SQLITE_ONLY).stdout.strip() == (
        "IMMEDIATE"
    )


@pytest.mark.django_db(databases="__all__")
def test_it_has_migrations_for_every_model_change():
    call_command("makemigrations", check=True, dry_run=True, verbosity=0)


POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'; "
    "form-action 'self'"
)


@pytest.mark.django_db(databases="__all__")
def test_it_sends_a_content_security_policy(client):
    response = client.get(reverse("login"))
    assert response.status_code == 200
    assert response.headers["Content-Security-Policy"] == POLICY


@pytest.mark.django_db(databases="__all__")
def test_it_gives_the_chat_pages_inline_style_the_policys_nonce(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser(username="owner"))
    response = client.get(reverse("heart-chat"))
    assert response.status_code == 200
    policy = response.headers["Content-Security-Policy"]
    nonce = re.search(r"style-src 'self' 'nonce-([\w-]+)';", policy)[1]
    assert policy == POLICY.replace("style-src 'self'", f"style-src 'self' 'nonce-{nonce}'")
    html = response.content.decode()
    assert html.count(f'<style nonce="{nonce}">') == 1
    assert " style=" not in html  # style attributes are refused


LOCAL = {
    "ANTHROPIC_API_KEY": "",
    "SILENTSTAR_LOCAL_BASE_URL": "http://localhost:8080",
    "SILENTSTAR_LOCAL_MODEL": "qwen3:8b",
    "SILENTSTAR_LOCAL_COMPASS_MODEL": "llama-3.3-70b-instruct",
}


@pytest.mark.store_free
def test_a_local_server_without_a_key_names_the_model_of_each_role(manage):
    show = (
        "from django.conf import settings as s; print(s.LOCAL_SERVER, s.COMPANION_OFFLINE, "
        "s.HEART_MODEL, s.MIRROR_CLEAN_MODEL, s.MIRROR_SUMMARISE_MODEL, s.COMPASS_MODEL, "
        "s.LOOM_MODEL, s.LOCAL_CACHE_MARKERS)"
    )
    shown = manage("shell", "--no-imports", "-c", show, env=LOCAL)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == [
        "True",
        "False",
        "qwen3:8b",
        "qwen3:8b",
        "qwen3:8b",
        "llama-3.3-70b-instruct",
        "qwen3:8b",
        "False",
    ]


@pytest.mark.store_free
def test_a_local_server_with_a_role_left_without_a_model_is_refused(manage):
    checked = manage("check", env={**LOCAL, "SILENTSTAR_LOCAL_MODEL": ""})
    assert checked.returncode != 0
    assert "SILENTSTAR_LOCAL_BASE_URL is set, so SILENTSTAR_LOCAL_MODEL must name" in checked.stderr
    assert "SILENTSTAR_LOCAL_HEART_MODEL, SILENTSTAR_LOCAL_MIRROR_MODEL" in checked.stderr


@pytest.mark.store_free
def test_an_api_key_wins_over_a_local_server(manage):
    show = "from django.conf import settings as s; print(s.LOCAL_SERVER, s.HEART_MODEL)"
    shown = manage("shell", "--no-imports", "-c", show, env={**LOCAL, "ANTHROPIC_API_KEY": "k"})
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == ["False", "claude-opus-5-5"]
