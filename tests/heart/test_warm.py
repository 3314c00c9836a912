"""Keeping the prompt cache warm in a pause: one bounded read of the last turn's cached context,
a few minutes after the last, at most a few times, never a turn."""

from datetime import UTC, datetime, timedelta

import pytest

from bench.fakeapi import FakeReply
from events.models import Turn
from heart.services import turn_claim_next, turn_run, turn_submit
from heart.warm import WARM_NOTE, cache_keep_warm

pytestmark = pytest.mark.django_db(databases="__all__")

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def warm(settings):
    settings.CACHE_KEEP_WARM = True
    settings.CACHE_KEEP_WARM_TIMES = 2


def turn(fake_api, text: str, at: datetime) -> Turn:
    fake_api.push(FakeReply("<say>I am listening.</say>"))
    turn_submit(text=text, actor="luna", at=at, enqueue=False)
    done = turn_run(turn=turn_claim_next())
    assert done.status == "done", done.error
    return done


def test_it_reads_the_last_turns_cached_context_in_a_pause_a_few_times(fake_api, warm):
    turn(fake_api, "<luna>hello there</luna>", START)
    story = "<luna>" + "a long story about the garden " * 40 + "</luna>"
    done = turn(fake_api, story, START + timedelta(minutes=1))
    replied = done.reply_event.ts
    sent = fake_api.requests[-1]
    assert not cache_keep_warm(now=replied + timedelta(minutes=3, seconds=50))  # not yet
    assert cache_keep_warm(now=replied + timedelta(minutes=4, seconds=30))
    asked = fake_api.requests[-1]
    assert asked["max_tokens"] == 1
    assert asked["system"] == sent["system"]
    held = [b for b in asked["messages"][0]["content"] if b["text"] != WARM_NOTE]
    assert asked["messages"][0]["content"][-1]["text"] == WARM_NOTE
    assert held == sent["messages"][0]["content"][: len(held)]
    assert "cache_control" in held[-1]
    assert fake_api.usages[-1]["cache_read_input_tokens"] > 0  # a read, which refreshes it
    assert Turn.objects.count() == 2  # never a turn

    warmed = replied + timedelta(minutes=4, seconds=30)
    assert not cache_keep_warm(now=warmed + timedelta(minutes=1))  # read a minute ago
    assert cache_keep_warm(now=warmed + timedelta(minutes=4))
    assert not cache_keep_warm(now=warmed + timedelta(minutes=8))  # twice is the limit
    assert len(fake_api.requests) == 4


def test_it_lets_the_cache_go_when_it_has_expired_or_a_turn_is_waiting(fake_api, warm, settings):
    done = turn(fake_api, "<luna>hello there</luna>", START)
    replied = done.reply_event.ts
    assert not cache_keep_warm(now=replied + timedelta(minutes=6))  # gone: nothing to keep
    turn_submit(
        text="<luna>and another</luna>",
        actor="luna",
        at=replied + timedelta(minutes=1),
        enqueue=False,
    )
    assert not cache_keep_warm(now=replied + timedelta(minutes=4, seconds=30))  # it reads it
    settings.CACHE_KEEP_WARM = False
    assert not cache_keep_warm(now=replied + timedelta(minutes=4, seconds=30))
    assert len(fake_api.requests) == 1


def test_it_sends_nothing_to_a_local_model_server(local_model, warm):
    done = turn(local_model, "<luna>hello there</luna>", START)

    assert not cache_keep_warm(now=done.reply_event.ts + timedelta(minutes=4, seconds=30))
    assert len(local_model.requests) == 1
