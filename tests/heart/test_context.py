"""The context of a turn: the same from the process's copy of the Gem as from a fresh read."""

from datetime import UTC, datetime, timedelta

import pytest

from gem.models import AmbientProse, WakeText, WorkingMemory
from gem.selectors import gem_copy, gem_current
from gem.services import working_memory_sweep
from heart.context import context_for_event
from heart.services import turn_claim_next, turn_run, turn_submit

pytestmark = pytest.mark.django_db(databases="__all__")

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def turn(text: str, at: datetime):
    """One whole turn with the offline companion, which keeps the process's copy warm."""
    submitted = turn_submit(text=text, actor="luna", at=at, enqueue=False)
    claimed = turn_claim_next()
    assert claimed is not None and claimed.pk == submitted.pk
    done = turn_run(turn=claimed)
    assert done.status == "done", done.error
    return done


def contexts_kept_and_fresh(done, at: datetime):
    """The context of the turn's event from the warm copy, then from a cleared one."""
    kept = context_for_event(event=done.event, now=at, current_turn=done.number, gem=gem_current())
    gem_copy.clear()
    fresh = context_for_event(event=done.event, now=at, current_turn=done.number, gem=gem_current())
    return kept, fresh


def assert_same(kept, fresh):
    assert kept.system_text == fresh.system_text
    assert kept.user_text == fresh.user_text
    assert kept.items_included == fresh.items_included
    assert kept.token_counts == fresh.token_counts


def test_it_builds_the_same_context_from_the_copy_after_every_kind_of_change():
    at = START
    turn("<luna><plan>call the pharmacy friday at 5pm</plan> hello</luna>", at)
    turn("<luna><pin>tea without sugar</pin> and the rain</luna>", at := at + timedelta(hours=1))
    gem_current()  # warm
    # Changes the copy must see: the sweep, edits outside the turn, new texts.
    WorkingMemory.objects.create(
        type="feeling", content="restless", turn=1, refreshed_at=at - timedelta(days=5)
    )
    working_memory_sweep(now=at, current_turn=2)
    WorkingMemory.objects.filter(type="pin").update(content="tea with honey")
    AmbientProse.objects.create(content="Luna's quiet [evenings].")
    WakeText.objects.create(kind="wake", content="Wake up gently.")
    done = turn("<luna>what do you remember?</luna>", at := at + timedelta(hours=2))
    kept, fresh = contexts_kept_and_fresh(done, at)
    assert_same(kept, fresh)
    assert "tea with honey" in kept.user_text and "restless" not in kept.user_text
    assert kept.system_text.startswith("Wake up gently.")
    assert "Luna's quiet [evenings]." in kept.system_text


def test_it_builds_the_same_context_turn_after_turn():
    at = START
    for n in range(6):
        at += timedelta(minutes=40)
        done = turn(f"<luna><pin>thing {n % 3}</pin> message {n}</luna>", at)
        kept, fresh = contexts_kept_and_fresh(done, at)
        assert_same(kept, fresh)
        assert f"thing {n % 3}" in kept.user_text
