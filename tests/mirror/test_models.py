import pytest
from django.db import IntegrityError, transaction

from mirror.models import MirrorRun, Summary, TagSuggestion

pytestmark = pytest.mark.django_db(databases="__all__")


def refused(model_call):
    with pytest.raises(IntegrityError), transaction.atomic(using="summaries"):
        model_call()


def test_it_keeps_a_summary_with_its_exact_event_range():
    summary = Summary.objects.create(level="L0", first_event_id=3, last_event_id=40, content="x")
    assert summary._state.db == "summaries"
    assert (summary.first_event_id, summary.last_event_id) == (3, 40)


def test_it_refuses_a_range_that_runs_backwards_or_an_unknown_level():
    refused(lambda: Summary.objects.create(level="L0", first_event_id=9, last_event_id=3))
    refused(lambda: Summary.objects.create(level="L3", first_event_id=1, last_event_id=3))


def test_it_links_a_superseded_summary_to_its_replacement():
    old = Summary.objects.create(level="L0", first_event_id=1, last_event_id=5, content="old")
    new = Summary.objects.create(level="L0", first_event_id=1, last_event_id=5, content="new")
    Summary.objects.filter(pk=old.pk).update(superseded_by=new)
    assert list(new.supersedes.all()) == [old]


def test_it_refuses_suggestions_of_unknown_type_or_status():
    summary = Summary.objects.create(level="L0", first_event_id=1, last_event_id=5)
    refused(lambda: TagSuggestion.objects.create(summary=summary, type="mood", content="x"))
    refused(
        lambda: TagSuggestion.objects.create(
            summary=summary, type="pin", content="x", status="maybe"
        )
    )
    suggestion = TagSuggestion.objects.create(summary=summary, type="pin", content="tea, no sugar")
    assert suggestion.status == "pending"


def test_it_treats_a_run_without_completion_as_unfinished():
    run = MirrorRun.objects.create(kind="manual")
    assert "unfinished" in str(run)
    assert MirrorRun.objects.filter(completed_at__isnull=True).count() == 1
