"""A full turn of the Heart through the real SDK against the local fake Messages API."""

import itertools
import math
import sqlite3
import threading
import time
from contextlib import ExitStack
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import connections
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from bench.fakeapi import FakeError, FakeReply
from events.models import Event, EventTag, Turn
from gem.models import Fragment, FragmentEdge, WakeText, WorkingMemory
from gem.selectors import working_memory_scores
from gem.state import PENDING_RECALL, WORKING_MEMORY_FILL, state_get, turn_counter_current
from heart import services
from heart.inspect import turn_inspection
from heart.management.commands.inspect import inspection_text
from heart.models import ContextSnapshot
from heart.services import (
    TurnOrderError,
    snapshots_prune,
    turn_claim_next,
    turn_retry,
    turn_submit,
    turns_recover,
)
from heart.tasks import run_turns_task
from mirror.turns import open_from
from silentstar import claude
from tests.conftest import event_log_triggers_lifted

pytestmark = pytest.mark.django_db(databases="__all__")

MESSAGE = "<luna><plan>call the pharmacy friday at 5pm</plan> and how are you?</luna>"


def submit(text=MESSAGE, **kwargs):
    return turn_submit(text=text, actor="luna", enqueue=False, **kwargs)


def test_it_stores_the_message_and_its_plan_before_the_turn_runs():
    turn = submit()
    event = Event.objects.get(pk=turn.event_id)
    assert event.content == MESSAGE
    assert set(EventTag.objects.filter(event=event).values_list("tag", flat=True)) == {
        "luna",
        "plan",
    }
    assert turn.status == "queued" and turn.number == 1 == turn_counter_current()
    plan = WorkingMemory.objects.get(type="plan")
    assert plan.due is not None and plan.event_id == event.pk


def test_it_enqueues_the_turn_for_the_worker_after_the_request_commits(
    django_capture_on_commit_callbacks, fake_api
):
    fake_api.push(FakeReply("<say>hi luna</say>"))
    with django_capture_on_commit_callbacks(execute=True, using="events"):
        turn = turn_submit(text="<luna>hi</luna>", actor="luna")
    turn.refresh_from_db()
    assert turn.status == "done"
    assert turn.partial_text == "hi luna"


def test_it_answers_a_turn_and_records_everything(fake_api):
    fake_api.push(
        FakeReply(
            "<claude><say>I'm **here**.</say><do>leans in</do>"
            "<feeling>quietly proud</feeling> recall(fairy)</claude>",
            input_tokens=1200,
            output_tokens=40,
            cache_read_input_tokens=900,
            cache_creation_input_tokens=300,
        )
    )
    turn = submit()
    assert run_turns_task(turn.pk) == [turn.pk]
    turn.refresh_from_db()
    assert turn.status == "done" and turn.attempts == 1 and turn.error == ""
    assert turn.partial_text == "I'm **here**.\nleans in"
    assert (turn.input_tokens, turn.output_tokens) == (1200, 40)
    assert (turn.cache_read_tokens, turn.cache_write_tokens) == (900, 300)
    assert turn.started_at <= turn.finished_at
    reply = turn.reply_event
    assert reply.actor == "claude" and "recall(fairy)" in reply.content
    assert WorkingMemory.objects.get(type="feeling").content == "quietly proud"
    assert state_get(PENDING_RECALL) == [{"key": "fairy", "deep": True}]
    snapshot = ContextSnapshot.objects.get(turn=turn.pk)
    assert MESSAGE in snapshot.assembled_user
    assert snapshot.token_counts["total"] > 0
    sent = fake_api.requests[-1]
    assert sent["system"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert "## Message" in sent["messages"][0]["content"][-1]["text"]


def test_it_delivers_recall_results_on_the_next_turn(fake_api):
    fairy = Fragment.objects.create(
        key="fairy", ambient="White softness.", inventory="Grey crocheted crewneck."
    )
    wardrobe = Fragment.objects.create(key="wardrobe", ambient="All the clothes.")
    FragmentEdge.objects.create(source=wardrobe, target=fairy, relation="domain-inventory")
    fake_api.push(FakeReply("<say>let me look</say> recall(fairy)"), FakeReply("<say>ok</say>"))
    run_turns_task(submit("<luna>what should I wear?</luna>").pk)
    first_user_text = fake_api.requests[0]["messages"][0]["content"][-1]["text"]
    assert "## Recalled" not in first_user_text
    run_turns_task(submit("<luna>well?</luna>").pk)
    second = "".join(b["text"] for b in fake_api.requests[1]["messages"][0]["content"])
    assert "### fairy (inventory)\nGrey crocheted crewneck." in second
    assert "### wardrobe (ambient)\nAll the clothes." in second
    assert state_get(PENDING_RECALL) == []


def stream_watched(monkeypatch, *, before=None, after=None):
    """Make the turn's Claude call run ``before(text)`` and ``after(text)`` around each save of the
    streamed text; return the real call, to put back."""
    real_complete = claude.complete

    def complete_watched(**kwargs):
        def on_text(text_so_far):
            if before is not None:
                before(text_so_far)
            kwargs["on_text"](text_so_far)
            if after is not None:
                after(text_so_far)

        return real_complete(**{**kwargs, "on_text": on_text})

    monkeypatch.setattr(services.claude, "complete", complete_watched)
    return real_complete


def test_it_makes_the_reply_visible_while_it_streams(fake_api, monkeypatch):
    """What the page polls (the turn's partial text) grows while the stream is still open."""
    monkeypatch.setattr(services, "PARTIAL_SAVE_INTERVAL", 0)
    fake_api.push(FakeReply("<say>one two three four five six</say>", chunks=6, delay=0.01))
    turn = submit()
    seen = []
    stream_watched(
        monkeypatch, after=lambda _: seen.append(Turn.objects.get(pk=turn.pk).partial_text)
    )
    run_turns_task(turn.pk)
    shown = [text for before, text in itertools.pairwise(["", *seen]) if text != before]
    assert len(shown) >= 3
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(shown))
    assert shown[0] != "one two three four five six"
    turn.refresh_from_db()
    assert turn.first_token_at is not None
    assert turn.partial_text == "one two three four five six"


def test_it_writes_a_heartbeat_while_the_reply_streams(fake_api, monkeypatch):
    """The worker's sign of life, which recovery reads, moves on with each save of the stream."""
    monkeypatch.setattr(services, "PARTIAL_SAVE_INTERVAL", 0)
    fake_api.push(FakeReply("<say>one two three four five six</say>", chunks=6, delay=0.05))
    turn = submit()
    seen = []
    stream_watched(
        monkeypatch,
        after=lambda _: seen.append(
            Turn.objects.values_list("started_at", "heartbeat_at").get(pk=turn.pk)
        ),
    )
    run_turns_task(turn.pk)
    started = seen[0][0]
    beats = [beat for _, beat in seen]
    assert len(beats) >= 4
    assert started < beats[0]
    assert all(earlier < later for earlier, later in itertools.pairwise(beats))


def test_an_attempt_that_lost_its_turn_logs_no_reply(fake_api, monkeypatch):
    """A worker taken for gone may still be streaming: once its turn has been claimed again, it
    writes nothing more, and the attempt that took the turn over gives the only reply."""
    monkeypatch.setattr(services, "PARTIAL_SAVE_INTERVAL", 0)
    fake_api.push(FakeReply("<say>the first answer</say>", chunks=4, delay=0.02))
    turn = submit()

    def claimed_again(text_so_far):
        if text_so_far:  # recovered and claimed by another worker, mid-stream
            Turn.objects.filter(pk=turn.pk).update(attempts=F("attempts") + 1)

    real_complete = stream_watched(monkeypatch, before=claimed_again)
    assert run_turns_task(turn.pk) == [turn.pk]
    turn.refresh_from_db()
    assert (turn.status, turn.attempts, turn.partial_text) == ("running", 2, "")
    assert Event.objects.count() == 1 and not ContextSnapshot.objects.exists()

    monkeypatch.setattr(services.claude, "complete", real_complete)
    fake_api.push(FakeReply("<say>the answer</say>"))
    Turn.objects.filter(pk=turn.pk).update(status="queued")
    run_turns_task(turn.pk)
    turn.refresh_from_db()
    assert (turn.status, turn.partial_text) == ("done", "the answer")
    assert Event.objects.count() == 2


def test_a_stop_while_the_reply_streams_puts_the_turn_back_in_the_queue(fake_api, monkeypatch):
    """What SIGTERM does in a worker (heart.tasks): the reply in flight is dropped, the turn
    waits in the queue again, and the next attempt answers it once."""
    monkeypatch.setattr(services, "PARTIAL_SAVE_INTERVAL", 0)
    fake_api.push(
        FakeReply("<say>cut short</say>", chunks=4, delay=0.02), FakeReply("<say>whole</say>")
    )
    turn = submit()
    stop = services.WorkerStop()

    def stop_asked(text_so_far):
        if text_so_far:
            stop.request()

    real_complete = stream_watched(monkeypatch, after=stop_asked)
    with pytest.raises(services.TurnStopped):
        services.turn_run(turn=turn_claim_next(), stop=stop)
    turn.refresh_from_db()
    assert (turn.status, turn.reply_event_id, turn.partial_text) == ("queued", None, "")
    assert turn.heartbeat_at is None
    assert Event.objects.count() == 1

    monkeypatch.setattr(services.claude, "complete", real_complete)
    assert run_turns_task(turn.pk) == [turn.pk]
    turn.refresh_from_db()
    assert (turn.status, turn.partial_text) == ("done", "whole")
    assert Event.objects.count() == 2 and ContextSnapshot.objects.count() == 1


def test_while_the_api_is_tried_again_the_turn_says_why_and_stops_saying_it_once_answered(
    fake_api, monkeypatch
):
    fake_api.push(FakeError(529, "Overloaded"), FakeReply("<say>there you are</say>"))
    turn = submit()
    seen = []
    wait = services.claude._wait

    def watched(delay, alive):
        seen.append(Turn.objects.values_list("retrying", flat=True).get(pk=turn.pk))
        wait(delay, alive)

    monkeypatch.setattr(services.claude, "_wait", watched)
    run_turns_task(turn.pk)
    assert len(seen) == 1 and seen[0].startswith("Claude is overloaded (529")
    assert seen[0].endswith("(retry 1 of 4).")
    turn.refresh_from_db()
    assert (turn.status, turn.retrying) == ("done", "")


def test_it_rides_out_an_overloaded_api(fake_api):
    fake_api.push(FakeError(529, "Overloaded"), FakeReply("<say>there you are</say>"))
    turn = submit()
    run_turns_task(turn.pk)
    turn.refresh_from_db()
    assert (turn.status, turn.partial_text) == ("done", "there you are")
    assert len(fake_api.requests) == 2
    assert Event.objects.count() == 2


def test_it_fails_a_turn_that_times_out_and_retries_it_without_duplicates(fake_api, settings):
    settings.CLAUDE_TIMEOUT_SECONDS = 0.2
    settings.CLAUDE_MAX_RETRIES = 0
    fake_api.push(FakeReply("<say>too late</say>", chunks=2, delay=0.6))
    turn = submit()
    run_turns_task(turn.pk)
    turn.refresh_from_db()
    assert turn.status == "error" and "timed out" in turn.error
    assert Event.objects.count() == 1

    fake_api.push(FakeReply("<say>in time</say>"))
    turn_retry(turn_id=turn.pk, enqueue=False)
    run_turns_task(turn.pk)
    turn.refresh_from_db()
    assert (turn.status, turn.partial_text) == ("done", "in time")
    assert Event.objects.count() == 2
    assert list(Event.objects.values_list("actor", flat=True)) == ["luna", "claude"]


def test_it_survives_a_malformed_reply(fake_api):
    malformed = "<say>unclosed <do>waves</say> <feeling>half <narrate>the rain</narrate"
    fake_api.push(FakeReply(malformed))
    turn = submit()
    run_turns_task(turn.pk)
    turn.refresh_from_db()
    assert turn.status == "done"
    assert turn.reply_event.content == malformed
    assert turn.partial_text == "unclosed waves"


def test_it_shows_nothing_for_a_secret_reply(fake_api):
    fake_api.push(FakeReply("<thought>she needs quiet, say nothing</thought>"))
    turn = submit()
    run_turns_task(turn.pk)
    turn.refresh_from_db()
    assert turn.status == "done" and turn.partial_text == ""
    assert turn.reply_event.content == "<thought>she needs quiet, say nothing</thought>"


def test_it_keeps_a_readable_reason_and_retries_without_duplicating(fake_api):
    fake_api.push(FakeError(400, "messages: text content blocks must be non-empty"))
    turn = submit()
    run_turns_task(turn.pk)
    turn.refresh_from_db()
    assert turn.status == "error"
    assert "400" in turn.error and "must be non-empty" in turn.error
    assert Event.objects.count() == 1

    fake_api.push(FakeReply("<say>sorry, here now</say>"))
    turn_retry(turn_id=turn.pk, enqueue=False)
    run_turns_task(turn.pk)
    turn.refresh_from_db()
    assert (turn.status, turn.attempts, turn.partial_text) == ("done", 2, "sorry, here now")
    assert Event.objects.count() == 2


def test_it_does_not_call_claude_again_when_the_reply_was_already_logged(fake_api, monkeypatch):
    fake_api.push(FakeReply("<say>hello</say><thought>noted</thought>"))
    real_ingest = services.working_memory_ingest

    def crash_on_companion(**kwargs):
        if kwargs["side"] == "companion":
            raise RuntimeError("disk full")
        return real_ingest(**kwargs)

    monkeypatch.setattr(services, "working_memory_ingest", crash_on_companion)
    turn = submit()
    run_turns_task(turn.pk)
    turn.refresh_from_db()
    assert turn.status == "error" and "disk full" in turn.error

    monkeypatch.setattr(services, "working_memory_ingest", real_ingest)
    turn_retry(turn_id=turn.pk, enqueue=False)
    run_turns_task(turn.pk)
    turn.refresh_from_db()
    assert turn.status == "done"
    assert len(fake_api.requests) == 1
    assert Event.objects.count() == 2
    assert WorkingMemory.objects.filter(type="thought").count() == 1


def test_it_refuses_to_retry_a_turn_that_did_not_fail():
    turn = submit()
    with pytest.raises(ValueError, match="has not failed"):
        turn_retry(turn_id=turn.pk, enqueue=False)


def test_it_runs_one_turn_at_a_time_oldest_first(fake_api):
    first, second = submit("<luna>one</luna>"), submit("<luna>two</luna>")
    claimed = turn_claim_next()
    assert claimed.pk == first.pk
    assert turn_claim_next() is None  # the first is still running
    fake_api.push(FakeReply("<say>a</say>"), FakeReply("<say>b</say>"))
    Turn.objects.filter(pk=first.pk).update(status="queued")
    assert run_turns_task(second.pk) == [first.pk, second.pk]


def test_it_requeues_a_turn_left_running_by_a_dead_worker():
    turn = submit()
    Turn.objects.filter(pk=turn.pk).update(
        status="running", started_at=timezone.now() - timedelta(hours=1), attempts=1
    )
    assert turns_recover(stale_after=timedelta(minutes=20)) == [turn.pk]
    assert Turn.objects.get(pk=turn.pk).status == "queued"


def test_it_gives_up_on_a_turn_that_killed_the_worker_too_often(settings):
    turn = submit()
    Turn.objects.filter(pk=turn.pk).update(
        status="running",
        started_at=timezone.now() - timedelta(hours=1),
        attempts=settings.Q_CLUSTER["max_attempts"],
    )
    assert turns_recover(stale_after=timedelta(minutes=20)) == []
    turn.refresh_from_db()
    assert turn.status == "error" and "worker stopped" in turn.error


def test_it_sends_an_image_with_the_image_context(fake_api, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    png = (
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00"
        b"\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N"
        b"\x00\x00\x00\x00IEND\xaeB`\x82"
    )
    name = default_storage.save("images/dress.png", ContentFile(png))
    fake_api.push(FakeReply("<say>lovely</say><desc>dress: white, soft</desc>"))
    run_turns_task(submit("<luna>look</luna>", image=name).pk)
    sent = fake_api.requests[-1]
    images = [b for b in sent["messages"][0]["content"] if b["type"] == "image"]
    assert images[0]["source"]["media_type"] == "image/png"
    assert "# An image" in "".join(block["text"] for block in sent["system"])
    assert WorkingMemory.objects.get(type="desc").subject == "dress"


def test_it_refuses_a_turn_before_the_last_event():
    submit(at=timezone.now() + timedelta(days=2))
    with pytest.raises(TurnOrderError, match="would come before the last event"):
        submit(at=timezone.now() + timedelta(days=1))
    assert Event.objects.count() == 1


def test_it_runs_a_turn_at_a_given_moment_with_decay_in_that_time(fake_api):
    start = timezone.now() + timedelta(days=1)
    fake_api.push(FakeReply("<say>hm</say><feeling>restless</feeling>"), FakeReply("<say>x</say>"))
    run_turns_task(submit("<luna>hi</luna>", at=start).pk)
    assert Event.objects.order_by("pk").last().ts >= start
    # A minute short of 14 hours: each turn's clock runs on from its moment for as long as it
    # waited to be run, so on a busy machine the second can gain seconds on the first.
    run_turns_task(submit("<luna>later</luna>", at=start + timedelta(hours=14, minutes=-1)).pk)
    later_text = "".join(b["text"] for b in fake_api.requests[1]["messages"][0]["content"])
    assert "restless" not in later_text  # a feeling 14 h old (7 half-lives) has faded
    # the reply to "hi" was written just after it: under 14 hours before "later"
    assert "Last message 13 hours ago." in later_text


LOCK_HELD = 1.0  # seconds another connection holds the write lock, ten busy timeouts
SQLITE = all(db["ENGINE"].endswith("sqlite3") for db in django_settings.DATABASES.values())


@pytest.fixture(scope="class")
def triggers_lifted_for_the_class(django_db_setup, django_db_blocker):
    """The tests that commit (for threads of their own) stand in classes: the append-only
    triggers are lifted around the class, so the tables can be emptied after each test
    (``event_log_triggers_lifted``)."""
    with event_log_triggers_lifted(django_db_blocker):
        yield


@pytest.mark.skipif(not SQLITE, reason="SQLite's write lock and busy timeout")
@pytest.mark.usefixtures("triggers_lifted_for_the_class")
class TestALockedDatabase:
    @pytest.mark.django_db(databases="__all__", transaction=True, serialized_rollback=True)
    @pytest.mark.parametrize("store", ["events", "default", "snapshots"])
    def test_it_waits_out_a_database_locked_while_the_reply_is_recorded(
        self, fake_api, monkeypatch, store
    ):
        """A long write elsewhere (a Mirror run, a sweep, a draft) holds a store's lock for
        longer than the busy timeout just as the reply arrives: the turn still ends done, with
        one reply."""
        fake_api.push(FakeReply("<say>here</say><thought>she waited</thought>"))
        turn = submit()
        locked = threading.Event()

        def hold_the_lock():
            other = sqlite3.connect(connections[store].settings_dict["NAME"], isolation_level=None)
            try:
                other.execute("BEGIN IMMEDIATE")
                locked.set()
                time.sleep(LOCK_HELD)
                other.execute("COMMIT")
            finally:
                other.close()

        holder = threading.Thread(target=hold_the_lock)
        real_complete = claude.complete

        def complete_then_lock(**kwargs):
            reply = real_complete(**kwargs)
            holder.start()
            assert locked.wait(timeout=10)
            return reply

        monkeypatch.setattr(services.claude, "complete", complete_then_lock)
        with connections[store].cursor() as cursor:
            cursor.execute("PRAGMA busy_timeout = 100")
        try:
            run_turns_task(turn.pk)
        finally:
            holder.join()
            connections[store].close()  # the next connection has the configured timeout again
        turn.refresh_from_db()
        assert (turn.status, turn.error, turn.partial_text) == ("done", "", "here")
        assert Event.objects.count() == 2
        assert ContextSnapshot.objects.filter(turn=turn.pk).count() == 1
        assert WorkingMemory.objects.filter(type="thought").count() == 1


MESSAGES_AT_ONCE = 50


@pytest.mark.usefixtures("triggers_lifted_for_the_class")
class TestMessagesSentAtOnce:
    @pytest.mark.django_db(databases="__all__", transaction=True, serialized_rollback=True)
    def test_fifty_all_land_in_order_each_answered_once(self, settings):
        """Each message's time is taken under the log's write lock: none is refused for
        arriving second, and the log's order by id is its order by time."""
        settings.COMPANION_OFFLINE = True
        ready = threading.Barrier(MESSAGES_AT_ONCE)
        failures = []

        def send(number: int) -> None:
            try:
                ready.wait(timeout=30)
                submit(f"<luna>message {number}</luna>")
            except Exception as error:
                failures.append(f"message {number}: {error!r}")
            finally:
                connections.close_all()

        senders = [threading.Thread(target=send, args=(n,)) for n in range(MESSAGES_AT_ONCE)]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join(timeout=60)

        assert failures == []
        logged = list(Event.objects.order_by("pk").values_list("pk", "ts", "content"))
        assert sorted(content for _, _, content in logged) == sorted(
            f"<luna>message {n}</luna>" for n in range(MESSAGES_AT_ONCE)
        )
        assert [ts for _, ts, _ in logged] == sorted(ts for _, ts, _ in logged)
        answered = run_turns_task()
        turns = list(Turn.objects.order_by("queued_at", "pk").values_list("pk", "status"))
        assert answered == [pk for pk, _ in turns]  # each once, in the order they were sent
        assert {status for _, status in turns} == {"done"}
        assert Event.objects.count() == 2 * MESSAGES_AT_ONCE


def test_it_prunes_old_snapshots():
    ContextSnapshot.objects.create(
        turn=1, ts=timezone.now() - timedelta(days=40), assembled_system="", assembled_user=""
    )
    kept = ContextSnapshot.objects.create(turn=2, assembled_system="", assembled_user="")
    assert snapshots_prune(older_than=timezone.now() - timedelta(days=30)) == 1
    assert list(ContextSnapshot.objects.values_list("pk", flat=True)) == [kept.pk]


def test_it_calibrates_characters_per_token_from_reported_usage(fake_api):
    # A context of a few thousand characters, whatever an earlier test's flush left of the
    # wake text the migrations wrote: a hundred characters counted as 1,000 tokens would be out
    # of the calibration's range, and ignored.
    WakeText.objects.create(kind="wake", content="Waking up beside the lake. " * 150)
    fake_api.push(
        FakeReply("<say>one</say>", input_tokens=700, cache_read_input_tokens=300),
        FakeReply("<say>two</say>", input_tokens=None),
    )
    first = submit("<luna>hi</luna>")
    run_turns_task(first.pk)
    snapshot = ContextSnapshot.objects.get(turn=first.pk)
    characters = len(snapshot.assembled_system) + len(snapshot.assembled_user)
    expected = 4.0 + 0.2 * (characters / 1000 - 4.0)
    calibrated = state_get("chars_per_token")
    assert calibrated == pytest.approx(expected)

    second = submit("<luna>again</luna>")
    run_turns_task(second.pk)
    counts = ContextSnapshot.objects.get(turn=second.pk).token_counts
    wake = fake_api.requests[1]["system"][0]["text"]
    assert counts["wake"] == math.ceil(len(wake) / calibrated)


def test_it_does_not_calibrate_from_offline_turns(settings):
    settings.COMPANION_OFFLINE = True
    run_turns_task(submit("<luna>hi</luna>").pk)
    assert state_get("chars_per_token") is None


def statements_run(captured: list[CaptureQueriesContext]) -> list[str]:
    """The statements the code ran, without the savepoints a test's transaction makes of its
    transactions (outside a test they are BEGIN and COMMIT, which are not captured)."""
    bookkeeping = ("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO SAVEPOINT")
    return [
        query["sql"]
        for queries in captured
        for query in queries
        if not query["sql"].startswith(bookkeeping)
    ]


def postgresql() -> bool:
    return connections["events"].vendor == "postgresql"


def test_it_claims_the_oldest_queued_turn_marking_it_running():
    first, second = submit("<luna>one</luna>"), submit("<luna>two</luna>")
    Turn.objects.filter(pk=first.pk).update(error="an earlier attempt's reason", attempts=1)
    with CaptureQueriesContext(connections["events"]) as captured:
        claimed = turn_claim_next()
    # The claim and the read of the turn with its event (PostgreSQL: a lock first).
    assert len(statements_run([captured])) == (3 if postgresql() else 2)
    assert (claimed.pk, claimed.status, claimed.attempts, claimed.error) == (
        first.pk,
        "running",
        2,
        "",
    )
    assert claimed.started_at is not None and claimed.event.content == "<luna>one</luna>"
    assert Turn.objects.get(pk=second.pk).status == "queued"


def test_it_claims_nothing_when_nothing_is_queued():
    assert turn_claim_next() is None
    done = submit("<luna>one</luna>")
    Turn.objects.filter(pk=done.pk).update(status="done")
    assert turn_claim_next() is None


# Every store, the Gem copy warm; the claims' locks on PostgreSQL aside. Three of them find
# older conversation for the message when Recent has moved on (lens/found.py): its words'
# counts, their ranking and the turns around the hits; one reads how far the log's corrections
# go (kept for time travel): with none, nothing more of them is read.
TURN_STATEMENTS = 24


def test_it_takes_a_bounded_number_of_statements_per_turn(settings):
    settings.COMPANION_OFFLINE = True
    for n in range(3):  # warm the process's copy of the Gem and the recent-events pages
        run_turns_task(submit(f"<luna>warming up {n} [fairy]</luna>").pk)
    turn = submit("<luna>and now? [fairy]</luna>")
    with ExitStack() as stack:
        captured = [stack.enter_context(CaptureQueriesContext(connections[a])) for a in connections]
        assert run_turns_task(turn.pk) == [turn.pk]
    statements = statements_run(captured)
    locks = 2 if postgresql() else 0  # the turn's claim, and the claim that finds none left
    assert len(statements) <= TURN_STATEMENTS + locks, "\n".join(statements)


def test_a_full_working_memory_wears_faster_by_turns_under_the_decay_pressure(settings):
    settings.COMPANION_OFFLINE = True
    settings.BUDGET_WORKING_MEMORY = 60
    settings.DECAY_PRESSURE = 1.0
    now = timezone.now()
    for n in range(6):
        WorkingMemory.objects.create(
            type="thought", content=f"a long lingering thought number {n}", turn=0, created_at=now
        )
    run_turns_task(submit("<luna>hi</luna>").pk)
    assert state_get(WORKING_MEMORY_FILL) == 1.0  # the Lingering section could not hold them all
    rows = list(WorkingMemory.objects.filter(status="active"))
    pressed = working_memory_scores(rows, now=now, current_turn=8)
    calm = working_memory_scores(rows, now=now, current_turn=8, pressure=0.0)
    assert pressed == pytest.approx([0.25] * 6, rel=1e-3)  # eight turns: two turn half-lives
    assert calm == pytest.approx([0.5] * 6, rel=1e-3)


def test_with_the_decay_pressure_off_nothing_is_measured_or_pressed(settings):
    settings.COMPANION_OFFLINE = True
    settings.DECAY_PRESSURE = 0.0
    run_turns_task(submit("<luna>hi</luna>").pk)
    assert state_get(WORKING_MEMORY_FILL) is None


def test_a_turn_with_no_message_ends_failed_in_words_and_the_readers_of_turns_follow_it(
    admin_client,
):
    said = submit("<luna>hello</luna>")
    Turn.objects.filter(pk=said.pk).update(status="done")
    silent = Turn.objects.create(event=None, number=said.number)

    answered = run_turns_task(silent.pk)

    silent.refresh_from_db()
    assert silent.pk in answered and silent.status == "error"
    assert "no message of the person's to answer" in silent.error
    assert open_from() is None  # the Mirror waits on no message for it
    assert admin_client.get(reverse("heart-chat")).status_code == 200
    inspector = admin_client.get(reverse("admin:inspector", args=[silent.pk]))
    assert inspector.status_code == 200 and "This turn failed" in inspector.text
    assert "Message: (none: no message)" in inspection_text(turn_inspection(turn=silent))
