"""The Compass's pages in the Anvil (``anvil/compass.py``): ask, watch, decide, retry."""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.contrib.admin.models import LogEntry
from django.urls import reverse
from django.utils import timezone

from compass.models import CompassPrompt, Consultation
from compass.services import consultation_run
from gem.models import WorkingMemory
from gem.services import time_zone_set, working_memory_create
from mirror.models import TagSuggestion

pytestmark = pytest.mark.django_db(databases="__all__")

ZONE = "Europe/Amsterdam"
AMSTERDAM = ZoneInfo(ZONE)
CONSULT = "admin:compass_consultation_changelist"


@pytest.fixture(autouse=True)
def offline_in_the_owners_zone(settings):
    settings.COMPANION_OFFLINE = True
    time_zone_set(name=ZONE)


def page_of(consultation) -> str:
    return reverse("admin:compass_consultation_change", args=[consultation.pk])


def messages_of(response) -> str:
    return " ".join(str(message) for message in response.context["messages"])


@pytest.fixture
def answered():
    """A consultation the offline Compass answered: three pending plans."""
    consultation = Consultation.objects.create(question="a training plan", asked_by="admin")
    return consultation_run(consultation_id=consultation.pk)


def test_it_sends_a_visitor_who_is_not_signed_in_to_sign_in(client, answered):
    for url in (reverse(CONSULT), page_of(answered)):
        response = client.get(url)
        assert response.status_code == 302 and "login" in response.url


def test_asking_writes_a_consultation_and_opens_its_page(admin_client):
    response = admin_client.post(
        reverse("admin:compass_consultation_add"),
        {"question": "help me prepare for the move"},
        follow=True,
    )
    consultation = Consultation.objects.get()
    assert response.redirect_chain == [(page_of(consultation), 302)]
    assert (consultation.status, consultation.asked_by) == ("done", "admin")
    page = response.text
    assert "(offline Compass)" in page
    for proposal in consultation.proposals.select_related("suggestion"):
        assert f'value="{as_shown(proposal.suggestion.due)}"' in page
    assert f"your time, {ZONE}, as in" in page
    assert "Promote selected" in page and "Reject selected" in page


def test_an_empty_question_is_refused_on_the_page(admin_client):
    response = admin_client.post(reverse("admin:compass_consultation_add"), {"question": "  "})
    assert response.status_code == 400
    assert "This field is required" in response.text
    assert not Consultation.objects.exists()
    assert admin_client.get(reverse("admin:compass_consultation_add")).status_code == 302


def test_the_list_holds_the_question_box_and_past_consultations(admin_client, answered):
    page = admin_client.get(reverse(CONSULT)).text
    assert "Ask the Compass" in page
    assert f'href="{page_of(answered)}"' in page and "3 proposed" in page
    assert "No question holds" in admin_client.get(reverse(CONSULT), {"q": "piano"}).text


def as_shown(moment) -> str:
    """A due as the page shows it in the owner's zone: "6 Dec 2026, 04:34"."""
    local = timezone.localtime(moment, AMSTERDAM)
    return f"{local.day} {local:%b %Y, %H:%M}"


def form_data(answered, **changes) -> dict:
    """What the page's form posts, as drawn, with ``changes`` (``p<id>-<field>``)."""
    data = {}
    for proposal in answered.proposals.select_related("suggestion"):
        suggestion = proposal.suggestion
        prefix = f"p{suggestion.pk}"
        data[f"{prefix}-content"] = suggestion.content
        data[f"{prefix}-due"] = as_shown(suggestion.due)
    return {**data, **changes}


def test_promoting_two_of_three_with_an_edit_writes_two_plans_linked_from_the_page(
    admin_client, answered
):
    first, second, third = (p.suggestion for p in answered.proposals.all())
    data = form_data(
        answered,
        **{
            f"p{first.pk}-chosen": "on",
            f"p{second.pk}-chosen": "on",
            f"p{second.pk}-content": "Keep going, gently",
            f"p{second.pk}-due": "2 May 2031, 18:30",
            f"p{second.pk}-hidden": "on",
            "_promote": "Promote selected",
        },
    )
    response = admin_client.post(
        reverse("admin:compass_consultation_decide", args=[answered.pk]), data, follow=True
    )

    items = list(WorkingMemory.objects.order_by("pk"))
    assert [(i.content, i.due, i.hidden, i.status) for i in items] == [
        (first.content, first.due, False, "active"),
        ("Keep going, gently", datetime(2031, 5, 2, 18, 30, tzinfo=AMSTERDAM), True, "active"),
    ]
    assert f"Promoted plan 1 into working memory (item {items[0].pk})" in messages_of(response)
    for item in items:
        url = reverse("admin:gem_workingmemory_change", args=[item.pk])
        assert f'<a href="{url}">working memory item {item.pk}</a>' in response.text
    third.refresh_from_db()
    assert third.status == "pending"
    assert [f"p{s.pk}-due" in response.text for s in (first, second, third)] == [
        False,
        False,
        True,
    ]


def test_a_ticked_proposal_with_a_bad_due_stops_the_promotion(admin_client, answered):
    first = answered.proposals.first().suggestion
    data = form_data(answered, **{f"p{first.pk}-chosen": "on", f"p{first.pk}-due": "soon"})
    response = admin_client.post(
        reverse("admin:compass_consultation_decide", args=[answered.pk]),
        {**data, "_promote": "Promote selected"},
    )
    assert response.status_code == 400
    assert "Enter a valid date/time" in response.text
    assert not WorkingMemory.objects.exists()


def test_a_due_in_the_past_is_refused_with_the_queues_reason(admin_client, answered):
    first = answered.proposals.first().suggestion
    past = (timezone.localtime(timezone.now(), AMSTERDAM) - timedelta(days=1)).strftime(
        "%Y-%m-%dT%H:%M"
    )
    data = form_data(answered, **{f"p{first.pk}-chosen": "on", f"p{first.pk}-due": past})
    response = admin_client.post(
        reverse("admin:compass_consultation_decide", args=[answered.pk]),
        {**data, "_promote": "Promote selected"},
        follow=True,
    )
    assert "Not acted on: Plan 1:" in messages_of(response)
    assert "has passed" in messages_of(response)
    assert not WorkingMemory.objects.exists()


def test_rejecting_and_deciding_on_nothing(admin_client, answered):
    decide = reverse("admin:compass_consultation_decide", args=[answered.pk])
    nothing = admin_client.post(decide, form_data(answered), follow=True)
    assert "Tick the proposals" in messages_of(nothing)

    third = answered.proposals.last().suggestion
    data = form_data(answered, **{f"p{third.pk}-chosen": "on", "_reject": "Reject selected"})
    response = admin_client.post(decide, data, follow=True)
    assert "Rejected plan 3." in messages_of(response)
    assert TagSuggestion.objects.get(pk=third.pk).status == "rejected"
    assert not WorkingMemory.objects.exists()
    assert admin_client.get(decide).status_code == 405


def test_a_failed_consultation_shows_its_error_and_a_retry_that_answers(admin_client):
    failed = Consultation.objects.create(
        question="a plan", status="failed", error="Claude is overloaded (529)", attempts=1
    )
    page = admin_client.get(page_of(failed)).text
    assert "Claude is overloaded (529)" in page
    assert reverse("admin:compass_consultation_retry", args=[failed.pk]) in page

    response = admin_client.post(
        reverse("admin:compass_consultation_retry", args=[failed.pk]), follow=True
    )
    failed.refresh_from_db()
    assert (failed.status, failed.attempts) == ("done", 2)
    assert "Asked again" in messages_of(response)
    again = admin_client.post(
        reverse("admin:compass_consultation_retry", args=[failed.pk]), follow=True
    )
    assert "only a failed one is retried" in messages_of(again)


def test_a_consultation_under_way_is_polled_and_its_answer_comes_as_a_partial(admin_client):
    waiting = Consultation.objects.create(question="a plan")
    answer = reverse("admin:compass_consultation_answer", args=[waiting.pk])
    page = admin_client.get(page_of(waiting)).text
    assert f'hx-get="{answer}" hx-trigger="every 2s"' in page
    assert "htmx-2.0.8.min.js" in page

    partial = admin_client.get(answer, headers={"HX-Request": "true"}).text
    assert partial.lstrip().startswith('<section id="compass-answer"')
    assert "Waiting for a worker" in partial

    consultation_run(consultation_id=waiting.pk)
    done = admin_client.get(answer, headers={"HX-Request": "true"}).text
    assert "hx-get" not in done and "Promote selected" in done
    assert admin_client.get(answer).status_code == 302


def test_the_prompts_are_versioned_texts_starting_from_the_shipped_ones(admin_client):
    assert set(CompassPrompt.objects.values_list("kind", flat=True)) == {"consult", "review"}
    page = admin_client.get(reverse("admin:compass_compassprompt_add"), {"kind": "review"}).text
    assert "weekly review" in page and "You are the Compass" in page


def test_a_plan_promoted_as_staged_counts_no_edit_though_its_due_has_seconds(
    admin_client, answered
):
    first = answered.proposals.first().suggestion
    TagSuggestion.objects.filter(pk=first.pk).update(due=first.due.replace(second=42))
    data = form_data(answered, **{f"p{first.pk}-chosen": "on", "_promote": "Promote selected"})
    admin_client.post(reverse("admin:compass_consultation_decide", args=[answered.pk]), data)

    item = WorkingMemory.objects.get()
    assert item.due.second == 42
    logged = LogEntry.objects.get(object_id=str(first.pk), content_type__model="tagsuggestion")
    assert logged.change_message == f"Promoted to working memory item {item.pk}"


def test_a_review_asked_for_on_the_page_opens_with_its_findings(admin_client):
    working_memory_create(
        type="plan",
        content="call the physio",
        actor="luna",
        at=timezone.now(),
        turn=1,
        due=timezone.now() - timedelta(days=1),
    )
    response = admin_client.post(reverse(CONSULT), {"_review": "Review now"}, follow=True)
    review = Consultation.objects.get()
    assert response.redirect_chain == [(page_of(review), 302)]
    assert "What the review found" in response.text
    assert "Reschedule: call the physio" in response.text

    Consultation.objects.create(kind="review")
    again = admin_client.post(reverse(CONSULT), {"_review": "Review now"}, follow=True)
    assert "A review is already under way" in messages_of(again)
