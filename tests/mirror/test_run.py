"""Mirror runs through the real SDK against the fake Messages API (``mirror.run``)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from bench.fakeapi import FakeError, FakeReply
from events.models import Turn
from gem.models import Fragment, WorkingMemory
from gem.state import RECENT_WINDOW, state_set
from mirror import passes
from mirror import run as run_module
from mirror.models import MirrorRun, Summary, TagSuggestion
from mirror.run import mirror_run, pending_read
from tests.mirror.conftest import (
    CLEAN_MODEL,
    COMPRESS_MODEL,
    SUMMARISE_MODEL,
    pass_of,
    section,
)

pytestmark = pytest.mark.django_db(databases="__all__")

SIDES = {"luna": "user", "claude": "companion"}


def test_it_runs_two_passes_on_dialogue_with_the_fast_then_the_strong_model(log, mirror_api):
    log.turns(20)
    run = mirror_run(force=True)
    assert run.status == "done" and run.route == "two-pass"
    assert [(pass_of(r), r["model"]) for r in mirror_api.requests] == [
        ("clean", CLEAN_MODEL),
        ("summarise", SUMMARISE_MODEL),
    ]
    assert set(run.usage) == {"clean", "summarise", "chunks"}
    assert run.usage["clean"]["calls"] == run.usage["summarise"]["calls"] == 1
    assert run.usage["summarise"]["input_tokens"] > 0
    assert run.usage["chunks"] == {"two-pass": 1}
    # The Mirror reflects and stages: it writes no working memory and no fragment.
    assert not WorkingMemory.objects.exists() and not Fragment.objects.exists()


def test_it_runs_three_passes_on_action_with_the_middle_model_compressing(log, mirror_api):
    log.turns(20, do_heavy=True)
    run = mirror_run(force=True)
    assert run.route == "three-pass"
    assert [(pass_of(r), r["model"]) for r in mirror_api.requests] == [
        ("clean", CLEAN_MODEL),
        ("compress", COMPRESS_MODEL),
        ("summarise", SUMMARISE_MODEL),
    ]
    final = mirror_api.requests[-1]
    # The strong model reads the compressed chunk and the cleaned one (the role split).
    assert "slowly" not in section(final, "Chunk, compressed")
    assert "slowly" in section(final, "Chunk, cleaned")


def test_it_reads_five_earlier_turns_as_context_but_summarises_only_the_new_ones(
    log, mirror_api, settings
):
    settings.MIRROR_CHUNK_TURNS = 10
    turns = log.turns(10)
    mirror_run(force=True)
    turns += log.turns(10, start=10)
    mirror_api._recorded.clear()
    mirror_run(force=True)
    clean, summarise = mirror_api.requests
    context = section(clean, "Context (read only: earlier turns, do not summarise them)")
    chunk = section(clean, "Chunk")
    context_ids = [user.pk for user, _ in turns[5:10]]
    assert all(f"#{event_id} luna:" in context for event_id in context_ids)
    assert f"#{turns[4][0].pk} " not in context  # only five turns back
    assert all(f"#{event_id} " not in chunk for event_id in context_ids)
    assert f"#{turns[10][0].pk} luna:" in chunk
    assert "A calm stretch" in section(summarise, "Previous summary (read only, for continuity)")
    newest = Summary.objects.filter(level="L0").order_by("-last_event_id").first()
    assert (newest.first_event_id, newest.last_event_id) == (turns[10][0].pk, turns[19][1].pk)


def test_it_merges_three_chunks_into_an_l1_and_nine_into_an_l2(log, mirror_api, settings):
    settings.MIRROR_CHUNK_TURNS = 2
    log.turns(6)
    mirror_run(force=True)
    l0 = list(Summary.objects.filter(level="L0").order_by("first_event_id"))
    (l1,) = Summary.objects.filter(level="L1")
    assert len(l0) == 3
    assert (l1.first_event_id, l1.last_event_id) == (l0[0].first_event_id, l0[2].last_event_id)
    assert l1.content.startswith("A merged stretch of 3.")
    assert [pass_of(r) for r in mirror_api.requests].count("merge") == 1

    log.turns(12, start=6)
    mirror_run(force=True)
    assert Summary.objects.filter(level="L0").count() == 9
    l1s = list(Summary.objects.filter(level="L1").order_by("first_event_id"))
    (l2,) = Summary.objects.filter(level="L2")
    assert len(l1s) == 3
    assert (l2.first_event_id, l2.last_event_id) == (l1s[0].first_event_id, l1s[2].last_event_id)
    # Each merge reads the previous summary of its level; nothing is superseded by merging.
    merges = [r for r in mirror_api.requests if pass_of(r) == "merge"]
    assert len(merges) == 4
    previous = "Previous summary (read only, for continuity)"
    assert section(merges[1], previous) == l1s[0].content
    assert section(merges[2], previous) == l1s[1].content
    assert section(merges[3], previous) == ""  # the first L2 has none before it
    assert not Summary.objects.filter(superseded_by__isnull=False).exists()


def test_it_caps_suggestions_and_drops_what_memory_or_the_queue_already_holds(
    log, mirror_api, settings
):
    settings.MIRROR_CHUNK_TURNS = 5
    WorkingMemory.objects.create(type="pin", content="luna waters the garden each morning")
    log.turns(5)
    mirror_run(force=True)
    # pin is a near-duplicate of active memory; desc and thought remain; cap 2 keeps both.
    assert sorted(TagSuggestion.objects.values_list("type", "subject", "content")) == [
        ("desc", "garden", "roses along the fence"),
        ("thought", "", "the garden matters"),
    ]
    log.turns(5, start=5)
    mirror_run(force=True)
    assert TagSuggestion.objects.count() == 2  # the same ones again: pending already

    settings.MIRROR_SUGGESTION_CAP = 1
    WorkingMemory.objects.all().delete()
    TagSuggestion.objects.update(status="rejected")
    log.turns(5, start=10)
    mirror_run(force=True)
    newest = TagSuggestion.objects.filter(status="pending")
    assert list(newest.values_list("type", flat=True)) == ["pin"]  # pins first, one allowed


class WorkerKilled(BaseException):
    """The worker process dying mid-run: nothing in the run catches it."""


def test_it_resumes_a_run_whose_worker_died_between_passes(log, mirror_api, monkeypatch):
    log.turns(20, do_heavy=True)
    real_call = passes.pass_call
    calls = []

    def dies_after_compress(*, role, sections):
        calls.append(role)
        if role == "summarise":
            raise WorkerKilled
        return real_call(role=role, sections=sections)

    monkeypatch.setattr(passes, "pass_call", dies_after_compress)
    with pytest.raises(WorkerKilled):
        mirror_run(force=True)
    crashed = MirrorRun.objects.get()
    assert crashed.completed_at is None and crashed.status == "running"
    assert set(crashed.progress["outputs"]) == {"clean", "compress"}
    assert not Summary.objects.exists() and not TagSuggestion.objects.exists()
    # Another run now waits: the crashed one still looks alive.
    assert mirror_run(force=True) is None

    monkeypatch.setattr(passes, "pass_call", real_call)
    mirror_api._recorded.clear()
    later = timezone.now() + timedelta(hours=1)
    resumed = mirror_run(now=later)
    assert resumed.pk == crashed.pk and resumed.status == "done" and resumed.attempts == 2
    assert [pass_of(r) for r in mirror_api.requests] == ["summarise"]  # from the next pass
    assert resumed.usage["clean"]["calls"] == resumed.usage["summarise"]["calls"] == 1
    assert Summary.objects.count() == 1 and resumed.progress == {}
    assert TagSuggestion.objects.count() == 2


def test_it_rolls_back_a_run_that_keeps_dying_and_starts_its_chunk_afresh(
    log, mirror_api, settings
):
    log.turns(20)
    run = MirrorRun.objects.create(
        kind="scheduled",
        attempts=settings.Q_CLUSTER["max_attempts"],
        progress={"chunk": [1, 2], "outputs": {"clean": "stale"}},
        heartbeat_at=timezone.now() - timedelta(hours=2),
    )
    assert mirror_run(force=True) is not None
    run.refresh_from_db()
    assert run.status == "rolled_back" and run.completed_at and run.progress == {}
    assert "discarded" in run.error
    assert Summary.objects.filter(level="L0").count() == 1


def test_it_is_idempotent_over_the_same_range(log, mirror_api):
    log.turns(20)
    mirror_run(force=True)
    assert mirror_run(force=True) is None
    assert Summary.objects.count() == 1
    assert len(mirror_api.requests) == 2


def test_it_records_a_failed_run_and_applies_nothing(log, mirror_api):
    log.turns(20)
    mirror_api.push(FakeReply("cleaned"), FakeError(400, "bad request"))
    run = mirror_run(force=True)
    assert run.status == "failed" and run.completed_at
    assert "400" in run.error
    assert not Summary.objects.exists()
    assert mirror_run(force=True).status == "done"  # the next run does the chunk whole


def test_it_fires_by_the_trigger_and_holds_while_the_moment_is_intense(log, mirror_api):
    log.turns(19)
    assert mirror_run(now=log.clock) is None  # 19 turns, minutes old
    log.turns(1, start=19)
    assert mirror_run(now=log.clock).status == "done"  # the 20th fires it

    log.turns(12, do_heavy=True, start=20)
    held = pending_read(now=log.clock + timedelta(hours=5), sides=SIDES)
    assert held.hold_density > 0.8 and not held.fires
    assert mirror_run(now=log.clock + timedelta(hours=5)) is None


def test_it_fires_before_recent_passes_the_newest_summary(log, mirror_api):
    """Long messages keep Recent under a chunk of twenty turns: the Mirror fires on the window
    the Heart recorded, before its oldest turns pass the newest summary's end."""
    made = log.turns(20)
    assert mirror_run(now=log.clock).status == "done"  # events 1-40 summarised
    pending_turns = log.turns(6, start=20)
    # Recent holds the last twelve turns: six of them summarised, so no hole is near yet.
    state_set(RECENT_WINDOW, {"first_event": made[14][0].pk, "full": True})
    assert not pending_read(now=log.clock, sides=SIDES).fires
    # Three summarised turns left in Recent: the Mirror fires with six turns pending.
    state_set(RECENT_WINDOW, {"first_event": made[17][0].pk, "full": True})
    pending = pending_read(now=log.clock, sides=SIDES)
    assert pending.hole_near and len(pending.turns) == 6 and pending.fires
    run = mirror_run(now=log.clock)
    assert run.status == "done"
    # The six turns, fewer than a chunk, are summarised at once.
    newest = Summary.objects.filter(level="L0").order_by("-last_event_id").first()
    assert (newest.first_event_id, newest.last_event_id) == (
        pending_turns[0][0].pk,
        pending_turns[-1][1].pk,
    )
    # A window with room to spare is no reason to fire.
    log.turns(3, start=26)
    state_set(RECENT_WINDOW, {"first_event": made[19][0].pk, "full": False})
    assert mirror_run(now=log.clock) is None


def test_the_hold_for_an_intense_moment_holds_even_when_a_hole_is_near(log, mirror_api):
    log.turns(20)
    mirror_run(now=log.clock)
    log.turns(8, do_heavy=True, start=20)
    state_set(RECENT_WINDOW, {"first_event": None, "full": True})
    pending = pending_read(now=log.clock, sides=SIDES)
    assert pending.hole_near and not pending.fires
    assert mirror_run(now=log.clock) is None


def test_it_fires_after_four_hours_with_five_turns(log, mirror_api):
    log.turns(5)
    assert mirror_run(now=log.clock + timedelta(hours=3)) is None
    run = mirror_run(now=log.clock + timedelta(hours=4))
    assert run.status == "done"
    assert Summary.objects.get().last_event_id == run.last_event_id


def test_it_leaves_a_turn_still_being_answered_for_later(log, mirror_api):
    log.turns(20)
    user, _ = log.turn("one more", "<say>ok</say>")
    Turn.objects.create(event=user, number=21, status="running")
    mirror_run(force=True)
    assert Summary.objects.get().last_event_id < user.pk


def test_it_runs_offline_with_extractive_labelled_summaries(log, settings):
    settings.COMPANION_OFFLINE = True
    settings.MIRROR_CHUNK_TURNS = 5
    log.turn("I always water the roses at dawn", "<say>I will remember.</say>")
    log.turns(14, start=1)
    run = mirror_run(force=True)
    assert run.status == "done"
    assert {u["model"] for r, u in run.usage.items() if r != "chunks"} == {"offline"}
    assert Summary.objects.filter(level="L0").count() == 3
    assert Summary.objects.filter(level="L1").count() == 1
    assert all("(offline summary)" in s.content for s in Summary.objects.all())
    assert TagSuggestion.objects.get().content == "I always water the roses at dawn"


def test_it_finishes_a_merge_that_a_dead_worker_left_undone(log, mirror_api, monkeypatch, settings):
    settings.MIRROR_CHUNK_TURNS = 2
    log.turns(6)
    real_call = passes.pass_call

    def dies_on_merge(*, role, sections):
        if role == "merge":
            raise WorkerKilled
        return real_call(role=role, sections=sections)

    monkeypatch.setattr(passes, "pass_call", dies_on_merge)
    with pytest.raises(WorkerKilled):
        mirror_run(force=True)
    assert Summary.objects.filter(level="L0").count() == 3
    assert not Summary.objects.filter(level="L1").exists()

    monkeypatch.setattr(passes, "pass_call", real_call)
    run = mirror_run(now=timezone.now() + timedelta(hours=1))
    assert run.status == "done" and run.attempts == 2
    assert Summary.objects.filter(level="L1").count() == 1
    assert Summary.objects.filter(level="L0").count() == 3  # no chunk done twice


def test_it_leaves_the_rest_of_a_backlog_to_the_next_run_after_its_deadline(
    log, mirror_api, settings
):
    settings.MIRROR_CHUNK_TURNS = 5
    log.turns(15)
    first = mirror_run(force=True, deadline=timezone.now())
    assert first.status == "done" and not Summary.objects.exists()
    assert mirror_run(force=True).status == "done"
    assert Summary.objects.filter(level="L0").count() == 3


def test_a_check_reads_a_bounded_backlog_and_holds_by_the_logs_newest_turns(
    log, mirror_api, settings, monkeypatch
):
    """After a large import a check reads at most ``PENDING_CHUNKS_READ`` chunks' turns; the
    hold is still decided by the moment the conversation is in, the log's newest turns."""
    monkeypatch.setattr(run_module, "PENDING_CHUNKS_READ", 1)
    settings.MIRROR_CHUNK_TURNS = 5  # a read of 20 turns, FIRE_TURNS
    log.turns(10)
    log.turns(10, do_heavy=True, start=10)  # intense, but long ago
    log.turns(15, start=20)

    pending = pending_read(now=log.clock, sides=SIDES)

    assert len(pending.turns) == 20
    assert pending.hold_density < 0.8 and pending.fires
    first = mirror_run(now=log.clock)
    assert first.last_event_id == pending.turns[-1].last_event_id
    assert Summary.objects.filter(level="L0").count() == 4
    log.turns(10, do_heavy=True, start=35)  # intense now
    assert not pending_read(now=log.clock, sides=SIDES).fires
