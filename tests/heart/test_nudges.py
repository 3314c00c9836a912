"""Writing first: each reason fires once and only when on, the rules hold, and a nudge is a
turn without a message answered through the real SDK against the fake Messages API."""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse
from django.utils import timezone

from bench.fakeapi import FakeReply
from events.models import Event, Nudge, Turn
from gem.models import WorkingMemory
from gem.services import time_zone_set
from gem.state import turn_counter_current
from heart.models import ContextSnapshot, PushDelivery, PushSubscription
from heart.nudges import in_quiet_hours, nudge_held, nudge_reasons_set, nudges_decide
from heart.services import turn_submit
from heart.tasks import run_turns_task
from ledger.models import ModelCall
from mirror.models import TagSuggestion

pytestmark = pytest.mark.django_db(databases="__all__")

ZONE = "Europe/Berlin"


@pytest.fixture(autouse=True)
def owner_zone():
    time_zone_set(name=ZONE)


def at(hour: int, *, days: int = 1) -> datetime:
    """``hour`` o'clock in the owner's zone, ``days`` from today: a moment to decide at."""
    local = timezone.now().astimezone(ZoneInfo(ZONE)) + timedelta(days=days)
    return local.replace(hour=hour, minute=0, second=0, microsecond=0)


def said_long_ago(days: float = 5) -> Event:
    """The person's last message, ``days`` before now, and its turn answered."""
    turn = turn_submit(
        text="<luna>good night</luna>",
        actor="luna",
        enqueue=False,
        at=at(12) - timedelta(days=days, hours=1),  # the decisions at noon find whole days
    )
    Turn.objects.filter(pk=turn.pk).update(status="done")
    return Event.objects.get(pk=turn.event_id)


def plan_rising(now: datetime) -> WorkingMemory:
    """A plan made long ago, due a day after ``now``: in the rise of its curve then."""
    return WorkingMemory.objects.create(
        type="plan",
        content="the dentist on thursday",
        due=now + timedelta(hours=24),
        refreshed_at=now - timedelta(days=10),
        created_at=now - timedelta(days=10),
    )


def test_nothing_is_written_first_until_a_reason_is_turned_on():
    said_long_ago()
    assert nudges_decide(now=at(12)) is None
    assert Nudge.objects.count() == 0


def test_a_long_silence_fires_once_for_the_same_silence():
    said_long_ago(days=5)
    nudge_reasons_set({"silence"})
    nudge = nudges_decide(now=at(12))
    assert nudge.reason == "silence" and nudge.status == "sent"
    assert nudge.said == "luna has not written for 5 days."
    Turn.objects.filter(pk=nudge.turn_id).update(status="done")
    assert nudges_decide(now=at(12, days=3)) is None  # the same silence: never again
    assert Nudge.objects.count() == 1


def test_a_plan_coming_due_fires_unless_recent_mentions_it():
    said_long_ago()
    now = at(12)
    plan = plan_rising(now)
    nudge_reasons_set({"plan"})
    nudge = nudges_decide(now=now)
    assert nudge.reason == "plan"
    assert nudge.said.startswith("the plan “the dentist on thursday” is due ")
    plan.refresh_from_db()
    assert nudge.thing == f"plan {plan.pk} due {plan.due.isoformat()}"


def test_a_plan_recent_mentions_waits_for_nothing(settings):
    from gem.state import RECENT_WINDOW, state_set

    event = said_long_ago()
    state_set(RECENT_WINDOW, {"first_event": event.pk, "full": False})
    now = at(12)
    plan_rising(now)
    Event.objects.create(actor="luna", content="<luna>the dentist on thursday, ugh</luna>")
    nudge_reasons_set({"plan"})
    assert nudges_decide(now=now) is None


def test_the_compass_proposals_waiting_fire_once_per_batch():
    said_long_ago()
    for content in ("a walk by the lake", "call mara"):
        TagSuggestion.objects.create(proposer="compass", type="plan", content=content)
    TagSuggestion.objects.update(created_at=timezone.now() - timedelta(days=2))
    nudge_reasons_set({"proposals"})
    nudge = nudges_decide(now=at(12))
    assert nudge.said == (
        "the Compass proposed 2 plans that still wait for a decision: “a walk by the lake”, "
        "“call mara”."
    )


def test_quiet_hours_hold_a_nudge_which_is_sent_after_them_if_it_still_holds():
    said_long_ago()
    nudge_reasons_set({"silence"})
    assert nudges_decide(now=at(23)) is None
    waiting = Nudge.objects.get()
    assert (waiting.status, waiting.held) == ("waiting", "The quiet hours (22:00–09:00).")
    sent = nudges_decide(now=at(10, days=3))
    assert sent.pk == waiting.pk
    # Said as it holds when sent: the silence grew while it waited.
    assert (waiting.said, sent.said) == (
        "luna has not written for 5 days.",
        "luna has not written for 6 days.",
    )


def test_quiet_hours_run_past_midnight():
    quiet = (22 * 60, 9 * 60)
    times = {hour: datetime(2026, 12, 6, hour, 30) for hour in (21, 22, 23, 0, 8, 9)}
    assert [in_quiet_hours(times[h], quiet) for h in (21, 22, 23, 0, 8, 9)] == [
        False,
        True,
        True,
        True,
        True,
        False,
    ]
    assert not in_quiet_hours(times[23], (0, 0))


def test_at_most_the_days_cap_then_the_next_day(settings):
    said_long_ago()
    nudge_reasons_set({"silence", "proposals"})
    TagSuggestion.objects.create(proposer="compass", type="plan", content="call mara")
    TagSuggestion.objects.update(created_at=timezone.now() - timedelta(days=2))
    first = nudges_decide(now=at(12))
    Turn.objects.filter(pk=first.turn_id).update(status="done")
    settings.NUDGE_UNANSWERED_MAX = 5
    assert nudges_decide(now=at(15)) is None
    assert "At most 1 nudge a day" in Nudge.objects.get(status="waiting").held
    assert nudges_decide(now=at(12, days=2)) is not None


def test_never_while_a_reply_waits_nor_in_the_middle_of_a_conversation():
    said_long_ago()
    nudge_reasons_set({"silence"})
    queued = turn_submit(
        text="<luna>are you there</luna>",
        actor="luna",
        enqueue=False,
        at=timezone.now() - timedelta(days=4),
    )
    assert nudge_held(now=at(12)) == "A reply is on its way."
    Turn.objects.filter(pk=queued.pk).update(status="done")
    Event.objects.create(actor="luna", content="<luna>hm</luna>", ts=at(12) - timedelta(minutes=20))
    assert nudge_held(now=at(12)) == (
        "You wrote a moment ago: not in the middle of a conversation."
    )


def test_after_the_unanswered_limit_none_until_the_person_writes(settings):
    said_long_ago()
    settings.NUDGE_DAILY_MAX = 5
    nudge_reasons_set({"silence", "proposals"})
    TagSuggestion.objects.create(proposer="compass", type="plan", content="call mara")
    TagSuggestion.objects.update(created_at=timezone.now() - timedelta(days=2))
    for hour in (12, 13):
        sent = nudges_decide(now=at(hour))
        Turn.objects.filter(pk=sent.turn_id).update(status="done")
    TagSuggestion.objects.create(proposer="compass", type="plan", content="water plants")
    TagSuggestion.objects.update(created_at=timezone.now() - timedelta(days=2))
    assert nudges_decide(now=at(14)) is None
    assert Nudge.objects.get(status="waiting").held == (
        "2 nudges in a row went unanswered: none until you write."
    )
    Event.objects.create(actor="luna", content="<luna>sorry, busy week</luna>", ts=at(14))
    assert nudges_decide(now=at(16)).said.endswith("“call mara”, “water plants”.")


def test_a_reason_is_kept_once_for_its_thing_when_two_workers_find_it(monkeypatch):
    from heart import nudges

    found = nudges.Found("silence", "silence after event 1", "luna has not written.")
    nudges._found_record(found, now=at(12))
    monkeypatch.setattr(nudges.Nudge.objects, "filter", lambda **kw: Nudge.objects.none())
    nudges._found_record(found, now=at(12))  # the other worker: its insert meets the first
    monkeypatch.undo()
    assert Nudge.objects.filter(thing="silence after event 1").count() == 1


def test_a_nudge_not_started_when_the_person_writes_is_cancelled():
    said_long_ago()
    nudge_reasons_set({"silence"})
    nudge = nudges_decide(now=at(12))
    turn_submit(text="<luna>hello</luna>", actor="luna", enqueue=False)
    run_turns_task(nudge.turn_id)  # the worker takes her turn after the person wrote
    nudge.refresh_from_db()
    assert (nudge.status, nudge.held) == ("cancelled", "Not written: you wrote first.")
    assert Turn.objects.get(pk=nudge.turn_id).status == "error"


def test_turning_a_reason_off_cancels_what_waits_for_it():
    said_long_ago()
    nudge_reasons_set({"silence"})
    nudges_decide(now=at(23))
    nudge_reasons_set(set())
    assert Nudge.objects.get().status == "cancelled"
    with pytest.raises(ValueError, match="No such reason to write first: moon"):
        nudge_reasons_set({"moon"})


def test_a_nudge_is_a_turn_without_a_message_answered_through_the_sdk(fake_api, admin_client):
    said_long_ago()
    nudge_reasons_set({"silence"})
    counter = turn_counter_current()
    nudge = nudges_decide(now=at(12))
    fake_api.push(FakeReply("<say>I missed you. How have the days been?</say>"))
    run_turns_task(nudge.turn_id)

    turn = Turn.objects.get(pk=nudge.turn_id)
    assert (turn.status, turn.event_id) == ("done", None)
    reply = turn.reply_event
    assert reply.actor == "claude"
    assert reply.content == "<say>I missed you. How have the days been?</say>"
    assert turn_counter_current() == counter  # it counts the person's messages only
    sent = "".join(block["text"] for block in fake_api.requests[-1]["messages"][0]["content"])
    assert sent.rstrip().endswith(
        "## Writing first\nNo message has come since the last one above: you are writing "
        "first, because luna has not written for 5 days. Write to them as yourself, briefly; "
        "say why you write if it helps."
    )
    assert "## Message" not in sent and "good night" in sent  # Recent, as for any turn
    assert ModelCall.objects.get().component == "nudge"
    snapshot = ContextSnapshot.objects.get(turn=turn.pk)
    assert snapshot.items_included["writing_first"] == "luna has not written for 5 days."
    page = admin_client.get(reverse("admin:inspector", args=[turn.pk])).text
    assert "none: she wrote first, because luna has not written for 5 days." in page


def test_offline_she_writes_first_in_the_offline_companions_words(settings):
    settings.COMPANION_OFFLINE = True
    said_long_ago()
    nudge_reasons_set({"silence"})
    nudge = nudges_decide(now=at(12))
    run_turns_task(nudge.turn_id)
    reply = Turn.objects.get(pk=nudge.turn_id).reply_event
    assert reply.content == ("<say>I wanted to write first: luna has not written for 5 days.</say>")


def test_the_chat_says_she_wrote_first_and_why(admin_client, settings):
    settings.COMPANION_OFFLINE = True
    said_long_ago()
    nudge_reasons_set({"silence"})
    nudge = nudges_decide(now=at(12))
    run_turns_task(nudge.turn_id)
    page = admin_client.get(reverse("heart-chat")).text
    assert "She wrote first because luna has not written for 5 days." in page
    assert reverse("admin:inspector", args=[nudge.turn_id]) in page


def test_her_first_words_go_to_each_device_that_asked_once(settings):
    settings.COMPANION_OFFLINE = True
    PushSubscription.objects.create(endpoint="http://127.0.0.1:9/push/1", p256dh="k", auth="a")
    said_long_ago()
    nudge_reasons_set({"silence"})
    nudge = nudges_decide(now=at(12))
    run_turns_task(nudge.turn_id)
    delivery = PushDelivery.objects.get()
    assert delivery.ref == f"nudge:{nudge.pk}"
    assert delivery.payload["title"] == "claude"


def test_a_notification_that_cannot_be_queued_leaves_her_message_written(settings, monkeypatch):
    from heart import services

    settings.COMPANION_OFFLINE = True
    said_long_ago()
    nudge_reasons_set({"silence"})
    nudge = nudges_decide(now=at(12))

    def broken(**kwargs):
        raise RuntimeError("the queue is down")

    monkeypatch.setattr(services, "push_notify", broken)
    run_turns_task(nudge.turn_id)
    turn = Turn.objects.get(pk=nudge.turn_id)
    assert (turn.status, turn.error) == ("done", "")
    assert turn.reply_event.content.startswith("<say>I wanted to write first")


def test_turning_reasons_on_is_written_in_the_admin_log(admin_user):
    from django.contrib.admin.models import LogEntry

    nudge_reasons_set({"plan", "silence"}, user_id=admin_user.pk)
    assert LogEntry.objects.get().change_message == (
        "Reasons she may write first: a plan coming due, a long silence"
    )


def test_a_reply_she_wrote_first_offers_no_again(admin_client, settings):
    settings.COMPANION_OFFLINE = True
    said_long_ago()
    nudge_reasons_set({"silence"})
    nudge = nudges_decide(now=at(12))
    run_turns_task(nudge.turn_id)
    Turn.objects.exclude(pk=nudge.turn_id).delete()  # only her own turn is left
    page = admin_client.get(reverse("heart-chat")).text
    assert "/again/" not in page
