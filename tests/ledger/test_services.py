"""The ledger's one write: a row for every finished call, through the real client and SDK."""

import sqlite3
import threading
import time

import pytest
from django.conf import settings as django_settings
from django.db import connections
from django.utils import timezone

from bench.fakeapi import FakeError, FakeReply
from ledger import services
from ledger.models import ModelCall
from silentstar.claude import ClaudeError, complete
from tests.conftest import event_log_triggers_lifted

pytestmark = pytest.mark.django_db(databases="__all__")

SYSTEM = [{"type": "text", "text": "You are the companion."}]
MESSAGES = [{"role": "user", "content": "<luna><say>hello</say></luna>"}]
SQLITE = all(db["ENGINE"].endswith("sqlite3") for db in django_settings.DATABASES.values())
LOCK_HELD = 1.0  # seconds another connection holds the events store's write lock


def never_offline() -> str:
    raise AssertionError("the offline answer was asked for while online")


def call(component: str = "heart", **kwargs):
    return complete(
        component=component,
        offline_answer=kwargs.pop("offline_answer", never_offline),
        system=SYSTEM,
        messages=MESSAGES,
        **kwargs,
    )


def test_it_writes_a_row_with_the_usage_the_api_reported(fake_api, settings):
    settings.HEART_MODEL = "claude-sonnet-5-5"
    fake_api.push(
        FakeReply(
            "<say>hi</say>",
            input_tokens=120,
            output_tokens=7,
            cache_read_input_tokens=900,
            cache_creation_input_tokens=300,
            ephemeral_1h_input_tokens=200,
        )
    )
    before = timezone.now()

    call("mirror-compress")

    row = ModelCall.objects.get()
    assert (row.component, row.model, row.offline) == (
        "mirror-compress",
        "claude-sonnet-5-5",
        False,
    )
    assert (row.input_tokens, row.output_tokens, row.cache_read_tokens) == (120, 7, 900)
    assert (row.cache_write_5m_tokens, row.cache_write_1h_tokens) == (100, 200)
    assert before <= row.ts <= timezone.now()


def test_it_writes_one_row_for_a_call_retried_and_none_for_a_call_that_failed(
    fake_api, monkeypatch
):
    monkeypatch.setattr("silentstar.claude.sleep", lambda seconds: None)
    fake_api.push(FakeError(529), FakeReply(input_tokens=10, output_tokens=2), FakeError(400))

    call()
    with pytest.raises(ClaudeError):
        call()

    assert ModelCall.objects.count() == 1


def test_it_writes_an_offline_call_as_offline(settings):
    settings.COMPANION_OFFLINE = True

    reply = call(offline_answer=lambda: "<say>I am offline</say>")

    row = ModelCall.objects.get()
    assert (row.component, row.model, row.offline) == ("heart", "offline", True)
    assert (row.input_tokens, row.output_tokens) == (
        reply.usage.input_tokens,
        reply.usage.output_tokens,
    )
    assert row.cache_read_tokens == row.cache_write_5m_tokens == row.cache_write_1h_tokens == 0


@pytest.fixture(scope="class")
def triggers_lifted_for_the_class(django_db_setup, django_db_blocker):
    """These tests commit (another connection holds the lock): the event log's triggers are
    lifted around the class so its tables can be emptied after each test."""
    with event_log_triggers_lifted(django_db_blocker):
        yield


@pytest.fixture
def events_store_locked():
    """Start holding the events store's write lock from another connection for ``seconds``, as
    a long Mirror run or import would; our connection waits only 100 ms at a time."""
    holders = []

    def lock(seconds: float) -> None:
        locked = threading.Event()

        def hold():
            other = sqlite3.connect(
                connections["events"].settings_dict["NAME"], isolation_level=None
            )
            try:
                other.execute("BEGIN IMMEDIATE")
                locked.set()
                time.sleep(seconds)
                other.execute("COMMIT")
            finally:
                other.close()

        holder = threading.Thread(target=hold)
        holder.start()
        holders.append(holder)
        assert locked.wait(timeout=10)

    with connections["events"].cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout = 100")
    yield lock
    for holder in holders:
        holder.join()
    connections["events"].close()  # the next connection has the configured timeout again


@pytest.mark.skipif(not SQLITE, reason="SQLite's write lock and busy timeout")
@pytest.mark.usefixtures("triggers_lifted_for_the_class")
class TestALockedEventsStore:
    @pytest.mark.django_db(databases="__all__", transaction=True, serialized_rollback=True)
    def test_the_row_waits_out_the_lock(self, fake_api, events_store_locked):
        fake_api.push(FakeReply("<say>here</say>", input_tokens=50, output_tokens=5))
        events_store_locked(LOCK_HELD)
        began = time.monotonic()

        reply = call()

        assert reply.text == "<say>here</say>"
        assert time.monotonic() - began >= LOCK_HELD * 0.5
        assert ModelCall.objects.get().input_tokens == 50

    @pytest.mark.django_db(databases="__all__", transaction=True, serialized_rollback=True)
    def test_a_lock_held_past_its_patience_leaves_the_row_in_the_log_not_the_callers_reply(
        self, fake_api, events_store_locked, monkeypatch, caplog
    ):
        monkeypatch.setattr(services, "LOCK_PATIENCE", 0.2)
        fake_api.push(FakeReply("<say>here</say>", input_tokens=50, output_tokens=5))
        events_store_locked(LOCK_HELD)

        reply = call()

        assert reply.text == "<say>here</say>"
        [logged] = [record for record in caplog.records if record.name == "ledger.services"]
        assert "was not written to the ledger" in logged.getMessage()
        assert "'input_tokens': 50" in logged.getMessage()
        assert not ModelCall.objects.exists()
