"""Rebuilding summaries from the raw events (``mirror.rebuild``)."""

import json

import pytest

from bench.fakeapi import FakeError, FakeReply
from events.models import Event
from heart.corrections import correction_make
from mirror.models import MirrorPrompt, MirrorRun, Summary, TagSuggestion
from mirror.rebuild import RebuildError, rebuild_apply, rebuild_plan, stale_rebuilt
from mirror.run import mirror_run
from mirror.services import SuggestionError, suggestion_promote
from mirror.tasks import run_mirror_task
from tests.mirror.conftest import answer, pass_of

pytestmark = pytest.mark.django_db(databases="__all__")


def rows():
    return (
        list(Summary.objects.order_by("pk").values()),
        list(TagSuggestion.objects.order_by("pk").values()),
        list(MirrorRun.objects.order_by("pk").values()),
    )


@pytest.fixture
def summarised(log, mirror_api, settings):
    settings.MIRROR_CHUNK_TURNS = 2
    log.turns(6)
    mirror_run(force=True)
    mirror_api._recorded.clear()
    return mirror_api


def test_it_shows_old_against_new_and_a_dry_run_changes_nothing(summarised):
    MirrorPrompt.objects.create(kind="summarise", content="Be brief.")
    summarised.responder = lambda body: (
        FakeReply("## Shape\nBrief.") if pass_of(body) == "summarise" else answer(body)
    )
    before = rows()
    plan = rebuild_plan()
    assert rows() == before
    assert [(r.old.level, r.route) for r in plan.replacements] == [
        ("L0", "two-pass"),
        ("L0", "two-pass"),
        ("L0", "two-pass"),
        ("L1", "merge"),
    ]
    assert [pass_of(r) for r in summarised.requests].count("merge") == 1
    assert summarised.requests[1]["system"][0]["text"] == "Be brief."  # the newest prompt
    first = plan.replacements[0]
    assert first.diff().startswith(f"--- old #{first.old.pk}\n+++ new")
    assert "\n-A calm stretch of 4 lines.\n-- the garden came up\n+Brief." in first.diff()
    assert plan.usage["summarise"]["calls"] == 3


def test_it_replaces_keeping_the_old_summaries_as_superseded(summarised):
    summarised.responder = None
    summarised.push(
        *[r for _ in range(3) for r in (FakeReply("clean"), FakeReply("## Shape\nRebuilt."))],
        FakeReply("## Shape\nRebuilt merge."),
    )
    old_ids = set(Summary.objects.values_list("pk", flat=True))
    run = rebuild_apply(plan=rebuild_plan())
    assert run.kind == "rebuild" and run.status == "done"
    assert Summary.objects.count() == 8
    for old in Summary.objects.filter(pk__in=old_ids):
        new = old.superseded_by
        assert (new.level, new.first_event_id, new.last_event_id) == (
            old.level,
            old.first_event_id,
            old.last_event_id,
        )
        assert new.content in {"Rebuilt.", "Rebuilt merge."}
        assert new.run == run


def test_it_rebuilds_only_the_range_asked_and_the_merges_above_it(summarised):
    first = Summary.objects.filter(level="L0").order_by("first_event_id").first()
    plan = rebuild_plan(first=first.first_event_id, last=first.last_event_id)
    assert [r.old.pk for r in plan.replacements] == [
        first.pk,
        Summary.objects.get(level="L1").pk,
    ]


def test_it_refuses_when_a_summary_was_replaced_meanwhile(summarised):
    plan = rebuild_plan()
    rebuild_apply(plan=rebuild_plan())
    count = Summary.objects.count()
    with pytest.raises(RebuildError, match="replaced while"):
        rebuild_apply(plan=plan)
    assert Summary.objects.count() == count
    assert MirrorRun.objects.order_by("-pk").first().status == "failed"


def test_a_summary_of_a_corrected_event_is_written_again_from_the_corrected_log(summarised):
    first = Summary.objects.filter(level="L0").order_by("first_event_id").first()
    merged = Summary.objects.get(level="L1")
    said = Event.objects.get(pk=first.first_event_id)
    correction_make(event_id=said.pk, kind="retraction", made_by="owner")

    run_mirror_task()

    again = Summary.objects.get(
        level="L0", first_event_id=first.first_event_id, superseded_by__isnull=True
    )
    first.refresh_from_db()
    merged.refresh_from_db()
    assert first.superseded_by_id == again.pk and merged.superseded_by_id is not None
    assert "A calm stretch of 3 lines" in again.content  # four before, one taken back
    sent = json.dumps(summarised.requests)
    assert "the garden again, number 0" not in sent and "number 1" in sent
    assert stale_rebuilt() == []  # nothing is stale any more


def test_a_failed_rebuild_of_a_stale_summary_changes_nothing_and_the_run_goes_on(
    summarised, caplog
):
    first = Summary.objects.filter(level="L0").order_by("first_event_id").first()
    correction_make(event_id=first.first_event_id, kind="retraction", made_by="owner")
    summarised.responder = lambda body: FakeError(400, "bad request")

    run_mirror_task()

    first.refresh_from_db()
    assert first.superseded_by_id is None
    assert "could not be written again" in caplog.text


def test_a_suggestion_of_a_summary_waiting_to_be_written_again_waits_then_is_withdrawn(
    summarised, admin_user
):
    first = Summary.objects.filter(level="L0").order_by("first_event_id").first()
    suggestion = TagSuggestion.objects.filter(summary=first, status="pending").first()
    correction_make(event_id=first.first_event_id, kind="retraction", made_by="owner")

    with pytest.raises(SuggestionError, match="waits until the Mirror writes"):
        suggestion_promote(suggestion_id=suggestion.pk, user_id=admin_user.pk)
    assert TagSuggestion.objects.get(pk=suggestion.pk).status == "pending"

    stale_rebuilt()

    assert TagSuggestion.objects.get(pk=suggestion.pk).status == "rejected"
    again = Summary.objects.get(
        level="L0", first_event_id=first.first_event_id, superseded_by__isnull=True
    )
    assert TagSuggestion.objects.filter(summary=again, status="pending").exists()
